# The Debian package (`cpack -G DEB` in the build folder; scripts/package_check.sh builds and lists
# it): everything `cmake --install` installs -- bin/drift, the shipped plugins in lib/drift/plugins,
# the SDK (include/drift/plugin.h, lib/cmake/drift), drift bench's prompt set -- under /usr, and
# the docs in share/doc/driftengine. Its Depends are the Debian packages of the shared libraries
# the binary and the plugins link, found by dpkg-shlibdeps; libraries no Debian package provides
# (NVIDIA's CUDA runtime in a CUDA build) are left out of Depends: the loader must find them as
# the CUDA toolkit installed them (ld.so.conf).
set(DRIFT_DOC_DIR "${CMAKE_INSTALL_DATAROOTDIR}/doc/driftengine")  # Debian: /usr/share/doc/<package>
install(FILES "${PROJECT_SOURCE_DIR}/README.md" DESTINATION "${DRIFT_DOC_DIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/" DESTINATION "${DRIFT_DOC_DIR}/docs" FILES_MATCHING PATTERN "*.md")

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "driftengine")
set(CPACK_PACKAGE_VENDOR "DriftEngine")
set(CPACK_PACKAGE_CONTACT "DriftEngine developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "LLM inference engine with speculative-decoding and cache plugins")
set(CPACK_PACKAGE_DESCRIPTION
    "DriftEngine runs Llama, Mistral and Qwen checkpoints on the CPU (and CUDA where built in), with speculative-decoding strategies and cache managers loaded as plugins through one C ABI. Ships the drift binary, the ngram, eagle3, suffix_cache, prefix_cache and specpv plugins, and the plugin SDK (drift/plugin.h, find_package(drift)).")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # driftengine_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/package")
include(CPack)
