# The CUDA backend is compiled whenever nvcc is found (CI included: it has nvcc but no GPU, so
# the GPU tests skip there). Architectures are explicit: 90a (H100/H200, wgmma-capable) by
# default; override with -DCMAKE_CUDA_ARCHITECTURES=... . The hardening builds (ASan/UBSan,
# libFuzzer, clang) leave it out: they check the host code, and nvcc takes no sanitizer flags.
include(CheckLanguage)
set(DRIFT_CUDA_DEFAULT OFF)
if(NOT DRIFT_SANITIZE)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(DRIFT_CUDA_DEFAULT ON)
  endif()
endif()
option(DRIFT_CUDA "Build the CUDA backend (kernels/cuda, core/cuda)" ${DRIFT_CUDA_DEFAULT})
if(DRIFT_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90a)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flag for nvcc; the .cu files need only C++17
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "DriftEngine: CUDA backend for architectures ${CMAKE_CUDA_ARCHITECTURES} (nvcc ${CMAKE_CUDA_COMPILER_VERSION})")
else()
  message(STATUS "DriftEngine: no CUDA backend in this build")
endif()
