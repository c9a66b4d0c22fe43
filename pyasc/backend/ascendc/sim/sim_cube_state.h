// ascend-sim: the per-block state of the cube path and of pipe synchronisation.
//
// Data only (the APIs are in sim_sync.h and sim_cube.h). The cube memories L1, L0A, L0B
// and L0C are byte arrays of the SoC's sizes, allocated on first use and filled with
// 0xFF (stale data reads as NaN or -1). Every 32-byte granule of them has a shadow record:
// the operation that last wrote it and, per pipe, the last one that read it. Operations
// are numbered per pipe; `known[p][q]` is the newest operation of pipe q that pipe p's
// next operation is ordered after (a vector clock advanced by WaitFlag and PipeBarrier).
#pragma once

#include <memory>
#include <vector>

#include "sim_base.h"

// ---- SoC configuration of the cube unit (the runner passes -D for other SoCs) ----------
#ifndef PYASC_SIM_L1_BYTES
#define PYASC_SIM_L1_BYTES (512 * 1024 - 256)  // 910B L1 less the platform reserve
#endif
#ifndef PYASC_SIM_L0A_BYTES
#define PYASC_SIM_L0A_BYTES (64 * 1024)
#endif
#ifndef PYASC_SIM_L0B_BYTES
#define PYASC_SIM_L0B_BYTES (64 * 1024)
#endif
#ifndef PYASC_SIM_L0C_BYTES
#define PYASC_SIM_L0C_BYTES (128 * 1024)
#endif

namespace pyasc_sim {

// The physical memory a LocalTensor lives in.
enum class Mem : uint8_t { UB, L1, L0A, L0B, L0C, COUNT };

inline const char* mem_name(Mem m) {
  constexpr const char* names[] = {"UB", "L1", "L0A", "L0B", "L0C"};
  return names[static_cast<int>(m)];
}

inline constexpr uint32_t mem_bytes(Mem m) {
  switch (m) {
    case Mem::L1: return PYASC_SIM_L1_BYTES;
    case Mem::L0A: return PYASC_SIM_L0A_BYTES;
    case Mem::L0B: return PYASC_SIM_L0B_BYTES;
    case Mem::L0C: return PYASC_SIM_L0C_BYTES;
    default: return PYASC_SIM_UB_BYTES;
  }
}

inline constexpr uint32_t kGranule = 32;
inline constexpr int kPipes = PIPE_FIX + 1;  // indexed by pipe_t
inline constexpr int kReaders = 5;           // MTE2, MTE1, M, FIX, any other pipe

inline int reader_slot(pipe_t p) {
  switch (p) {
    case PIPE_MTE2: return 0;
    case PIPE_MTE1: return 1;
    case PIPE_M: return 2;
    case PIPE_FIX: return 3;
    default: return 4;
  }
}

inline const char* pipe_name(int p) {
  constexpr const char* names[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "ALL", "MTE4", "MTE5", "V2", "FIX"};
  return p >= 0 && p < kPipes ? names[p] : "?";
}

// One operation on a pipe that touched tracked memory: what it was and where it was issued.
struct OpRecord {
  uint8_t pipe = 0;
  uint32_t seq = 0;
  const char* api = "";
  SrcLoc loc{};
};

struct Granule {
  uint32_t writer = 0;            // index into CubeState::ops, 0 = never written
  uint32_t reader[kReaders] = {};  // last reader per pipe slot
};

struct CubeMem {
  std::vector<uint8_t> bytes;
  std::vector<Granule> shadow;
  bool ready() const { return !bytes.empty(); }
};

struct FlagSlot {
  bool set = false;
  SrcLoc where{};
  uint32_t snapshot[kPipes] = {};
};

inline constexpr int kEvents = static_cast<int>(AscendC::HardEvent::MAX);
inline constexpr int kEventIds = 8;  // EVENT_ID0..7 on 910B

// One feature-map register (SetFmatrix): the L1 image's height, width and padding
// [left, right, top, bottom]; `set` is false until a SetFmatrix or a LoadData 3D writes it.
struct Fmatrix {
  bool set = false;
  uint16_t h = 0, w = 0;
  uint8_t pad[4] = {};
};

struct CubeState {
  CubeMem mem[static_cast<int>(Mem::COUNT)];
  Fmatrix fmatrix[2];           // FMATRIX_LEFT, FMATRIX_RIGHT (LoadData 3D's fMatrixCtrl picks one)
  uint32_t pad_bits = 0;        // SetLoadDataPaddingValue's value, as the element's bit pattern
  bool pad_set = false;
  std::vector<OpRecord> ops = std::vector<OpRecord>(1);  // ops[0]: "nothing"
  uint32_t issued[kPipes] = {};
  uint32_t known[kPipes][kPipes] = {};
  uint32_t barrier[kPipes] = {};  // issued[p] at the last PipeBarrier<p> (same-pipe order)
  FlagSlot flags[kEvents][kEventIds];

  CubeMem& memory(Mem m) {
    CubeMem& cm = mem[static_cast<int>(m)];
    if (!cm.ready()) {
      cm.bytes.assign(mem_bytes(m), PYASC_SIM_UB_FILL);
      cm.shadow.assign(mem_bytes(m) / kGranule + 1, Granule{});
    }
    return cm;
  }
};

}  // namespace pyasc_sim
