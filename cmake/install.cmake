# cmake/install.cmake — what `cmake --install` (and `make install PREFIX=...`) puts in place
# and how `make deb` packages it (docs/install.md). Each target's own CMakeLists.txt installs it
# (libraries into <libdir>, binaries into bin/, the Python package, share/omniprof/metrics.xml,
# the demo program into libexec/omniprof/); the headers come from the top-level CMakeLists.txt.
# This file adds what belongs to the package as a whole:
#   lib/cmake/omniprof/              package config: find_package(omniprof) gives the imported
#                                    targets omniprof::sdk and omniprof::user
#   lib/pkgconfig/omniprof.pc        pkg-config: cflags and -lomniprof-sdk
#                                    (omniprof-user.pc for the user API alone)
#   share/man/man1, share/bash-completion/completions, share/zsh/site-functions
#                                    man pages and completion scripts, when the build made them
#   the CPack settings of `make deb`
# The tree is relocatable: everything finds its libraries and data relative to itself ($ORIGIN
# RPATHs, /proc/self/exe, dladdr), never through the build tree or a compiled-in prefix.
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

# Man pages and shell completion scripts are generated at build time into <build>/share/ (from
# the command-line option tables); installed where man, bash-completion and zsh look for them,
# when this build made them.
install(DIRECTORY ${CMAKE_BINARY_DIR}/share/man/man1/
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 OPTIONAL)
install(DIRECTORY ${CMAKE_BINARY_DIR}/share/bash-completion/completions/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions OPTIONAL)
install(DIRECTORY ${CMAKE_BINARY_DIR}/share/zsh/site-functions/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions OPTIONAL)

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

# `make deb`: one Debian package of the whole install (cpack -G DEB), /usr prefix. Its runtime
# dependencies are computed by dpkg-shlibdeps from what the binaries link (libsqlite3-0,
# libunwind8, libdw1, libelf1, ...); libraries that omniprof dlopens only when a feature is used
# (libxml2: counter definitions; libyaml: run -i FILE.yaml) and python3 (the Python package) are
# recommended. CUPTI is not a Debian package: the CUDA backend finds it where it was at build
# time or on the loader path (docs/install.md).
set(CPACK_PACKAGE_NAME omniprof)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "omniprof")
set(CPACK_PACKAGE_CONTACT "omniprof developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "profiling toolkit for GPU and CPU programs (rocpd databases, Perfetto traces)")
set(CPACK_PACKAGE_DESCRIPTION "omniprof profiles GPU (CUDA, OpenCL) and CPU programs on Linux: \
API and activity tracing, call-stack sampling, hardware counters, MPI; one rocpd SQLite \
database per process, converted to Perfetto traces, reports, summaries and flame graphs. \
Includes the SDK for writing tools and the Python package.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, libxml2, libyaml-0-2")
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip) # fast to build (the install test builds one)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/package)
include(CPack)
