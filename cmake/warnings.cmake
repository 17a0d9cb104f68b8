# Compiler flags shared by every nazar target.
# NAZAR_X86: the target is x86-64, where the AVX2/AVX-512/AMX kernels are compiled (behind the
# run-time dispatch of nazar/core/cpu_features.h). Elsewhere (aarch64: docs/arm64.md) the
# sources compile to their portable paths at the compiler's default -march.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(NAZAR_X86 ON)
else()
  set(NAZAR_X86 OFF)
endif()
if(NAZAR_NATIVE)
  set(NAZAR_ARCH_FLAGS -march=native)
elseif(NAZAR_X86)
  # x86-64-v3: AVX2 + FMA + F16C, runs on every machine from Haswell on.
  set(NAZAR_ARCH_FLAGS -march=x86-64-v3 -mtune=generic)
else()
  set(NAZAR_ARCH_FLAGS)
endif()
# -fno-math-errno and -fno-trapping-math let GCC vectorise the branch-free exp/tanh/sigmoid
# loops (nazar never enables FP traps; NaN/inf semantics are kept: this is not -ffast-math).
add_compile_options(${NAZAR_ARCH_FLAGS} -fno-math-errno -fno-trapping-math)

if(NAZAR_SANITIZE)
  add_compile_options(-fsanitize=${NAZAR_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${NAZAR_SANITIZE})
endif()

# -Werror: a warning fails the build (so that warnings never pile up): on by default when nazar is the top-level
# project, so `make`, `make check`, `make test` and CI (.ci/run) fail on a warning of gcc 12 or
# clang 14. Off by default in the sanitizer/fuzzer builds (NAZAR_SANITIZE set: scripts/run-*.sh):
# -O1 plus instrumentation changes what the compilers' flow-based warnings see, and a false
# positive there must not stop the sanitizer run; they still print every warning.
# -DNAZAR_WERROR=OFF for a newer compiler while its new warnings are being fixed.
if(PROJECT_IS_TOP_LEVEL AND NOT NAZAR_SANITIZE)
  set(_nazar_werror_default ON)
else()
  set(_nazar_werror_default OFF)
endif()
option(NAZAR_WERROR "Treat compiler warnings as errors" ${_nazar_werror_default})
# clang: -Wno-unknown-warning-option, since the sources silence gcc-only warnings with
# `#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"` (gcc 12's AVX-512 headers), which
# clang 14 reports as an unknown group (a -Werror failure in a clang Release build).
function(nazar_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra $<$<BOOL:${NAZAR_WERROR}>:-Werror>
                         $<$<CXX_COMPILER_ID:Clang>:-Wno-unknown-warning-option>)
endfunction()

# Linker: LLVM's lld where the compiler can use it (Debian package lld; scripts/install-deps.sh).
# It links the ~90 executables (tests, CLI, fuzz targets, benchmarks) in a quarter of ld.bfd's
# CPU time: an ASan+UBSan fuzz target 0.14 CPU s instead of 0.52, a Release test 0.04 instead
# of 0.12 (docs/reliability.md, CI). -DNAZAR_LLD=OFF keeps the system's default linker.
option(NAZAR_LLD "Link with lld when the compiler accepts -fuse-ld=lld" ON)
if(NAZAR_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=lld NAZAR_HAVE_LLD)
  if(NAZAR_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  endif()
endif()
