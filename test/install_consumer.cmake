# Installs the built library into a scratch prefix, then configures, builds and runs
# examples/consumer against it, as a user's own project would: with CMake and with pkg-config.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed (${result}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${LOWBIT_BINARY_DIR} --prefix ${WORK_DIR}/prefix)
set(options "")
# A sanitized library needs a sanitized program to link into.
if(LOWBIT_SANITIZE)
  list(APPEND options -DCMAKE_CXX_FLAGS=-fsanitize=${LOWBIT_SANITIZE}
                      -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${LOWBIT_SANITIZE})
endif()
# A cross-compiled library needs a program built with the same toolchain (whose own flags
# stay in force) and run under its emulator.
if(LOWBIT_TOOLCHAIN_FILE)
  list(APPEND options -DCMAKE_TOOLCHAIN_FILE=${LOWBIT_TOOLCHAIN_FILE})
endif()
foreach(linkage IN ITEMS shared static)
  run(${CMAKE_COMMAND} -S ${LOWBIT_SOURCE_DIR}/examples/consumer -B ${WORK_DIR}/build-${linkage}
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DLOWBIT_LINKAGE=${linkage} ${options})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/build-${linkage})
  run(${LOWBIT_EMULATOR} ${WORK_DIR}/build-${linkage}/consumer)
endforeach()
# pkg-config: the same program built by the compiler alone, with the flags lowbit.pc gives.
# (A cross build's pkg-config would describe the host.)
if(NOT LOWBIT_TOOLCHAIN_FILE)
  find_program(PKG_CONFIG pkg-config REQUIRED)
  set(ENV{PKG_CONFIG_PATH} ${WORK_DIR}/prefix/${LOWBIT_INSTALL_LIBDIR}/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs lowbit OUTPUT_VARIABLE flags
                  RESULT_VARIABLE result OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs lowbit failed (${result})")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(sanitize "")
  if(LOWBIT_SANITIZE)
    set(sanitize -fsanitize=${LOWBIT_SANITIZE})
  endif()
  run(${LOWBIT_CXX_COMPILER} -std=c++17 ${sanitize} ${LOWBIT_SOURCE_DIR}/examples/consumer/main.cc
      ${flags} -Wl,-rpath,${WORK_DIR}/prefix/${LOWBIT_INSTALL_LIBDIR}
      -o ${WORK_DIR}/consumer-pkg-config)
  run(${WORK_DIR}/consumer-pkg-config)
endif()
# The shared library needs nothing but itself: find_package(lowbit) succeeds and the program
# links and runs with cpuinfo's and pthreadpool's headers and libraries hidden from CMake.
string(REPLACE "|" ";" dependency_dirs "${LOWBIT_DEPENDENCY_DIRS}")
file(WRITE ${WORK_DIR}/hide-dependencies.cmake
     "set(CMAKE_IGNORE_PATH \"${dependency_dirs}\" CACHE STRING \"\")\n")
run(${CMAKE_COMMAND} -C ${WORK_DIR}/hide-dependencies.cmake -S ${LOWBIT_SOURCE_DIR}/examples/consumer
    -B ${WORK_DIR}/build-alone -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DLOWBIT_LINKAGE=shared
    ${options})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build-alone)
run(${LOWBIT_EMULATOR} ${WORK_DIR}/build-alone/consumer)
