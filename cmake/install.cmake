# Installation and the CMake package (owner: decode). `cmake --install build --prefix P` puts
#   P/bin/nazar                                  the command-line program
#   P/lib/<arch>/libnazar_<folder>.a             one static library per folder (core ... train);
#                                                <arch> = Debian's multiarch triplet
#                                                (x86_64-linux-gnu), as in the Debian package
#   P/include/nazar/<folder>/*.h                 the public headers only (same paths as in the tree):
#                                                the API below and what it includes, not the kernels
#                                                and other internals; apps/ (the demo) is not installed
#   P/lib/<arch>/cmake/nazar/nazarConfig.cmake   find_package(nazar): target nazar::nazar
#   P/share/man/man1/nazar*.1                    the man pages (cmake/docs.cmake)
#   P/share/bash-completion/completions/nazar    bash completion; zsh: share/zsh/vendor-completions
#   P/share/doc/nazar/                           README, CONTRIBUTING and docs/
#   P/share/nazar/configs/                       the example configurations
#   P/lib/python3.X/dist-packages/nazar          the Python package (python/CMakeLists.txt)
# Another project then writes:  find_package(nazar REQUIRED)
#                               target_link_libraries(app PRIVATE nazar::nazar)
# (examples/CMakeLists.txt; tests/e2e/install_example.sh builds it against a fresh install).
# Libraries in the multiarch directory whatever the prefix (GNUInstallDirs picks it only for
# /usr), so that the Debian package (made from the same build, cmake/package.cmake) follows
# Debian's layout; find_package searches P/lib/<arch>/cmake too. -DCMAKE_INSTALL_LIBDIR=lib
# keeps the plain layout.
if(CMAKE_LIBRARY_ARCHITECTURE AND NOT DEFINED CACHE{CMAKE_INSTALL_LIBDIR})
  set(CMAKE_INSTALL_LIBDIR "lib/${CMAKE_LIBRARY_ARCHITECTURE}" CACHE PATH
      "Object code libraries (lib/<multiarch triplet>)")
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(_nazar_install_libs GLOBAL PROPERTY NAZAR_LIBS)
install(TARGETS ${_nazar_install_libs} nazar nazar_blas
        EXPORT nazarTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS nazar_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The public API: the headers an application includes. A header not listed here is installed only
# when one of these includes it (directly or further down): the closure is followed through the
# `#include "nazar/..."` lines at configure time, so the installed set always compiles (checked by
# tests/e2e/install_example.sh) and a new internal header stays private by default.
set(NAZAR_PUBLIC_HEADERS
    nazar/core/check.h nazar/core/safetensors.h nazar/core/tensor.h nazar/core/threads.h
    nazar/data/batcher.h nazar/data/corpus.h nazar/data/pipeline.h nazar/data/reader.h
    nazar/data/tokenizer.h nazar/data/utf8.h nazar/data/vocab.h
    nazar/eval/aer.h nazar/eval/bleu.h nazar/eval/chrf.h nazar/eval/references.h nazar/eval/text.h
    nazar/eval/wer.h
    nazar/models/model_file.h nazar/models/seq2seq.h
    nazar/decode/alignment.h nazar/decode/beam_search.h nazar/decode/decode_defaults.h
    nazar/decode/greedy.h nazar/decode/protect.h nazar/decode/shortlist.h
    nazar/decode/translator.h
    nazar/train/checkpoint.h nazar/train/train_config.h nazar/train/trainer.h
    nazar/viz/heatmap.h)

function(nazar_header_closure out)
  set(todo ${ARGN})
  set(seen)
  while(todo)
    list(POP_FRONT todo h)
    if(h IN_LIST seen)
      continue()
    endif()
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${h})
      message(FATAL_ERROR "install: public header ${h} does not exist (cmake/install.cmake)")
    endif()
    list(APPEND seen ${h})
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 ${PROJECT_SOURCE_DIR}/${h})
    file(STRINGS ${PROJECT_SOURCE_DIR}/${h} lines REGEX "^#include \"nazar/[^\"]+\"")
    foreach(l IN LISTS lines)
      string(REGEX REPLACE "^#include \"(nazar/[^\"]+)\".*" "\\1" inc "${l}")
      list(APPEND todo ${inc})
    endforeach()
  endwhile()
  list(SORT seen)
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

nazar_header_closure(_nazar_installed_headers ${NAZAR_PUBLIC_HEADERS})
foreach(h IN LISTS _nazar_installed_headers)
  get_filename_component(dir ${h} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()

set(NAZAR_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nazar)
install(EXPORT nazarTargets NAMESPACE nazar:: DESTINATION ${NAZAR_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nazarConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/nazarConfig.cmake
                              INSTALL_DESTINATION ${NAZAR_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nazarConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nazarConfig.cmake ${PROJECT_BINARY_DIR}/nazarConfigVersion.cmake
        DESTINATION ${NAZAR_INSTALL_CMAKEDIR})

# Man pages and shell completions (generated: cmake/docs.cmake), the documentation and the
# example configurations, where Debian's tools look for them.
if(NAZAR_DOCS)
  install(DIRECTORY ${NAZAR_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          FILES_MATCHING PATTERN "*.1")
  install(FILES ${NAZAR_COMPLETION_DIR}/nazar
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions)
  install(FILES ${NAZAR_COMPLETION_DIR}/_nazar
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/zsh/vendor-completions)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CONTRIBUTING.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/${PROJECT_NAME}/configs)
