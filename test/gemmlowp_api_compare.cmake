# Runs test/gemmlowp_api_program.cc built against gemmlowp and against lowbit, and requires
# their outputs to be the same bytes.
foreach(build IN ITEMS GEMMLOWP LOWBIT)
  set(output ${WORK_DIR}/gemmlowp_api_${build}.bin)
  execute_process(COMMAND ${${build}_PROGRAM} ${output} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${${build}_PROGRAM} failed (${result})")
  endif()
endforeach()
file(SIZE ${WORK_DIR}/gemmlowp_api_GEMMLOWP.bin size)
if(size LESS 100000)
  message(FATAL_ERROR "gemmlowp's run wrote only ${size} bytes")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK_DIR}/gemmlowp_api_GEMMLOWP.bin
                        ${WORK_DIR}/gemmlowp_api_LOWBIT.bin RESULT_VARIABLE different)
if(different)
  message(FATAL_ERROR "lowbit's gemmlowp API wrote other bytes than gemmlowp "
                      "(${WORK_DIR}/gemmlowp_api_GEMMLOWP.bin, gemmlowp_api_LOWBIT.bin)")
endif()
message(STATUS "${size} bytes, identical")
