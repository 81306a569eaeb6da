# check_example.cmake — sdk.example_tool_run: the docs/sdk.md example tool, LD_PRELOADed into
# the user-API test program, receives exactly its marker and range records.
set(ENV{LD_PRELOAD} "${TOOL}")
set(ENV{EXAMPLE_TOOL_OUTPUT} "${OUT}")
set(ENV{OMNIPROF_LOG_LEVEL} "error")
set(ENV{ASAN_OPTIONS} "$ENV{ASAN_OPTIONS}:verify_asan_link_order=0")
execute_process(COMMAND ${PROG} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "program failed: ${rc}")
endif()
file(READ ${OUT} report)
foreach(line "kind MARKER_API 420" "kind MARKER_RANGE_API 207" "kind CORRELATION_ID_RETIREMENT 420"
             "op omniprof_range_push 202" "op thread_range 202" "op process_range 1" "drops 0"
             "range \"inner\" level 1")
  string(FIND "${report}" "${line}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "missing '${line}' in the report:\n${report}")
  endif()
endforeach()
