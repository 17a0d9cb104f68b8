# `make package` (cpack -G DEB in the build directory): a Debian package of everything that
# cmake/install.cmake and python/CMakeLists.txt install, under /usr:
#   /usr/bin/nazar, the static libraries, public headers and CMake package (find_package(nazar)),
#   the Python package in /usr/lib/python3/dist-packages (Debian's directory for every python3
#   version; moved there from cmake --install's versioned one by cmake/package_prebuild.cmake),
#   the man pages (compressed, as Debian policy has them), the bash and zsh completions,
#   /usr/share/doc/nazar and /usr/share/nazar/configs.
# Its dependencies: the shared libraries the program and the Python extension link (OpenBLAS,
# yaml-cpp, sentencepiece, OpenSSL, MPI ...), found by dpkg-shlibdeps, plus python3 and
# python3-numpy for the module; `apt install ./nazar_<version>_<arch>.deb` pulls them in.
# tests/e2e/test_package.sh builds it and runs the program and the module from the package.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ${PROJECT_NAME})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "nazar")
set(CPACK_PACKAGE_CONTACT "nazar maintainers <nazar@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "attention-based RNN sequence-to-sequence models (Bahdanau, Luong)")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "One native program (nazar: train, translate, align, attention heatmaps, serve, eval)\n"
       "and a C++ library with a Python module for attention RNN seq2seq models: Bahdanau and\n"
       "Luong (dot, general, concat, local-m, local-p) attention, coverage, copy attention.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # nazar_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
find_program(NAZAR_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NAZAR_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "nazar package: no dpkg-shlibdeps (dpkg-dev): the library dependencies "
                 "will not be declared")
endif()
set(_nazar_deb_depends)
if(NAZAR_BLAS STREQUAL "oneDNN")
  # Opened at run time, not linked (cmake/blas.cmake), so dpkg-shlibdeps cannot see it:
  # libdnnl.so.2 is Debian's libdnnl2.
  string(REGEX REPLACE "^lib(.*)\\.so\\.([0-9]+)$" "lib\\1\\2" _nazar_dnnl_package
                       "${NAZAR_DNNL_SONAME}")
  list(APPEND _nazar_deb_depends ${_nazar_dnnl_package})
endif()
if(NAZAR_PYTHON AND TARGET _nazar)
  # The extension is built for one CPython version (its file name says which).
  math(EXPR _py_next "${Python_VERSION_MINOR} + 1")
  list(APPEND _nazar_deb_depends
       "python3 (>= ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR})"
       "python3 (<< ${Python_VERSION_MAJOR}.${_py_next})" "python3-numpy")
  set(NAZAR_DEB_PYTHON_FROM ${NAZAR_PYTHON_INSTALL_DIR})
endif()
list(JOIN _nazar_deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
# What find_package(nazar) needs to build against the installed static libraries.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "libfmt-dev, nlohmann-json3-dev, libyaml-cpp-dev, zlib1g-dev, libsentencepiece-dev, \
libopenblas-dev, cmake, g++")
configure_file(${PROJECT_SOURCE_DIR}/cmake/package_prebuild.cmake.in
               ${PROJECT_BINARY_DIR}/package_prebuild.cmake @ONLY)
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_BINARY_DIR}/package_prebuild.cmake)
include(CPack)

# What the package holds, built without the tests and benchmarks: the Makefile's `package`
# builds this target, then runs cpack.
add_custom_target(nazar_package_contents)
add_dependencies(nazar_package_contents nazar_cli)
foreach(t nazar_docs _nazar nazar_python_files)
  if(TARGET ${t})
    add_dependencies(nazar_package_contents ${t})
  endif()
endforeach()
