# What the libtorch that find_package(Torch) found needs beside itself, for
# the two the engine builds against (engine/runtime/torch_compat.h is the
# C++ side):
#  - Debian's 1.13 (default, CI): CPU only; links the system libgloo, whose
#    headers are in /usr/include.
#  - PyTorch's 2.x wheel (the GPU machine, -DTorch_DIR=<wheel>/share/cmake/Torch):
#    Gloo is compiled into libtorch_cpu.so, so nothing to link; the wheel
#    ships c10d's headers but not Gloo's (PyTorch builds Gloo with
#    GLOO_INSTALL OFF), which ProcessGroupGloo.hpp includes: they come from
#    CMAKE_PREFIX_PATH (scripts/gpu-prepare carries Debian's into
#    out/gpu-deps/include; only declarations are used from them).
# Sets PW_TORCH_VERSION, PW_GLOO_LIBRARIES and PW_GLOO_INCLUDE_DIRS.
set(PW_TORCH_VERSION "${Torch_VERSION}")
if(NOT PW_TORCH_VERSION)
  # No version file next to TorchConfig.cmake: read torch/version.h.
  find_file(PW_TORCH_VERSION_H torch/version.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  if(PW_TORCH_VERSION_H)
    file(STRINGS "${PW_TORCH_VERSION_H}" _v REGEX "#define TORCH_VERSION_M(AJOR|INOR) ")
    string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*" "\\1.\\2" PW_TORCH_VERSION "${_v}")
  endif()
endif()
if(NOT PW_TORCH_VERSION)
  message(FATAL_ERROR "pipewright: cannot tell which libtorch this is (no Torch_VERSION, no torch/version.h)")
endif()

if(PW_TORCH_VERSION VERSION_LESS 2.0)
  find_library(PW_GLOO_LIB gloo REQUIRED)
  set(PW_GLOO_LIBRARIES ${PW_GLOO_LIB})
else()
  set(PW_GLOO_LIBRARIES "")
endif()

find_path(PW_GLOO_INCLUDE_DIR gloo/algorithm.h HINTS ${TORCH_INCLUDE_DIRS})
if(NOT PW_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "pipewright: Gloo's headers (gloo/algorithm.h) are in neither libtorch's include "
                      "directories nor CMAKE_PREFIX_PATH: with PyTorch's wheel, run scripts/gpu-prepare and "
                      "configure with -DCMAKE_PREFIX_PATH=<repo>/out/gpu-deps")
endif()
# Never name a compiler's own directory (-isystem /usr/include breaks #include_next).
set(PW_GLOO_INCLUDE_DIRS "")
if(NOT PW_GLOO_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES AND
   NOT PW_GLOO_INCLUDE_DIR IN_LIST TORCH_INCLUDE_DIRS)
  set(PW_GLOO_INCLUDE_DIRS ${PW_GLOO_INCLUDE_DIR})
endif()

set(PW_TORCH_CUDA OFF)
if(TARGET torch_cuda OR TARGET c10_cuda)
  set(PW_TORCH_CUDA ON)
endif()
if(PW_GLOO_LIBRARIES)
  set(_gloo_lib "${PW_GLOO_LIBRARIES}")
else()
  set(_gloo_lib "inside libtorch")
endif()
message(STATUS "pipewright: libtorch ${PW_TORCH_VERSION} (CUDA ${PW_TORCH_CUDA}); Gloo: ${_gloo_lib}, headers in "
               "${PW_GLOO_INCLUDE_DIR}")
