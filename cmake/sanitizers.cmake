# DRIFT_SANITIZE / DRIFT_FUZZ (options in the top-level CMakeLists.txt). Included before any
# target exists, so the flags reach every target: the engine, the tests, the ABI test plugins
# (.so) and the fuzz targets, in C and C++.
#   DRIFT_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer, any error fatal. -O1 -g1 keeps
#                   the build quick and the stacks readable (they come after the build type's
#                   -O/-g, so they win; kernels/cpu keeps its own -O3).
#   DRIFT_FUZZ:     (clang only; implies DRIFT_SANITIZE) SanitizerCoverage on all code and the
#                   libFuzzer targets of tests/fuzz, each linked with -fsanitize=fuzzer.
if(DRIFT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DRIFT_FUZZ needs clang: configure with -DCMAKE_C_COMPILER=clang "
                        "-DCMAKE_CXX_COMPILER=clang++ (found ${CMAKE_CXX_COMPILER_ID})")
  endif()
  set(DRIFT_SANITIZE ON)
endif()

if(DRIFT_SANITIZE)
  set(DRIFT_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all)
  add_compile_options(${DRIFT_SANITIZER_FLAGS} -fno-omit-frame-pointer -O1 -g1)
  add_link_options(${DRIFT_SANITIZER_FLAGS})
  message(STATUS "DriftEngine: building with ASan + UBSan")
endif()

if(DRIFT_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
  add_link_options(-fsanitize=fuzzer-no-link)
  message(STATUS "DriftEngine: building the libFuzzer targets (tests/fuzz)")
endif()
