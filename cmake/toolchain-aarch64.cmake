# Cross build for 64-bit Arm Linux on a Debian amd64 machine (docs/arm64.md):
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
# `make test-arm64` does this, after `scripts/install-deps.sh arm64`.
#
# Compiler: Debian's crossbuild-essential-arm64 (aarch64-linux-gnu-g++, gcc 12). Libraries:
# Debian's arm64 packages installed beside the amd64 ones (multiarch: /usr/lib/aarch64-linux-gnu,
# headers shared in /usr/include), plus the few whose arm64 -dev package cannot be co-installed
# with the amd64 one (libsentencepiece, libyaml-cpp's CMake files), which install-deps.sh unpacks
# under NAZAR_ARM64_SIDE (default /opt/nazar-arm64) instead.
# Programs run under qemu-user: CMAKE_CROSSCOMPILING_EMULATOR makes ctest, gtest's test
# discovery and the build's own uses of the CLI (man pages) go through qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT DEFINED NAZAR_ARM64_SIDE)
  if(DEFINED ENV{NAZAR_ARM64_SIDE})
    set(NAZAR_ARM64_SIDE $ENV{NAZAR_ARM64_SIDE})
  else()
    set(NAZAR_ARM64_SIDE /opt/nazar-arm64)
  endif()
endif()
# Try-compiles re-read this file: pass the setting on to them.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES NAZAR_ARM64_SIDE)

# Libraries and headers: the host's multiarch tree (/ with CMAKE_LIBRARY_ARCHITECTURE picks
# /usr/lib/aarch64-linux-gnu, never the amd64 directory), the cross toolchain's own tree, and
# the unpacked side tree. Programs (pkg-config, python3, protoc-like tools) come from the host.
set(CMAKE_FIND_ROOT_PATH / /usr/aarch64-linux-gnu ${NAZAR_ARM64_SIDE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The side tree's headers before /usr/include's (there the amd64 packages' copies of them).
if(EXISTS ${NAZAR_ARM64_SIDE}/usr/include)
  set(CMAKE_CXX_FLAGS_INIT "-isystem ${NAZAR_ARM64_SIDE}/usr/include")
endif()

# pkg-config (sentencepiece): only the arm64 .pc files, never the amd64 ones.
set(ENV{PKG_CONFIG_LIBDIR}
    "${NAZAR_ARM64_SIDE}/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
unset(ENV{PKG_CONFIG_PATH})

# The loader: libc6:arm64 (a dependency of the arm64 -dev packages) puts the arm64 loader at
# /lib/ld-linux-aarch64.so.1, where qemu finds it with the libc of the same version in
# /lib/aarch64-linux-gnu. Only without it does qemu take the cross tree's (-L), whose loader
# (libc6-arm64-cross) can be older than the multiarch libc it would then load.
find_program(NAZAR_QEMU_AARCH64 qemu-aarch64)
if(NAZAR_QEMU_AARCH64)
  if(EXISTS /lib/ld-linux-aarch64.so.1)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${NAZAR_QEMU_AARCH64})
  else()
    set(CMAKE_CROSSCOMPILING_EMULATOR ${NAZAR_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
  endif()
endif()
