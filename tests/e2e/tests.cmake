# Extra end-to-end CTest entries (shell-driven), included by tests/CMakeLists.txt.
# Each area keeps its entries in its own marked block.

# ---- eval (nazar eval CLI; owner: eval) -------------------------------------------------------
add_test(NAME e2e.eval_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/eval_cli.sh $<TARGET_FILE:nazar_cli>)
set_tests_properties(e2e.eval_cli PROPERTIES LABELS e2e TIMEOUT 60)
# ---- end eval ---------------------------------------------------------------------------------

# ---- train (nazar train / score CLI; owner: trainer) ----------------------------------------
add_test(NAME e2e.cli_train
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_cli_train.sh $<TARGET_FILE:nazar_cli>)
set_tests_properties(e2e.cli_train PROPERTIES LABELS e2e TIMEOUT 300)
# ---- end train ------------------------------------------------------------------------------

# ---- guided (guided alignment in nazar train; owner: guided) ---------------------------------
add_test(NAME e2e.cli_guided
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_cli_guided.sh $<TARGET_FILE:nazar_cli>)
set_tests_properties(e2e.cli_guided PROPERTIES LABELS e2e TIMEOUT 120)
# ---- end guided -------------------------------------------------------------------------------

# ---- decode (install + example, PyTorch decoding parity; owner: decode) -----------------------
# Packaging is checked in the plain build only: libraries built with -fsanitize need the
# sanitizer runtime in every program that links them, which an outside project does not add.
if(NOT NAZAR_SANITIZE)
  add_test(NAME e2e.install_example
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/install_example.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR}
                   ${CMAKE_COMMAND} ${CMAKE_CXX_COMPILER})
  set_tests_properties(e2e.install_example PROPERTIES LABELS e2e TIMEOUT 300)
endif()
add_test(NAME e2e.decode_parity_torch
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/e2e/decode_parity_torch.py --nazar $<TARGET_FILE:nazar_cli>
                 --work ${PROJECT_BINARY_DIR}/decode-parity)
set_tests_properties(e2e.decode_parity_torch PROPERTIES SKIP_RETURN_CODE 77 LABELS "e2e;parity" TIMEOUT 300)
# ---- end decode -------------------------------------------------------------------------------

# ---- viz/demo (nazar demo / attention, HTML report in headless Chromium; owner: viz) ----------
add_test(NAME e2e.attention_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_html_report.sh $<TARGET_FILE:nazar_cli> cli)
set_tests_properties(e2e.attention_cli PROPERTIES LABELS e2e TIMEOUT 300)
add_test(NAME e2e.html_report_chromium
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_html_report.sh $<TARGET_FILE:nazar_cli> chromium)
set_tests_properties(e2e.html_report_chromium PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77
                     ENVIRONMENT NAZAR_SCREENSHOT_DIR=${PROJECT_BINARY_DIR})
# ---- end viz/demo -----------------------------------------------------------------------------

# ---- harden-cli (audit items 2, 3, 6, 7, 8's line cap, 13, 14) -----------------------------
add_test(NAME e2e.cli_harden
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_cli_harden.sh $<TARGET_FILE:nazar_cli>)
set_tests_properties(e2e.cli_harden PROPERTIES LABELS e2e TIMEOUT 600)
# ---- end harden-cli ---------------------------------------------------------------------------
# ---- hostile input through the CLI (audit items 1, 8, 10, 15, 17; owner: harden-io) --------
add_test(NAME e2e.cli_errors
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_cli_errors.sh $<TARGET_FILE:nazar_cli>)
set_tests_properties(e2e.cli_errors PROPERTIES LABELS e2e TIMEOUT 120)
# ---- end hostile input ------------------------------------------------------------------------

# ---- bench-compare's PyTorch side (bench/compare/torch_bench.py) -----------------------------
# Plain build only: it checks the Python benchmark against nazar's first-step loss, not nazar's
# memory safety, and the instrumented CLI would only make it slower.
if(NOT NAZAR_SANITIZE)
  add_test(NAME e2e.bench_compare_torch
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_bench_compare_torch.sh $<TARGET_FILE:nazar_cli>)
  set_tests_properties(e2e.bench_compare_torch PROPERTIES LABELS e2e TIMEOUT 180 SKIP_RETURN_CODE 77)
endif()

# ---- package (the Debian package, cmake/package.cmake; owner: packaging) --------------------
# cpack into a temporary directory, dpkg-deb -x into a temporary root, the program and the
# Python module run from there. Plain build only (an instrumented program is no package).
if(NOT NAZAR_SANITIZE AND NOT NAZAR_FUZZ AND NAZAR_DOCS)
  add_test(NAME e2e.package
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_package.sh $<TARGET_FILE:nazar_cli>
                   ${PROJECT_BINARY_DIR} ${CMAKE_CPACK_COMMAND})
  set_tests_properties(e2e.package PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
# ---- end package ------------------------------------------------------------------------------
