# cmake/install.cmake — what `cmake --install` (and `make install PREFIX=...`) puts in place,
# besides the headers (installed by the top-level CMakeLists.txt):
#   lib/libomniprof-*.so             every omniprof library target that exists in this build
#   bin/omniprof                     the CLI, if built
#   lib/cmake/omniprof/              package config: find_package(omniprof) gives the imported
#                                    targets omniprof::sdk and omniprof::user
#   lib/pkgconfig/omniprof.pc        pkg-config: cflags and -lomniprof-sdk
#                                    (omniprof-user.pc for the user API alone)
# Targets are checked with if(TARGET ...) because modules are optional (no CUDA, no SQLite).
include(CMakePackageConfigHelpers)

set(_omniprof_exported)
foreach(_t omniprof-sdk omniprof-user)
  if(TARGET ${_t})
    string(REPLACE "omniprof-" "" _name ${_t})
    set_target_properties(${_t} PROPERTIES EXPORT_NAME ${_name})
    list(APPEND _omniprof_exported ${_t})
  endif()
endforeach()
if(_omniprof_exported)
  install(TARGETS ${_omniprof_exported} EXPORT omniprofTargets COMPONENT sdk
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT omniprofTargets NAMESPACE omniprof:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/omniprof
    COMPONENT sdk)
endif()

# Other shared objects and the CLI: installed, not exported (they are loaded, not linked).
foreach(_t omniprof-tool omniprof-output omniprof-backend-cpu omniprof-backend-cuda omniprof-cuda-intercept
           omniprof)
  if(TARGET ${_t})
    install(TARGETS ${_t} COMPONENT runtime
      LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
      RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/omniprofConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/omniprofConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/omniprof)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/omniprofConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/omniprofConfig.cmake ${CMAKE_BINARY_DIR}/cmake/omniprofConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/omniprof COMPONENT sdk)

# The .pc files are relocatable: prefix is computed from the file's own place (${pcfiledir}),
# so `cmake --install --prefix <anywhere>` gives working files.
set(OMNIPROF_PC_PREFIX "\${pcfiledir}")
string(REPLACE "/" ";" _libdir_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(_p ${_libdir_parts})
  string(APPEND OMNIPROF_PC_PREFIX "/..")
endforeach()
foreach(_pc omniprof omniprof-user)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${_pc}.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/${_pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/${_pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT sdk)
endforeach()

# Test: install into a temporary prefix, then build a small program against the installed
# package, once with find_package(omniprof) and once with pkg-config, and run it.
if(BUILD_TESTING OR NOT DEFINED BUILD_TESTING)
  if(TARGET omniprof-sdk AND TARGET omniprof-user)
    add_test(NAME sdk.install_package
      COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSRC_DIR=${CMAKE_SOURCE_DIR}
              -DWORK=${CMAKE_BINARY_DIR}/install-test -DC_COMPILER=${CMAKE_C_COMPILER}
              -P ${CMAKE_CURRENT_LIST_DIR}/install_test.cmake)
    set_tests_properties(sdk.install_package PROPERTIES TIMEOUT 300 LABELS no-sanitize)
  endif()
endif()
