# Fails if any of OBJECTS (a ;-separated list of object files) holds a floating-point instruction:
# how train/ keeps floats out of the training step (doc/training.md, "No floating point in the
# step"). Integer SIMD and bitwise moves of vector registers are allowed; arithmetic,
# comparisons and conversions on float or double (SSE/AVX, x87, AArch64) are not.
#   cmake -DOBJDUMP=objdump -DOBJECTS="a.o;b.o" -P check_no_float.cmake
set(float_instruction
    "[ \t](v?(add|sub|mul|div|sqrt|min|max|cmp[a-z]*|round|rcp|rsqrt|hadd|hsub|addsub|dp)(ss|sd|ps|pd)|v?cvt[a-z0-9]*|vfn?m(add|sub)[a-z0-9]*|u?comis[sd]|f(add|sub|mul|div|ld|st|ild|ist|isttp|comi?p?|ucomi?p?)[a-z]*|fm(add|sub|la|ls|in|ax)[a-z0-9]*|fn(madd|msub|mul|eg)|fsqrt|fabs|fcmpe?|fcvt[a-z]*|frint[a-z]*|[su]cvtf)[ \t]")
set(found "")
foreach(object IN LISTS OBJECTS)
  execute_process(COMMAND ${OBJDUMP} -d --no-show-raw-insn ${object}
                  OUTPUT_VARIABLE disassembly RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${OBJDUMP} could not disassemble ${object}")
  endif()
  string(REGEX MATCHALL "[^\n]*${float_instruction}[^\n]*" lines "${disassembly}")
  foreach(line IN LISTS lines)
    string(APPEND found "${object}: ${line}\n")
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "floating-point instructions in the training step:\n${found}")
endif()
