# The GEMM backend behind nazar::gemm (nazar/core/gemm/backend_*.cpp are the only files that see it).
#   OpenBLAS (default) | Naive (our own loops; also the tests' oracle)
set(NAZAR_BLAS "OpenBLAS" CACHE STRING "GEMM backend: OpenBLAS or Naive")
set_property(CACHE NAZAR_BLAS PROPERTY STRINGS OpenBLAS Naive)

add_library(nazar_blas INTERFACE)
if(NAZAR_BLAS STREQUAL "OpenBLAS")
  find_path(OPENBLAS_INCLUDE_DIR cblas.h
            PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas
            NO_DEFAULT_PATH)
  find_library(OPENBLAS_LIBRARY NAMES openblas
               PATHS /usr/lib/x86_64-linux-gnu/openblas-pthread)
  if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
    message(FATAL_ERROR "OpenBLAS not found: run scripts/install-deps.sh (libopenblas-dev)")
  endif()
  target_include_directories(nazar_blas INTERFACE ${OPENBLAS_INCLUDE_DIR})
  target_link_libraries(nazar_blas INTERFACE ${OPENBLAS_LIBRARY})
  target_compile_definitions(nazar_blas INTERFACE NAZAR_BLAS_OPENBLAS=1)
elseif(NAZAR_BLAS STREQUAL "Naive")
  target_compile_definitions(nazar_blas INTERFACE NAZAR_BLAS_NAIVE=1)
else()
  message(FATAL_ERROR "NAZAR_BLAS must be OpenBLAS or Naive, got '${NAZAR_BLAS}'")
endif()
message(STATUS "nazar GEMM backend: ${NAZAR_BLAS}")
