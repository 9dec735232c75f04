# Toolchain file: cross-compiles for aarch64 Linux with Debian's g++-aarch64-linux-gnu and runs
# what it builds (tests, GoogleTest discovery, examples) under qemu-aarch64. Used by
# `scripts/test --aarch64`, which also unpacks the arm64 dependencies into the sysroot below.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# GoogleTest, cpuinfo and pthreadpool for arm64, as unpacked Debian packages (usr/include,
# usr/lib/aarch64-linux-gnu), found relative to this file: try_compile and the install_consumer
# test read it again from elsewhere.
get_filename_component(LOWBIT_AARCH64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build/aarch64-sysroot"
                       ABSOLUTE)
set(LOWBIT_AARCH64_LIBDIR "${LOWBIT_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu")

# Libraries and headers only from the cross toolchain's own root and that sysroot; packages
# also where they are given (an installed lowbit in a scratch prefix), programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu "${LOWBIT_AARCH64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# The linker looks for the sysroot's libraries behind a shared lowbit (cpuinfo, pthreadpool)
# only where it is told to.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${LOWBIT_AARCH64_LIBDIR}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${LOWBIT_AARCH64_LIBDIR}")

# qemu finds the arm64 C and C++ runtime under -L, the sysroot's shared libraries through
# LD_LIBRARY_PATH set inside the emulated process. The CPU model comes from QEMU_CPU in the
# environment: scripts/test --aarch64 runs the suite on `max` (every extension qemu emulates,
# the dot product among them, so Kernel::kNeon dispatches to the dot-product kernel) and the
# GEMM suites again on `cortex-a72` (Armv8.0: the plain NEON kernel).
find_program(LOWBIT_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${LOWBIT_QEMU_AARCH64}" -L /usr/aarch64-linux-gnu
                                  -E "LD_LIBRARY_PATH=${LOWBIT_AARCH64_LIBDIR}")
