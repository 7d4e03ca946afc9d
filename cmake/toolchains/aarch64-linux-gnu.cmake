# Cross build for aarch64 (NVIDIA Grace: GB200/GB300 NVL72 compute nodes) on an
# x86-64 Debian 12 machine, with Debian's cross compiler
# (crossbuild-essential-arm64) and a sysroot of Debian 12's arm64 development
# packages (scripts/arm64-sysroot.sh). Tests run under qemu-user-static, called
# explicitly (no binfmt_misc needed):
#
#   scripts/install-deps.sh --with-arm64
#   cmake -S . -B build-arm64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#   cmake --build build-arm64 && ctest --test-dir build-arm64 -L unit
#
# LAUNCHGUARD_ARM64_SYSROOT overrides the sysroot (default: build-arm64-sysroot
# next to the source tree).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT LAUNCHGUARD_ARM64_SYSROOT)
  if(DEFINED ENV{LAUNCHGUARD_ARM64_SYSROOT})
    set(LAUNCHGUARD_ARM64_SYSROOT "$ENV{LAUNCHGUARD_ARM64_SYSROOT}")
  else()
    get_filename_component(LAUNCHGUARD_ARM64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../../build-arm64-sysroot" ABSOLUTE)
  endif()
endif()
if(NOT EXISTS "${LAUNCHGUARD_ARM64_SYSROOT}/usr/include/aarch64-linux-gnu")
  message(FATAL_ERROR "no aarch64 sysroot at ${LAUNCHGUARD_ARM64_SYSROOT}: run scripts/arm64-sysroot.sh "
                      "(or scripts/install-deps.sh --with-arm64)")
endif()
# try_compile projects run this file again: hand them the sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LAUNCHGUARD_ARM64_SYSROOT)
set(CMAKE_SYSROOT "${LAUNCHGUARD_ARM64_SYSROOT}")

# Headers, libraries and CMake packages from the sysroot only; programs
# (pkg-config, protoc-like tools) from this machine.
set(CMAKE_FIND_ROOT_PATH "${CMAKE_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${CMAKE_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${CMAKE_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${CMAKE_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Test executables (and gtest_discover_tests' listing at build time) run under
# user-mode emulation, with the sysroot's dynamic loader and libraries.
find_program(LAUNCHGUARD_QEMU_AARCH64 qemu-aarch64-static qemu-aarch64)
if(LAUNCHGUARD_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${LAUNCHGUARD_QEMU_AARCH64};-L;${CMAKE_SYSROOT}")
endif()
