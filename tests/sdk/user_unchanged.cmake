# user_unchanged.cmake — sdk.user_unchanged: the user-API program prints the same stdout and
# exits 0 without any profiler in the process (no-op dispatch table) and with the SDK and the
# json tool preloaded.
set(expected "levels 0 1 1 0 empty-pop -1\ndone\n")
execute_process(COMMAND ${PROG} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out STREQUAL expected)
  message(FATAL_ERROR "without SDK: rc=${rc} stdout='${out}'")
endif()
file(MAKE_DIRECTORY ${OUT})
# sanitizer builds: a preloaded library comes before the ASan runtime the program links
set(ENV{ASAN_OPTIONS} "$ENV{ASAN_OPTIONS}:verify_asan_link_order=0")
set(ENV{LD_PRELOAD} "${TOOL}")
set(ENV{OMNIPROF_JSON_TOOL_OUTPUT} "${OUT}/records.jsonl")
set(ENV{OMNIPROF_LOG_LEVEL} "error")
execute_process(COMMAND ${PROG} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out STREQUAL expected)
  message(FATAL_ERROR "with SDK: rc=${rc} stdout='${out}'")
endif()
# the SDK alone (no tool): still unchanged
set(ENV{LD_PRELOAD} "${SDK}")
execute_process(COMMAND ${PROG} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out STREQUAL expected)
  message(FATAL_ERROR "with SDK only: rc=${rc} stdout='${out}'")
endif()
