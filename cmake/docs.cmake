# The man pages and the shell completions, generated from the option table at build time by the
# hidden `nazar help-dump` command (cli/docgen.h), so that they cannot drift from `--help`:
#   build/man/nazar.1, build/man/nazar-<command>.1    troff (man -l build/man/nazar-train.1)
#   build/completions/nazar                           bash (source it, or install)
#   build/completions/_nazar                          zsh (#compdef)
# Installed by cmake/install.cmake (share/man/man1, share/bash-completion/completions,
# share/zsh/vendor-completions). Not in a sanitizer or fuzzer build, whose program would run
# instrumented in the build; a cross build runs the program under CMAKE_CROSSCOMPILING_EMULATOR
# (a command naming the target nazar_cli gets it), and without one it skips them.
set(NAZAR_DOCS OFF)
if(NAZAR_SANITIZE OR NAZAR_FUZZ)
  message(STATUS "nazar man pages and completions: skipped in a sanitizer/fuzzer build")
elseif(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "nazar man pages and completions: skipped (cross build without an emulator)")
else()
  set(NAZAR_DOCS ON)
endif()

set(NAZAR_MAN_DIR ${PROJECT_BINARY_DIR}/man)
set(NAZAR_COMPLETION_DIR ${PROJECT_BINARY_DIR}/completions)
if(NAZAR_DOCS)
  # One page per subcommand: their names are the program's to say, so the directory is made
  # afresh (no page of a removed command stays) and a stamp file stands for it.
  set(_stamp ${NAZAR_MAN_DIR}/.stamp)
  add_custom_command(
    OUTPUT ${_stamp} ${NAZAR_COMPLETION_DIR}/nazar ${NAZAR_COMPLETION_DIR}/_nazar
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${NAZAR_MAN_DIR}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${NAZAR_MAN_DIR} ${NAZAR_COMPLETION_DIR}
    COMMAND nazar_cli help-dump --format man --out-dir ${NAZAR_MAN_DIR}
    COMMAND nazar_cli help-dump --format bash --output ${NAZAR_COMPLETION_DIR}/nazar
    COMMAND nazar_cli help-dump --format zsh --output ${NAZAR_COMPLETION_DIR}/_nazar
    COMMAND ${CMAKE_COMMAND} -E touch ${_stamp}
    DEPENDS nazar_cli
    COMMENT "Man pages and shell completions from the option table (nazar help-dump)"
    VERBATIM)
  add_custom_target(nazar_docs ALL DEPENDS ${_stamp} ${NAZAR_COMPLETION_DIR}/nazar
                                           ${NAZAR_COMPLETION_DIR}/_nazar)
endif()
