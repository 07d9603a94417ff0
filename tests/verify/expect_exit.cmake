# Runs ${PROGRAM} ${INPUT} [${EXTRA_ARGS}] and fails unless it exits with ${EXPECT_CODE}, its stderr contains
# ${EXPECT_TEXT} and (if given) its stdout contains ${EXPECT_STDOUT}.
execute_process(COMMAND ${PROGRAM} ${INPUT} --jobs 2 --no-axioms ${EXTRA_ARGS}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL EXPECT_CODE)
  message(FATAL_ERROR "expected exit status ${EXPECT_CODE}, got ${code}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(EXPECT_TEXT AND NOT err MATCHES "${EXPECT_TEXT}")
  message(FATAL_ERROR "stderr does not mention '${EXPECT_TEXT}':\n${err}")
endif()
if(EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not mention '${EXPECT_STDOUT}':\n${out}")
endif()
