# The reference data the tests and the example configs read ships with the checkout (tests/data,
# models/, datasets/; tests/data/README.md says where each file came from), so a fresh clone tests
# on its own. DRIFT_TEST_DATA (cache) or the environment variable of that name at run time point
# the tests elsewhere, e.g. at a fuller copy of the reference data.
set(DRIFT_TEST_DATA "${CMAKE_SOURCE_DIR}/tests/data" CACHE PATH "Default test data directory")

# The two large tokenizer.json files (Llama 3: 9 MB, Qwen3: 11 MB) are kept xz-compressed in git
# (1.6 + 1.4 MB) and unpacked beside their archive, where .gitignore ignores them: when missing or
# older than the archive. Unpacked into a temporary folder first and renamed, so a build that
# configures at the same moment never reads half a file.
function(drift_unpack_test_data)
  file(GLOB archives CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tests/data/tokenizers/*/*.tar.xz")
  foreach(archive ${archives})
    get_filename_component(dir "${archive}" DIRECTORY)
    string(REGEX REPLACE "\\.tar\\.xz$" "" unpacked "${archive}")
    get_filename_component(name "${unpacked}" NAME)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${archive}")
    if(EXISTS "${unpacked}" AND NOT "${archive}" IS_NEWER_THAN "${unpacked}")
      continue()
    endif()
    string(RANDOM LENGTH 8 tag)
    set(staging "${dir}/.unpack-${tag}")
    file(ARCHIVE_EXTRACT INPUT "${archive}" DESTINATION "${staging}")
    if(NOT EXISTS "${staging}/${name}")
      message(FATAL_ERROR "${archive} holds no ${name}")
    endif()
    file(RENAME "${staging}/${name}" "${unpacked}")
    file(REMOVE_RECURSE "${staging}")
    file(TOUCH "${unpacked}")  # the archive's mtime is older than the archive file itself
    message(STATUS "Unpacked ${unpacked}")
  endforeach()
endfunction()
drift_unpack_test_data()
