# Precompiled headers (issue 42: build time), set here in one place for the
# targets whose translation units parse the same large headers again and
# again. Included by the top-level CMakeLists.txt after every target exists.
# Each target builds its own (its flags differ: -fPIC, gtest's definitions),
# once, before its sources.
#
# Measured on one translation unit at a time (GCC 12, -O3, CPU seconds, the
# same sources and flags with and without the header; docs/build.md):
# - libtorch: a TU of engine/runtime takes 13-20 s, 6-8 s of it parsing
#   ATen, torch::nn/optim and c10d; with the header 6-14 s (-35 to -57 %).
#   The header costs 23 s once per target; a TU that includes no torch
#   header pays ~2 s to load it (7 of pw_runtime's 57), still far ahead.
# - core: nlohmann/json and the standard library are ~1 s of a 4-6 s TU
#   (-20 %), and gtest ~1.5 s of a core test's 7-8 s; 4-6 s once.
# - Qt: the widgets already have theirs (gui/CMakeLists.txt); for
#   pw_gui_models' and its tests' small TUs a <QtCore> header gained 0.7 s
#   on some and lost 0.6 s on others for a 12 s build of its own: none here.
# PW_PCH=OFF builds without them, which also checks that every file includes
# what it uses (a precompiled header can hide a missing #include).
option(PW_PCH "precompiled headers for libtorch (engine/runtime) and nlohmann/json (engine/core)" ON)
if(PW_PCH)
  # What most engine/runtime TUs include (counted over the sources), and all
  # present in libtorch 1.13 and the 2.x wheel alike.
  set(PW_TORCH_PCH
      <ATen/ATen.h>
      <torch/nn/modules/container/sequential.h>
      <torch/nn/functional/loss.h>
      <torch/optim/adam.h>
      <torch/optim/sgd.h>
      <torch/utils.h>
      <torch/csrc/distributed/c10d/Store.hpp>
      <torch/csrc/distributed/c10d/FileStore.hpp>
      <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
  set(PW_CORE_PCH <nlohmann/json.hpp> <algorithm> <functional> <map> <memory> <optional> <string> <vector>)
  foreach(t pw_runtime pw_runtime_nas pw_runtime_tests)
    if(TARGET ${t})
      target_precompile_headers(${t} PRIVATE ${PW_TORCH_PCH})
    endif()
  endforeach()
  if(TARGET pw_core)
    target_precompile_headers(pw_core PRIVATE ${PW_CORE_PCH})
  endif()
  if(TARGET pw_core_tests)
    target_precompile_headers(pw_core_tests PRIVATE ${PW_CORE_PCH} <gtest/gtest.h>)
  endif()
endif()
