# Precompiled headers and the tests' optimisation level (issue 42: build
# time), set here in one place once every target exists. Included by the
# top-level CMakeLists.txt, which also turns on unity builds (PW_FAST_BUILD).
# docs/build.md has the measurements behind each choice.
#
# Measured on one translation unit at a time (GCC 12, -O3, CPU seconds, the
# same sources and flags with and without the header; docs/build.md):
# - libtorch: a TU of engine/runtime takes 13-20 s, 6-8 s of it parsing
#   ATen, torch::nn/optim and c10d; with the header 6-14 s (-35 to -57 %).
#   The header costs 23 s to build and 3.7 s to load in every TU that uses
#   it, an empty one included: unity batches pay that once per 8 files.
# - core: nlohmann/json and the standard library are ~1 s of a 4-6 s TU
#   (-20 %), and gtest ~1.5 s of a core test's 7-8 s; 4-6 s once.
# - Qt: the widgets already have theirs (gui/CMakeLists.txt); for
#   pw_gui_models' and its tests' small TUs a <QtCore> header gained 0.7 s
#   on some and lost 0.6 s on others for a 12 s build of its own: none here.
# PW_PCH=OFF builds without them, which also checks that every file includes
# what it uses (a precompiled header can hide a missing #include).
option(PW_PCH "precompiled headers for libtorch (engine/runtime) and nlohmann/json (engine/core)" ON)

# Every target declared under a folder, its subfolders included.
function(pw_targets_under dir out)
  get_property(found DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s IN LISTS subs)
    pw_targets_under(${s} more)
    list(APPEND found ${more})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()
set(PW_TEST_TARGETS "")
if(PW_BUILD_TESTS)
  pw_targets_under(${PROJECT_SOURCE_DIR}/tests _all)
  foreach(t IN LISTS _all)
    get_target_property(_type ${t} TYPE)
    if(_type MATCHES "EXECUTABLE|LIBRARY" AND NOT _type STREQUAL "INTERFACE_LIBRARY")
      list(APPEND PW_TEST_TARGETS ${t})
    endif()
  endforeach()
endif()

# Tests at -O1 in Release: their own code only sets up and checks (the work is
# in pw_core and pw_runtime, still -O3, and libtorch), and -O3 made their
# files the build's slowest: test_zero_bubble.cpp 17.6 CPU s at -O3, 13.6 at
# -O2, 10.9 at -O1. Benchmarks keep -O3 (bench/ is not a test folder).
if(PW_FAST_BUILD)
  foreach(t IN LISTS PW_TEST_TARGETS)
    target_compile_options(${t} PRIVATE $<$<CONFIG:Release>:-O1>)
  endforeach()
endif()

# pw_core compiles file by file for now: its files' internal names clash in
# a batch (kInf in five planners, GiB, kNames, step(), ...) and were under
# edit by others' layering work when unity builds came (issue 42).
# tests/core likewise (Collect, error_of, ... in files under edit then).
foreach(t pw_core pw_core_tests)
  if(TARGET ${t})
    set_target_properties(${t} PROPERTIES UNITY_BUILD OFF)
  endif()
endforeach()
# The studio's targets too, until a unity build of them has been compiled
# (their moc output takes a build of their dependencies first; not done yet).
foreach(t IN LISTS PW_TEST_TARGETS ITEMS pw_gui_models pw_gui_widgets pipewright-studio pw_bench_gui)
  if(TARGET ${t} AND t MATCHES "gui|studio")
    set_target_properties(${t} PROPERTIES UNITY_BUILD OFF)
  endif()
endforeach()

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
  if(TARGET pw_runtime)
    target_precompile_headers(pw_runtime PRIVATE ${PW_TORCH_PCH})
    # One libtorch header for every target that links pw_runtime and
    # compiles libtorch code (it took 23 CPU s per target, each building
    # its own). GCC takes a header built with the same code model and
    # macros only, so these compile with pw_runtime's -fPIC; -O1 against
    # its -O3 is accepted (-Winvalid-pch says when one is not).
    set(_torch_users pw_runtime_nas pw_runtime_tests)
    if(PW_FAST_BUILD)
      list(APPEND _torch_users pw_nas_worker pipewright-train pw_replica_tests pw_migration_tests
           pw_nas_runtime_tests pw_torchscript_tests pw_gpu_tests)
    endif()
    foreach(t IN LISTS _torch_users)
      if(NOT TARGET ${t})
      elseif(PW_FAST_BUILD)
        target_compile_options(${t} PRIVATE -fPIC)
        target_precompile_headers(${t} REUSE_FROM pw_runtime)
      else()
        target_precompile_headers(${t} PRIVATE ${PW_TORCH_PCH})  # each its own, as before
      endif()
    endforeach()
  endif()
  if(TARGET pw_core)
    target_precompile_headers(pw_core PRIVATE ${PW_CORE_PCH})
  endif()
  if(TARGET pw_core_tests)
    target_precompile_headers(pw_core_tests PRIVATE ${PW_CORE_PCH} <gtest/gtest.h>)
  endif()
endif()
