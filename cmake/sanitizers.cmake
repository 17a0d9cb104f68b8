# Sanitizers and fuzzing instrumentation (docs/reliability.md). Included right after
# warnings.cmake, before any target exists, so the flags reach every nazar target.
#
#   NAZAR_SANITIZE=address,undefined   (the option itself and its -fsanitize flags live in
#                                       warnings.cmake) ASan + UBSan, -fno-sanitize-recover=all:
#                                       the first finding aborts the test.
#   NAZAR_FUZZ=ON                      clang only: the libraries the fuzz targets link (the
#                                       nazar/<folder> libraries and nazar_serve:
#                                       nazar_fuzz_coverage()) are also compiled with libFuzzer's
#                                       coverage instrumentation (-fsanitize=fuzzer-no-link) and
#                                       cmake/fuzz.cmake adds the fuzz/fuzz_*.cpp targets. The
#                                       CLI, apps/ and the tests are not: nothing fuzzes them, and
#                                       it cost 19% of a test file's compile (docs/reliability.md,
#                                       CI). Ordinary executables still link the instrumented
#                                       libraries (the sanitizer runtime provides the coverage
#                                       callbacks), so tests and fuzz targets can share one build
#                                       directory. scripts/configure-instrumented.sh:
#                                       by default make test builds the ASan/UBSan ctest suite and
#                                       the fuzzers in one clang directory (build-asan);
#                                       SANITIZE_CXX=g++ builds the suite with gcc (build-asan) and
#                                       the fuzzers with clang (build-fuzz).
option(NAZAR_FUZZ "Build the libFuzzer targets in fuzz/ (clang; use with NAZAR_SANITIZE)" OFF)

if(NAZAR_SANITIZE)
  # Debug info makes a finding readable. gcc's -fsanitize=undefined leaves out float-to-int
  # overflow (clang's includes it): ask for it, since it is how a hostile number in a config
  # becomes undefined behaviour.
  # Line tables only (clang -gline-tables-only, gcc -g1): a finding's stack still names every
  # frame's function and file:line (inlined frames included); the objects are a third smaller
  # than with -g, so the ~80 instrumented executables link with less I/O. No types or
  # variables: configure with -DNAZAR_SANITIZE_DEBUG=-g to debug a finding in gdb.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(_nazar_san_debug -gline-tables-only)
  else()
    set(_nazar_san_debug -g1)
  endif()
  set(NAZAR_SANITIZE_DEBUG ${_nazar_san_debug} CACHE STRING
      "Debug-info flag of sanitizer builds (default: line tables only)")
  add_compile_options(${NAZAR_SANITIZE_DEBUG})
  # The drivers (the test programs and the CLI: tests/CMakeLists.txt, CMakeLists.txt) compile at
  # -O0, the libraries, apps/ and the fuzz targets at the build type's level (-O1 in
  # scripts/configure-instrumented.sh): the drivers' code mostly calls into the libraries, where
  # the suite's time goes, and -O0 halves their compile (test_models_seq2seq.cpp 3.4 instead of
  # 6.1 CPU s; docs/reliability.md, CI). The sanitizers check -O0 code at least as closely, and
  # clang contracts a*b+c into an FMA at -O0 as at -O1, so the tests see the same float results.
  set(NAZAR_SANITIZE_DRIVER_OPT -O0 CACHE STRING
      "Optimization flag of the test programs and the CLI in sanitizer builds (empty: the build type's)")
  if(NAZAR_SANITIZE MATCHES "undefined")
    add_compile_options(-fsanitize=float-cast-overflow)
    add_link_options(-fsanitize=float-cast-overflow)
  endif()
endif()

if(NAZAR_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NAZAR_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++, "
                        "got ${CMAKE_CXX_COMPILER_ID}")
  endif()
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
  set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=fuzzer)
  check_cxx_source_compiles([=[
    #include <cstddef>
    #include <cstdint>
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
  ]=] NAZAR_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT NAZAR_HAVE_LIBFUZZER)
    message(FATAL_ERROR "-fsanitize=fuzzer does not link: install libclang-rt-14-dev "
                        "(scripts/install-deps.sh test)")
  endif()
endif()

# libFuzzer's coverage instrumentation on a library that fuzz targets link (NAZAR_FUZZ=ON only).
function(nazar_fuzz_coverage target)
  if(NAZAR_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
