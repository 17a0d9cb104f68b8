# Sanitizers and fuzzing instrumentation (docs/reliability.md). Included right after
# warnings.cmake, before any target exists, so the flags reach every nazar target.
#
#   NAZAR_SANITIZE=address,undefined   (the option itself and its -fsanitize flags live in
#                                       warnings.cmake) ASan + UBSan, -fno-sanitize-recover=all:
#                                       the first finding aborts the test.
#   NAZAR_FUZZ=ON                      clang only: every target is also compiled with libFuzzer's
#                                       coverage instrumentation (-fsanitize=fuzzer-no-link) and
#                                       cmake/fuzz.cmake adds the fuzz/fuzz_*.cpp targets. Ordinary
#                                       executables still link (the sanitizer runtime provides the
#                                       coverage callbacks), so ONE build directory runs the ctest
#                                       suite under ASan/UBSan and the fuzzers: the library is
#                                       compiled once for both (scripts/run-sanitizers.sh).
option(NAZAR_FUZZ "Build the libFuzzer targets in fuzz/ (clang; use with NAZAR_SANITIZE)" OFF)

if(NAZAR_SANITIZE)
  # Symbolized stacks and debug info make a finding readable; keep frame pointers.
  add_compile_options(-g)
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
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
