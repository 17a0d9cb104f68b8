# PyTorch parity, live (docs/design.md §8.4): CTest regenerates the fixtures from
# python/nazar_torch.py into ${PROJECT_BINARY_DIR}/parity-fixtures before the C++ parity tests
# run; they prefer those files and fall back to the committed tests/parity/fixtures when the
# regeneration was skipped (no python3-torch: exit code 77 = skipped, and the directory is
# emptied so no stale fixture is used). A second entry checks that the committed fixtures are
# what the script makes (they are the script's output, not hand-written).
# Debian's torch lives in /usr/bin/python3, not in whatever python3 comes first on PATH.
set(NAZAR_PARITY_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with torch and numpy for the parity fixtures")
set(_parity_out ${PROJECT_BINARY_DIR}/parity-fixtures)

# A cross build (docs/arm64.md) runs the generators (the host's Python writes the same files on
# any machine), not the entries that run the nazar program from Python: the kernel would need
# binfmt_misc to hand an arm64 binary to qemu, which ctest's emulator setting does not reach.
if(EXISTS ${NAZAR_PARITY_PYTHON})
  set(_parity_live ON)
else()
  set(_parity_live OFF)
  message(STATUS "parity: ${NAZAR_PARITY_PYTHON} not found; parity tests use the committed fixtures")
endif()

if(_parity_live)
  add_test(NAME parity.make_fixtures
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/gen/make_fixtures.py --out ${_parity_out})
  set_tests_properties(parity.make_fixtures PROPERTIES
    FIXTURES_SETUP nazar_parity_fixtures SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 300)

  add_test(NAME parity.fixtures_match_committed
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/gen/make_fixtures.py
                   --compare ${_parity_out} ${PROJECT_SOURCE_DIR}/tests/parity/fixtures)
  set_tests_properties(parity.fixtures_match_committed PROPERTIES
    FIXTURES_REQUIRED nazar_parity_fixtures SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 120)

  # Whole models (tests/parity/gen/make_model_fixtures.py): nazar model files written by PyTorch and the
  # float64 scores, losses, gradients and greedy outputs they give; same fixture name, so the
  # C++ parity tests wait for both generators.
  add_test(NAME parity.make_model_fixtures
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/gen/make_model_fixtures.py --out ${_parity_out})
  set_tests_properties(parity.make_model_fixtures PROPERTIES
    FIXTURES_SETUP nazar_parity_fixtures SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 300)
  add_test(NAME parity.model_fixtures_match_committed
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/gen/make_model_fixtures.py
                   --compare ${_parity_out} ${PROJECT_SOURCE_DIR}/tests/parity/fixtures)
  set_tests_properties(parity.model_fixtures_match_committed PROPERTIES
    FIXTURES_REQUIRED nazar_parity_fixtures SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 120)

  # Copy attention (tests/parity/gen/make_copy_fixtures.py, tests/parity/test_parity_copy.cpp): written
  # into the same directory, not committed (the C++ test skips without them).
  add_test(NAME parity.make_copy_fixtures
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/gen/make_copy_fixtures.py --out ${_parity_out})
  set_tests_properties(parity.make_copy_fixtures PROPERTIES
    FIXTURES_SETUP nazar_parity_fixtures SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 300)

  # Guided alignment (tests/parity/gen/make_guided_fixtures.py, tests/parity/test_parity_guided.cpp): written
  # into the same directory, not committed (the C++ test skips without them).
  add_test(NAME parity.make_guided_fixtures
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/gen/make_guided_fixtures.py --out ${_parity_out})
  set_tests_properties(parity.make_guided_fixtures PROPERTIES
    FIXTURES_SETUP nazar_parity_fixtures SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 300)

  # Model files through the CLI: a model initialised and saved by nazar, scored by `nazar score`
  # and by PyTorch; the PyTorch-written fixture models scored by `nazar score`, re-saved by nazar
  # and loaded back in PyTorch (tests/parity/check_model_files.py).
  if(NOT CMAKE_CROSSCOMPILING)  # both run the nazar program: not in a cross build (above)
    add_test(NAME parity.model_files_cli
             COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/check_model_files.py
                     --nazar $<TARGET_FILE:nazar_cli> --exporter $<TARGET_FILE:nazar_parity_tests>
                     --work ${PROJECT_BINARY_DIR}/parity-model-files)
    set_tests_properties(parity.model_files_cli PROPERTIES
      FIXTURES_REQUIRED nazar_parity_fixtures SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 300)

    # Quantized model files (nazar quantize): loaded by nazar_torch.py by dequantizing, the same
    # scores as nazar's fp32 products on the same file, close to its int8 / bf16 ones.
    add_test(NAME parity.quantized_files
             COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/check_quantized_files.py
                     --nazar $<TARGET_FILE:nazar_cli> --work ${PROJECT_BINARY_DIR}/parity-quantized-files)
    set_tests_properties(parity.quantized_files PROPERTIES SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 300)
  endif()

  # Optimizer fixtures (tests/parity/gen/make_optim_fixtures.py, owner: optim): the committed files are what
  # the script makes. test_parity_optim reads the committed files, so this entry only regenerates
  # into its own directory and compares.
  add_test(NAME parity.optim_fixtures_match_committed
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/regenerate_and_compare.py
                   --script ${CMAKE_CURRENT_SOURCE_DIR}/parity/gen/make_optim_fixtures.py --glob optim_*.safetensors
                   --committed ${PROJECT_SOURCE_DIR}/tests/parity/fixtures
                   --work ${PROJECT_BINARY_DIR}/parity-optim-fixtures)
  set_tests_properties(parity.optim_fixtures_match_committed PROPERTIES
    SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 120)

  # The reference itself: padding invisible, local windows as local.h says, safetensors I/O.
  add_test(NAME parity.nazar_torch_selftest
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/test_nazar_torch.py)
  set_tests_properties(parity.nazar_torch_selftest PROPERTIES SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 120)
  add_test(NAME parity.nazar_torch_layers
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/test_nazar_torch_layers.py)
  set_tests_properties(parity.nazar_torch_layers PROPERTIES SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 120)
  add_test(NAME parity.nazar_torch_transition
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/test_nazar_torch_transition.py)
  set_tests_properties(parity.nazar_torch_transition PROPERTIES SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 120)
  add_test(NAME parity.nazar_torch_mocha
           COMMAND ${NAZAR_PARITY_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/parity/test_nazar_torch_mocha.py)
  set_tests_properties(parity.nazar_torch_mocha PROPERTIES SKIP_RETURN_CODE 77 LABELS parity TIMEOUT 120)
endif()

# The gtest parity program's tests (nazar_parity_tests: tests/parity/test_*.cpp) are discovered
# at ctest time, so they cannot be given properties here. This script runs after the discovery
# scripts (it is appended to TEST_INCLUDE_FILES later) and makes every discovered parity test
# require the regenerated fixtures: ctest then always runs parity.make_fixtures first, also under
# -R / -j.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/parity_fixture_deps.cmake [=[
foreach(_nazar_t IN LISTS nazar_parity_tests_TESTS)
  set_tests_properties("${_nazar_t}" PROPERTIES FIXTURES_REQUIRED nazar_parity_fixtures)
endforeach()
]=])
if(_parity_live)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_CURRENT_BINARY_DIR}/parity_fixture_deps.cmake)
endif()
