# Determinism of eqsat-run's result: runs ${PROGRAM} ${ARGS} -o OUT --report OUT.json twice, once alone and
# once while two copies of ${LOAD} (CPU-bound) run beside it on this machine's cores, and fails unless both
# runs write the same optimized model, byte for byte, and the same report but for its seconds. The limits
# that decide a result are counts (e-nodes, iterations, ILP nodes and LP iterations); a wall-clock budget
# that decided anything would show here.
set(args ${ARGS})  # a CMake list
separate_arguments(load UNIX_COMMAND "${LOAD}")
file(MAKE_DIRECTORY "${WORK}")

function(run_once out_var tag)
  set(out "${WORK}/${tag}.onnx")
  file(REMOVE "${out}" "${out}.json")
  if(tag STREQUAL "loaded")
    # Commands of one execute_process run at the same time (as a pipeline): the load beside the run.
    execute_process(COMMAND ${load} COMMAND ${load} COMMAND ${PROGRAM} ${args} -q -o "${out}" --report "${out}.json"
                    RESULTS_VARIABLE codes ERROR_VARIABLE err)
    list(GET codes 2 code)
  else()
    execute_process(COMMAND ${PROGRAM} ${args} -q -o "${out}" --report "${out}.json" RESULT_VARIABLE code
                    ERROR_VARIABLE err)
  endif()
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "the ${tag} run exited ${code}:\n${err}")
  endif()
  file(READ "${out}.json" report)
  # Everything but the timings: seconds, the seconds per phase inside the extraction status, the check's.
  string(REGEX REPLACE "\"seconds\": *{[^}]*}" "" report "${report}")
  string(REGEX REPLACE "; seconds: [^;\"]*" "" report "${report}")
  string(REGEX REPLACE "\"seconds\": *[-+0-9.eE]+" "" report "${report}")  # the check's (on by default)
  string(REGEX REPLACE "\"output\": *\"[^\"]*\"" "" report "${report}")
  file(SHA256 "${out}" hash)
  set(${out_var} "model ${hash}\n${report}" PARENT_SCOPE)
endfunction()

run_once(idle idle)
run_once(busy loaded)
if(NOT idle STREQUAL busy)
  message(FATAL_ERROR "the result differs between the idle and the loaded run\n--- idle:\n${idle}\n--- loaded:\n${busy}")
endif()
if(EXPECT_REPORT AND NOT idle MATCHES "${EXPECT_REPORT}")
  message(FATAL_ERROR "the report does not match '${EXPECT_REPORT}':\n${idle}")
endif()
message(STATUS "the same result idle and loaded:\n${idle}")
