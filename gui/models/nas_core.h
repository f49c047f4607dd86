#pragma once
// pw_core's nas layer for Qt code: its headers use `slots` as a name
// (CspStage::slots()), which Qt defines as a keyword macro.
#pragma push_macro("slots")
#undef slots
#include "core/nas/nas_job.h"
#include "core/nas/search_space_names.h"
#pragma pop_macro("slots")
