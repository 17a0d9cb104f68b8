# The GEMM library behind nazar::gemm's large products (nazar/core/gemm/backend_*.cpp are the only
# files that see it; docs/performance.md, "Kernel choice by CPU features"):
#   oneDNN (default)  dnnl_sgemm, which picks its kernels from the CPU's feature bits
#   OpenBLAS          kept for comparison; its core comes from a model table (Prescott kernels
#                     on CPUs newer than the table: reported once on stderr)
#   Naive             our own loops (also the tests' oracle)
set(NAZAR_BLAS "oneDNN" CACHE STRING "GEMM library: oneDNN, OpenBLAS or Naive")
set_property(CACHE NAZAR_BLAS PROPERTY STRINGS oneDNN OpenBLAS Naive)

# OpenBLAS: the OpenBLAS backend, and bench/backends (OpenBLAS vs oneDNN) in any build.
# Debian's multiarch directories of the target (x86_64-linux-gnu, or aarch64-linux-gnu in the
# cross build: cmake/toolchain-aarch64.cmake).
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(_nazar_multiarch ${CMAKE_LIBRARY_ARCHITECTURE})
else()
  set(_nazar_multiarch x86_64-linux-gnu)
endif()
find_path(OPENBLAS_INCLUDE_DIR cblas.h
          PATHS /usr/include/${_nazar_multiarch}/openblas-pthread /usr/include/openblas
          NO_DEFAULT_PATH)
find_library(OPENBLAS_LIBRARY NAMES openblas PATHS /usr/lib/${_nazar_multiarch}/openblas-pthread)
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
find_library(DNNL_LIBRARY dnnl)

add_library(nazar_blas INTERFACE)
if(NAZAR_BLAS STREQUAL "oneDNN")
  if(NOT DNNL_INCLUDE_DIR OR NOT DNNL_LIBRARY)
    message(FATAL_ERROR "oneDNN not found: run scripts/install-deps.sh (libdnnl-dev), "
                        "or configure with -DNAZAR_BLAS=OpenBLAS or Naive")
  endif()
  # Debian's oneDNN runs on OpenMP; nazar sets each calling thread's OpenMP team size itself.
  find_package(OpenMP REQUIRED COMPONENTS CXX)
  # libdnnl is not linked: nazar opens it on the first product that needs it
  # (nazar/core/gemm/onednn_api.h), by its SONAME, which the development symlink names
  # (libdnnl.so -> libdnnl.so.2 on Debian). Decoding on nazar's own int8/bf16 kernels never opens
  # it, and a process that does not start it saves its ~5 MB of resident relocations.
  file(READ_SYMLINK ${DNNL_LIBRARY} _nazar_dnnl_soname)
  if(NOT _nazar_dnnl_soname MATCHES "^libdnnl\\.so\\.[0-9]+$")
    set(_nazar_dnnl_soname libdnnl.so.2)
  endif()
  set(NAZAR_DNNL_SONAME ${_nazar_dnnl_soname} CACHE INTERNAL "oneDNN's SONAME")
  target_include_directories(nazar_blas INTERFACE ${DNNL_INCLUDE_DIR})
  # Only the OpenMP runtime is linked (omp_set_num_threads): no -fopenmp on nazar's sources.
  target_link_libraries(nazar_blas INTERFACE ${CMAKE_DL_LIBS} ${OpenMP_CXX_LIBRARIES})
  target_compile_definitions(nazar_blas INTERFACE NAZAR_BLAS_ONEDNN=1
                                                  NAZAR_DNNL_SONAME="${NAZAR_DNNL_SONAME}")
  if(NAZAR_SANITIZE MATCHES "address")
    # LeakSanitizer (LLVM 14) crashes in its thread tracer at exit ("Tracer caught signal 11") on
    # the dynamic TLS of a library opened at run time: instrumented builds link oneDNN and take
    # its functions' addresses instead (onednn_api.cpp).
    target_link_libraries(nazar_blas INTERFACE ${DNNL_LIBRARY})
    set_source_files_properties(${PROJECT_SOURCE_DIR}/nazar/core/gemm/onednn_api.cpp
                                PROPERTIES COMPILE_DEFINITIONS NAZAR_ONEDNN_LINKED=1)
  endif()
elseif(NAZAR_BLAS STREQUAL "OpenBLAS")
  if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
    message(FATAL_ERROR "OpenBLAS not found: run scripts/install-deps.sh (libopenblas-dev)")
  endif()
  target_include_directories(nazar_blas INTERFACE ${OPENBLAS_INCLUDE_DIR})
  target_link_libraries(nazar_blas INTERFACE ${OPENBLAS_LIBRARY})
  target_compile_definitions(nazar_blas INTERFACE NAZAR_BLAS_OPENBLAS=1)
elseif(NAZAR_BLAS STREQUAL "Naive")
  target_compile_definitions(nazar_blas INTERFACE NAZAR_BLAS_NAIVE=1)
else()
  message(FATAL_ERROR "NAZAR_BLAS must be oneDNN, OpenBLAS or Naive, got '${NAZAR_BLAS}'")
endif()
message(STATUS "nazar GEMM library: ${NAZAR_BLAS}")
