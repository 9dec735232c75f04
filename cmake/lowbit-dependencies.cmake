# Imported targets for cpuinfo and pthreadpool, shared by the build and the installed package.
# Debian's own cpuinfo CMake config points at a missing libclog.a, so neither is found through
# a package config: cpuinfo comes from pkg-config, pthreadpool (no .pc file) from its header.
include_guard(GLOBAL)

if(NOT TARGET lowbit::cpuinfo)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(LOWBIT_CPUINFO REQUIRED IMPORTED_TARGET GLOBAL libcpuinfo)
  add_library(lowbit::cpuinfo ALIAS PkgConfig::LOWBIT_CPUINFO)
endif()

if(NOT TARGET lowbit::pthreadpool)
  find_path(LOWBIT_PTHREADPOOL_INCLUDE_DIR pthreadpool.h REQUIRED)
  find_library(LOWBIT_PTHREADPOOL_LIBRARY pthreadpool REQUIRED)
  find_package(Threads REQUIRED)
  add_library(lowbit::pthreadpool UNKNOWN IMPORTED GLOBAL)
  set_target_properties(lowbit::pthreadpool PROPERTIES
    IMPORTED_LOCATION "${LOWBIT_PTHREADPOOL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LOWBIT_PTHREADPOOL_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
