# Imported targets for cpuinfo and pthreadpool, shared by the build and the installed package.
# Debian's own cpuinfo CMake config points at a missing libclog.a and pthreadpool has no config
# or .pc file, so both are found by their header and library. The build requires them; the
# installed package (LOWBIT_DEPENDENCIES_OPTIONAL) defines each only where it is found, since only
# the static library needs them.
include_guard(GLOBAL)

if(LOWBIT_DEPENDENCIES_OPTIONAL)
  set(lowbit_required "")
else()
  set(lowbit_required REQUIRED)
endif()

find_package(Threads ${lowbit_required})
foreach(dependency IN ITEMS cpuinfo pthreadpool)
  if(NOT TARGET lowbit::${dependency})
    find_path(LOWBIT_${dependency}_INCLUDE_DIR ${dependency}.h ${lowbit_required})
    find_library(LOWBIT_${dependency}_LIBRARY ${dependency} ${lowbit_required})
    if(LOWBIT_${dependency}_INCLUDE_DIR AND LOWBIT_${dependency}_LIBRARY AND TARGET Threads::Threads)
      add_library(lowbit::${dependency} UNKNOWN IMPORTED GLOBAL)
      set_target_properties(lowbit::${dependency} PROPERTIES
        IMPORTED_LOCATION "${LOWBIT_${dependency}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${LOWBIT_${dependency}_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES Threads::Threads)
    endif()
  endif()
endforeach()
