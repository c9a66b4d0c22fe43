// ascend-sim: pyasc's host model of the AscendC API subset its code generator emits.
//
// A generated kernel does `#include "kernel_operator.h"` and `using namespace AscendC;`
// exactly as for bisheng; compiled with the host C++ compiler against this directory it runs
// on the CPU, block by block, and stops with a named violation wherever real hardware would
// silently truncate, hang or corrupt. See README.md for what is and is not modeled.
#pragma once

#include "sim_base.h"    // macros, enums, SrcLoc, Violation
#include "sim_fp16.h"    // half, bfloat16_t, directed rounding
#include "sim_state.h"   // per-block state, counters
#include "sim_tensor.h"  // GlobalTensor, LocalTensor (and sim_dcache.h: DataCacheCleanAndInvalid)
#include "sim_pipe.h"    // TPipe, TQue, TBuf, GetBlockIdx
#include "sim_sync.h"    // SetFlag, WaitFlag, PipeBarrier; pipe-order checks
#include "sim_copy.h"    // DataCopy, DataCopyPad
#include "sim_vec.h"     // elementwise count-form APIs, Duplicate
#include "sim_cast.h"    // Cast
#include "sim_cmpsel.h"  // Compare, Select, reductions, Sigmoid
#include "sim_gather.h"  // Gather, CreateVecIndex (in-UB shifts of the stencil kernels)
#include "sim_cube.h"    // Nd2Nz DataCopy, LoadData, Mmad, Fixpipe (cube unit)
#include "sim_load3d.h"  // LoadData 3D v2 (img2col), SetFmatrix, SetLoadDataPaddingValue
#include "sim_mix.h"     // MIX kernels: core types, CrossCoreSetFlag/WaitFlag

// The standard containers of the model's own state are instantiated once per configuration,
// in the launch object (sim/launch_object.py), not in every library: with
// PYASC_SIM_EXTERN_LAUNCH a library declares them extern (at -O0 GCC then neither
// instantiates nor emits their members: a quarter of a small kernel's object code) and
// the object defines them.  Plain builds instantiate them as usual.
#ifdef PYASC_SIM_EXTERN_LAUNCH
#ifdef PYASC_SIM_LAUNCH_OBJECT
#define PYASC_SIM_CONTAINER template
#else
#define PYASC_SIM_CONTAINER extern template
#endif
PYASC_SIM_CONTAINER class std::vector<pyasc_sim::GmWrite>;
PYASC_SIM_CONTAINER class std::vector<pyasc_sim::GmRegion>;
PYASC_SIM_CONTAINER class std::vector<pyasc_sim::HandOff>;
PYASC_SIM_CONTAINER class std::vector<pyasc_sim::OpRecord>;
PYASC_SIM_CONTAINER class std::vector<pyasc_sim::Granule>;
PYASC_SIM_CONTAINER class std::vector<uint8_t>;
PYASC_SIM_CONTAINER class std::vector<uint32_t>;
PYASC_SIM_CONTAINER class std::vector<float>;
PYASC_SIM_CONTAINER class std::deque<pyasc_sim::CrossSet>;
PYASC_SIM_CONTAINER class std::unordered_map<uintptr_t, pyasc_sim::DirtyLine>;
#undef PYASC_SIM_CONTAINER
#endif
