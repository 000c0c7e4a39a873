# What `drift --version` prints (apps/version.cpp): the project version, the commit the binary was
# built from, and whether CUDA is built in and for which architectures. The commit is read at
# every build, not only at configure time, so a rebuild after a commit never reports the old
# one; the header is rewritten only when its text changes, so nothing recompiles otherwise.
set(DRIFT_BUILD_INFO_DIR "${PROJECT_BINARY_DIR}/generated")
set(DRIFT_BUILD_INFO_HEADER "${DRIFT_BUILD_INFO_DIR}/drift_build_info.h")
if(DRIFT_CUDA)
  string(REPLACE ";" "," drift_cuda_architectures "${CMAKE_CUDA_ARCHITECTURES}")
else()
  set(drift_cuda_architectures "")
endif()
add_custom_target(drift_build_info
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${DRIFT_BUILD_INFO_HEADER}
          -DVERSION=${PROJECT_VERSION} -DCUDA_ARCHITECTURES=${drift_cuda_architectures}
          -P ${CMAKE_CURRENT_LIST_DIR}/write_build_info.cmake
  BYPRODUCTS ${DRIFT_BUILD_INFO_HEADER}
  COMMENT "drift --version: reading the commit"
  VERBATIM)
