# Installs the built library into a scratch prefix, then configures, builds and runs
# examples/consumer against it, as a user's own project would.
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
