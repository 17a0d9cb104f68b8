# libFuzzer targets (NAZAR_FUZZ=ON, cmake/sanitizers.cmake): every fuzz/fuzz_<name>.cpp becomes
# the executable fuzz_<name>, linked with the whole library; its seed corpus is
# fuzz/corpus/<name>/. Included at the end of the top-level CMakeLists.txt (the libraries exist).
#
# Where tests are built too, ctest replays every committed seed through its fuzzer once
# ("fuzz.<name>.seeds", label fuzz). The time-bounded runs are scripts/run-fuzzers.sh (`make test`
# calls it; it starts from the seeds as well: in build-fuzz, without tests, or with
# SANITIZE_CXX=clang++-14 in the sanitizer suite's build-asan, where these ctest entries run).
if(NAZAR_FUZZ)
  file(GLOB _fuzz_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/fuzz/fuzz_*.cpp)
  set(_fuzz_targets)
  foreach(src ${_fuzz_srcs})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src} ${PROJECT_SOURCE_DIR}/fuzz/common.cpp)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
    # nazar_train carries core, data, nn, attention, models, decode: what the readers need
    # (not the whole `nazar`, so later folders such as viz are not built for fuzzing).
    target_link_libraries(${name} PRIVATE nazar_train)
    if(name MATCHES "^fuzz_serve_")  # the server's request and HTTP parsers (nazar/serve/)
      target_link_libraries(${name} PRIVATE nazar_serve)
    endif()
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    nazar_set_warnings(${name})
    list(APPEND _fuzz_targets ${name})
    string(REGEX REPLACE "^fuzz_" "" short ${name})
    file(GLOB _seeds CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/fuzz/corpus/${short}/*)
    if(BUILD_TESTING OR NAZAR_BUILD_TESTS)
      add_test(NAME fuzz.${short}.seeds COMMAND ${name} ${_seeds})
      set_tests_properties(fuzz.${short}.seeds PROPERTIES LABELS fuzz TIMEOUT 300)
    endif()
  endforeach()
  add_custom_target(fuzzers DEPENDS ${_fuzz_targets})
endif()
