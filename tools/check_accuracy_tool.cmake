# ctest script: runs lowbit-accuracy on a small sweep and checks its CSV and SVG, then checks
# that bad flags fail with a message and the usage. -DTOOL, -DWORK_DIR, -DEMULATOR (may be empty).
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

execute_process(
  COMMAND ${EMULATOR} ${TOOL} --lhs-bits 4 --rhs-bits 2 --rounding nearest,xorshift,addmod
          --depths 16,64 --data clumped --seed 3 --trials 4
          --csv ${WORK_DIR}/sweep.csv --plot ${WORK_DIR}/sweep.svg
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "lowbit-accuracy failed (${result}): ${errors}")
endif()
if(NOT output MATCHES "L4R2 +addmod +clumped +64")
  message(FATAL_ERROR "the table lacks the L4R2 addmod clumped depth-64 row:\n${output}")
endif()

file(STRINGS ${WORK_DIR}/sweep.csv lines)
list(LENGTH lines line_count)
list(GET lines 0 header)
if(NOT header STREQUAL "setting,lhs_bits,rhs_bits,rounding,data,depth,bias,bias_stderr,rms,max")
  message(FATAL_ERROR "unexpected CSV header: ${header}")
endif()
# One row per rounding (3) and depth (2), after the header.
if(NOT line_count EQUAL 7)
  message(FATAL_ERROR "expected 7 CSV lines, got ${line_count}")
endif()
file(STRINGS ${WORK_DIR}/sweep.csv rows REGEX "^L4R2,4,2,(nearest|xorshift|addmod),clumped,(16|64),[-0-9.e+]+,[0-9.e+]+,[0-9.e+]+,[0-9.e+]+$")
list(LENGTH rows row_count)
if(NOT row_count EQUAL 6)
  message(FATAL_ERROR "expected 6 well-formed CSV rows, got ${row_count}")
endif()

file(READ ${WORK_DIR}/sweep.svg svg)
foreach(expected "<svg" "depth (log scale)" "xorshift RMS" "nearest |bias|" "<polyline" "</svg>")
  string(FIND "${svg}" "${expected}" position)
  if(position EQUAL -1)
    message(FATAL_ERROR "the SVG lacks '${expected}'")
  endif()
endforeach()

foreach(bad "--rounding;bogus" "--lhs-bits;9" "--depths;16,x" "--data;noisy" "--frobnicate;1" "--seed" "--trials;1")
  execute_process(COMMAND ${EMULATOR} ${TOOL} ${bad}
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(result EQUAL 0)
    message(FATAL_ERROR "lowbit-accuracy accepted '${bad}'")
  endif()
  if(NOT errors MATCHES "lowbit-accuracy: .*usage: lowbit-accuracy")
    message(FATAL_ERROR "'${bad}' did not print an error and the usage: ${errors}")
  endif()
endforeach()
