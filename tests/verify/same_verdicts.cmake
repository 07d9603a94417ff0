# Determinism of ruleverify's verdicts: runs ${PROGRAM} ${INPUT} ${ARGS} twice, once alone with one thread and
# once with two threads while ${LOAD} (another CPU-bound process) runs beside it, and fails unless both runs
# give every rule the same status, method and detail. Timings are the only thing allowed to differ.
# ARGS should include a budget tight enough that some rules come out unknown (their resource limit is
# exhausted): with wall-clock budgets exactly those verdicts flip when the machine is loaded.
set(args ${ARGS})  # a CMake list
separate_arguments(load UNIX_COMMAND "${LOAD}")  # a command line

function(verdicts out_var text)
  # Drop each line's time ("  1234 ms") and the summary's "in 1.23 s (4.5 rules/s)".
  string(REGEX REPLACE " +[0-9]+ ms" "" text "${text}")
  string(REGEX REPLACE " in [0-9.]+ s \\([0-9.]+ rules/s\\)" "" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${PROGRAM} ${INPUT} ${args} --jobs 1
                RESULT_VARIABLE code_idle OUTPUT_VARIABLE out_idle ERROR_VARIABLE err_idle)
# Commands of one execute_process run at the same time (as a pipeline): the load beside the second run.
execute_process(COMMAND ${load}
                COMMAND ${PROGRAM} ${INPUT} ${args} --jobs 2
                RESULTS_VARIABLE codes OUTPUT_VARIABLE out_busy ERROR_VARIABLE err_busy)
list(GET codes 1 code_busy)
verdicts(idle "${out_idle}")
verdicts(busy "${out_busy}")
if(NOT idle STREQUAL busy OR NOT code_idle EQUAL code_busy)
  message(FATAL_ERROR "verdicts differ between the idle run (exit ${code_idle}) and the loaded run (exit ${code_busy})"
                      "\n--- idle:\n${idle}\n--- loaded:\n${busy}")
endif()
if(EXPECT_STDOUT AND NOT idle MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}':\n${idle}")
endif()
message(STATUS "same verdicts idle and loaded:\n${idle}")
