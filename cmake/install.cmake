# The plugin SDK: `cmake --install <build> [--component drift_sdk]` installs the one public
# header and a drift-config.cmake, so an out-of-tree plugin builds with find_package(drift)
# and target_link_libraries(<plugin> PRIVATE drift::plugin_sdk) -- include path only; plugins
# never link against engine symbols.
include(CMakePackageConfigHelpers)

set(DRIFT_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/drift")
install(FILES "${PROJECT_SOURCE_DIR}/include/drift/plugin.h" "${PROJECT_SOURCE_DIR}/include/drift/plugin_helpers.hpp"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/drift" COMPONENT drift_sdk)

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/drift-config.cmake.in"
  "${PROJECT_BINARY_DIR}/drift-config.cmake"
  INSTALL_DESTINATION "${DRIFT_CMAKE_INSTALL_DIR}"
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# The package version is the engine's; the ABI version lives in the header (DRIFT_ABI_MAJOR).
write_basic_package_version_file("${PROJECT_BINARY_DIR}/drift-config-version.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMajorVersion)
install(FILES "${PROJECT_BINARY_DIR}/drift-config.cmake"
              "${PROJECT_BINARY_DIR}/drift-config-version.cmake"
        DESTINATION "${DRIFT_CMAKE_INSTALL_DIR}" COMPONENT drift_sdk)

# drift bench's default prompt set (apps/shipped_data.h finds it beside the installed binary).
install(FILES "${PROJECT_SOURCE_DIR}/datasets/mt_bench.jsonl" "${PROJECT_SOURCE_DIR}/datasets/LICENSE.spec_bench"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/drift/datasets")
