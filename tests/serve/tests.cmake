# `nazar serve` (docs/serve.md; owner: serve): the API test against servers the test starts on
# free loopback ports, and the explorer in headless Chromium (skipped, exit 77, without
# chromium, chromedriver or python3-selenium). Label serve; the sanitizer suite runs them too.
add_test(NAME serve.api
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/serve/test_api.py $<TARGET_FILE:nazar_cli>)
set_tests_properties(serve.api PROPERTIES LABELS serve TIMEOUT 600)
add_test(NAME serve.browser
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/serve/test_browser.py $<TARGET_FILE:nazar_cli>
                 ${PROJECT_BINARY_DIR}/serve-screenshots)
set_tests_properties(serve.browser PROPERTIES LABELS serve TIMEOUT 600 SKIP_RETURN_CODE 77)
# Hostile clients (docs/serve.md "Limits", "Connections"): limits, timeouts that stop decoding,
# slow sockets, the connection cap, Host/Origin/API-key checks, HTTP framing errors, the SIGTERM drain.
add_test(NAME serve.hostile
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/serve/test_hostile.py $<TARGET_FILE:nazar_cli>)
set_tests_properties(serve.hostile PROPERTIES LABELS serve TIMEOUT 600)
# HTTPS with --tls-cert/--tls-key (skipped, exit 77, without the openssl command).
add_test(NAME serve.tls
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/serve/test_tls.py $<TARGET_FILE:nazar_cli>)
set_tests_properties(serve.tls PROPERTIES LABELS serve TIMEOUT 600 SKIP_RETURN_CODE 77)
