# install_test.cmake — sdk.install_package: `cmake --install` of the whole build into a fresh
# prefix (every target must be built first, as `make test` does), then a tiny program is built
# against the installed package twice — find_package(omniprof) and pkg-config — and run.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/consumer)
set(prefix ${WORK}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${prefix} failed (${rc}):\n${err}")
endif()
foreach(f include/omniprof/omniprof.h include/omniprof/user.h lib/cmake/omniprof/omniprofConfig.cmake
          lib/pkgconfig/omniprof.pc)
  if(NOT EXISTS ${prefix}/${f})
    file(GLOB_RECURSE found RELATIVE ${prefix} ${prefix}/*)
    message(FATAL_ERROR "not installed: ${f}; installed: ${found}")
  endif()
endforeach()

file(WRITE ${WORK}/consumer/consumer.c [=[
#include <stdio.h>
#include <omniprof/omniprof.h>
#include <omniprof/user.h>
int main(void)
{
    uint32_t a, b, c;
    if (omniprof_get_version(&a, &b, &c) != OMNIPROF_STATUS_SUCCESS) return 1;
    omniprof_mark("installed");
    printf("omniprof %u.%u.%u %s\n", a, b, c, omniprof_get_status_name(OMNIPROF_STATUS_SUCCESS));
    return 0;
}
]=])
file(WRITE ${WORK}/consumer/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(omniprof 0.1 REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE omniprof::sdk omniprof::user)
]=])
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK}/consumer -B ${WORK}/consumer/build
                        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "find_package consumer: configure failed\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/consumer/build RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "find_package consumer: build failed\n${out}\n${err}")
endif()
set(ENV{OMNIPROF_LOG_LEVEL} error)
execute_process(COMMAND ${WORK}/consumer/build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^omniprof 0\\.1\\.[0-9]+ OMNIPROF_STATUS_SUCCESS")
  message(FATAL_ERROR "find_package consumer: run gave ${rc}: ${out}")
endif()

find_program(PKG_CONFIG pkg-config)
if(NOT PKG_CONFIG)
  message(STATUS "pkg-config not installed: pkg-config half skipped")
  return()
endif()
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs omniprof omniprof-user RESULT_VARIABLE rc
                OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config omniprof failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${C_COMPILER} ${WORK}/consumer/consumer.c -o ${WORK}/consumer/consumer_pc ${flags}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config consumer: compile failed: ${err}")
endif()
execute_process(COMMAND ${WORK}/consumer/consumer_pc RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^omniprof 0\\.1\\.[0-9]+ OMNIPROF_STATUS_SUCCESS")
  message(FATAL_ERROR "pkg-config consumer: run gave ${rc}: ${out}")
endif()
