# Is pybind11 here? (top-level CMakeLists.txt: NAZAR_PYTHON defaults to the answer.)
# The package is built for Debian's /usr/bin/python3 (its pybind11 is Debian's python3-pybind11),
# not for whatever `python3` comes first on PATH; -DPython_EXECUTABLE=... chooses another (pip
# install passes its own interpreter). PYBIND11_FINDPYTHON: pybind11 finds it with FindPython.
# Not in a cross build (docs/arm64.md): the host's python3 cannot load a module built for
# another processor.
if(CMAKE_CROSSCOMPILING)
  set(pybind11_FOUND FALSE)
  return()
endif()
if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python the nazar package is built for")
endif()
set(PYBIND11_FINDPYTHON ON)
find_package(pybind11 2.6 CONFIG QUIET)
