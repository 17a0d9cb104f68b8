# Installation and the CMake package (owner: decode). `cmake --install build --prefix P` puts
#   P/bin/nazar                                  the command-line program
#   P/lib/libnazar_<folder>.a                    one static library per folder (core ... train)
#   P/include/nazar/<folder>/*.h                 every public header (same paths as in the tree)
#   P/lib/cmake/nazar/nazarConfig.cmake          find_package(nazar): target nazar::nazar
# Another project then writes:  find_package(nazar REQUIRED)
#                               target_link_libraries(app PRIVATE nazar::nazar)
# (examples/CMakeLists.txt; tests/e2e/install_example.sh builds it against a fresh install).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(_nazar_install_libs GLOBAL PROPERTY NAZAR_LIBS)
install(TARGETS ${_nazar_install_libs} nazar nazar_blas
        EXPORT nazarTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS nazar_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/nazar/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nazar
        FILES_MATCHING PATTERN "*.h")

set(NAZAR_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nazar)
install(EXPORT nazarTargets NAMESPACE nazar:: DESTINATION ${NAZAR_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nazarConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/nazarConfig.cmake
                              INSTALL_DESTINATION ${NAZAR_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nazarConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nazarConfig.cmake ${PROJECT_BINARY_DIR}/nazarConfigVersion.cmake
        DESTINATION ${NAZAR_INSTALL_CMAKEDIR})
