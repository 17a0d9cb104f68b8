# The bounded subset of a cross build's tests (docs/arm64.md, `make test-arm64-ci`): what keeps
# the portable kernels and the layers on them honest on another processor, in one program that
# needs only the libraries core, data (the parity fixtures' batches), nn and attention, so that
# CI builds and runs it under qemu in a few minutes. Not built by default (EXCLUDE_FROM_ALL); its
# tests carry the label cross-subset only (the full programs' tests keep unit, grad and parity).
# gtest_discover_tests is not used here: see the entries at the end.
set(_nazar_cross_subset_files
  unit/test_core.cpp             # elementwise kernels, softmax, GEMM against the naive loops
  unit/test_kernels_logits.cpp   # fused logits kernels (logsumexp, argmax)
  unit/test_gemm_packed.cpp      # packed weights: the portable path of the packed GEMM
  unit/test_nn_linear.cpp
  unit/test_nn_gru_cell.cpp
  unit/test_nn_lstm_cell.cpp
  unit/test_attention_oracle.cpp  # every attention against its float64 oracle
  grad/test_grad_linear.cpp
  grad/test_grad_gru.cpp
  grad/test_grad_lstm.cpp
  grad/test_grad_softmax_xent.cpp
  grad/test_grad_attention.cpp
  parity/test_parity_nn.cpp      # against the committed PyTorch fixtures
  parity/test_parity_attention.cpp)
list(TRANSFORM _nazar_cross_subset_files PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
add_executable(nazar_cross_subset_tests EXCLUDE_FROM_ALL ${_nazar_cross_subset_files})
target_include_directories(nazar_cross_subset_tests PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(nazar_cross_subset_tests PRIVATE nazar_attention nazar_data GTest::gtest
                      GTest::gmock GTest::gtest_main)
target_compile_definitions(nazar_cross_subset_tests PRIVATE
  NAZAR_SOURCE_DIR="${PROJECT_SOURCE_DIR}" NAZAR_BINARY_DIR="${PROJECT_BINARY_DIR}"
  NAZAR_TARGET_RUNNER="${NAZAR_TARGET_RUNNER}")
target_compile_options(nazar_cross_subset_tests PRIVATE ${NAZAR_TEST_GCC12_OPTIONS})
nazar_set_warnings(nazar_cross_subset_tests)
nazar_unity(nazar_cross_subset_tests ${NAZAR_TEST_UNITY_BATCH})
# Two ctest entries, each running half of the program's tests (gtest's sharding) in one process:
# under qemu a process start costs ~0.3 CPU s and every new process translates the same code
# again, so one entry per test (as gtest_discover_tests makes) would cost more than the tests.
# ctest runs each under CMAKE_CROSSCOMPILING_EMULATOR.
# Left out: GemmPacked.ThreadCountInvariant (a 320x512x256 product in emulated bf16 and int8,
# twice: minutes under qemu; Int8Portable and Bf16Portable cover the same portable path).
set(_nazar_cross_subset_filter "-GemmPacked.ThreadCountInvariant")
foreach(shard 0 1)
  add_test(NAME cross-subset.shard${shard}
           COMMAND nazar_cross_subset_tests --gtest_brief=1
                   --gtest_filter=${_nazar_cross_subset_filter})
  set_tests_properties(cross-subset.shard${shard} PROPERTIES LABELS cross-subset TIMEOUT 600
    ENVIRONMENT "GTEST_TOTAL_SHARDS=2;GTEST_SHARD_INDEX=${shard}")
endforeach()
