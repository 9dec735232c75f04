// lowbit's benchmark cases, shared by gemm_bench and gemm_repeat: the operands' layout, offsets
// and output pipeline of every lowbit/<kernel>[_prepacked|_<setting>]/... case, and the narrow
// settings.
#ifndef LOWBIT_BENCH_LOWBIT_CASES_H_
#define LOWBIT_BENCH_LOWBIT_CASES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/bench_common.h"
#include "lowbit/internal/driver/context_state.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/lowbit.h"

namespace lowbit_bench {

// One context per kernel and thread count, kept for the whole run as an engine keeps its own:
// what a context learns (its pool, its scratch, which shapes threads pay for) carries over from
// one run of a case to the next, as it does from one call of an engine to the next. An `untimed`
// context learns nothing: it runs the dispatch rule's kernel and thread count for every shape.
inline lowbit::Context& EngineContext(lowbit::Kernel kernel, int threads, bool untimed) {
  static std::map<std::tuple<lowbit::Kernel, int, bool>, std::unique_ptr<lowbit::Context>> contexts;
  std::unique_ptr<lowbit::Context>& context = contexts[{kernel, threads, untimed}];
  if (context == nullptr) {
    context = std::make_unique<lowbit::Context>();
    context->set_kernel(kernel);
    context->set_max_num_threads(threads);
    if (untimed) context->state().DisableMeasuredChoices();
  }
  return *context;
}

struct LowbitProblem {
  LowbitProblem(const Shape& s, lowbit::Context& engine_context)
      : operands(s), context(engine_context) {}
  Uint8Operands operands;
  lowbit::Context& context;
  std::unique_ptr<lowbit::PrepackedRhs> prepacked_rhs;
};

// A narrow setting: its name in the benchmark, its parameters, and the instruction ceiling
// (bench/ceiling_x86.cc) of its AVX2 kernel's arithmetic and of its tile's whole step, or null
// where that kernel is bit-serial, for which no AVX2 ceiling is measured.
struct BitDepthSetting {
  const char* name;
  lowbit::BitDepthParams params;
  const char* ceiling;
  const char* tile_step;
};

// The narrow targets: requantized 7 x 5 and 4 x 4 bits, 7-bit lhs data declared as such
// against a full 8-bit rhs (exact), and 1 x 1 and 2 x 2 bits both ways; the same run's 8-bit cases
// are the baseline.
inline const BitDepthSetting kBitDepthSettings[] = {
    {"L7R5",
     {7, 5, lowbit::BitDepthRounding::kAuto, 1, lowbit::BitDepthMode::kRequantize},
     "vpmaddubsw_vpaddw",
     "narrow_tile_step_k8"},
    {"L4R4",
     {4, 4, lowbit::BitDepthRounding::kAuto, 1, lowbit::BitDepthMode::kRequantize},
     "vpmaddubsw_vpaddw",
     "narrow_tile_step_k128"},
    {"declared_L7R8",
     {7, 8, lowbit::BitDepthRounding::kNearest, 0, lowbit::BitDepthMode::kDeclaredRange},
     "vpmaddubsw_vpmaddwd_vpaddd",
     "one_step_tile_step"},
    // The bit-serial targets, requantized and declared.
    {"L1R1",
     {1, 1, lowbit::BitDepthRounding::kAuto, 1, lowbit::BitDepthMode::kRequantize},
     nullptr,
     nullptr},
    {"L2R2",
     {2, 2, lowbit::BitDepthRounding::kAuto, 1, lowbit::BitDepthMode::kRequantize},
     "vpmaddubsw_vpaddw",
     "narrow_tile_step_k128"},
    {"declared_L1R1",
     {1, 1, lowbit::BitDepthRounding::kNearest, 0, lowbit::BitDepthMode::kDeclaredRange},
     nullptr,
     nullptr},
    {"declared_L2R2",
     {2, 2, lowbit::BitDepthRounding::kNearest, 0, lowbit::BitDepthMode::kDeclaredRange},
     "vpmaddubsw_vpaddw",
     "narrow_tile_step_k128"},
    // 1 x 2 bits, bit-serial with AVX-512 VNNI for larger GEMMs and prepacked weights.
    {"declared_L1R2",
     {1, 2, lowbit::BitDepthRounding::kNearest, 0, lowbit::BitDepthMode::kDeclaredRange},
     "vpmaddubsw_vpaddw",
     "narrow_tile_step_k128"},
};

// The settings of fewer than 3 bits in all (1 x 1 and 1 x 2 bits), which the dispatch runs through
// the bit-serial kernel or not by the GEMM's shape (dispatch.cc's BitSerialPays).
inline bool MayRunBitSerial(const BitDepthSetting* narrow) {
  return narrow != nullptr && narrow->params.lhs_bits + narrow->params.rhs_bits <= 3;
}

// Whether the driver times the bit-serial kernel against the other for this setting on `kernel`
// for some shape (dispatch.cc's BitSerialIsTimed): beside the settings of MayRunBitSerial, 2 x 2
// bits with AVX-512 VNNI, which no rule runs bit-serially.
inline bool MayBeTimed(lowbit::Kernel kernel, const BitDepthSetting& narrow) {
  for (int uses = 1; uses <= 4096; uses *= 2) {
    if (lowbit::internal::GetTimedAlternativeImplementation(kernel, narrow.params.lhs_bits,
                                                            narrow.params.rhs_bits, uses)) {
      return true;
    }
  }
  return false;
}

// Whether `kernel` has bit-serial implementations on this CPU (AVX-512 ones need VPOPCNTDQ), which
// the dispatch may choose for the settings of MayRunBitSerial.
inline bool HasBitSerialKernels(lowbit::Kernel kernel) {
  return lowbit::internal::GetBitSerialKernelImplementation(kernel, 1, 1) != nullptr;
}

// Prepacked weights declared 4-bit, against an 8-bit lhs: the memory-bound matrix-vector target.
inline const BitDepthSetting kFourBitWeights = {
    "R4",
    {8, 4, lowbit::BitDepthRounding::kNearest, 0, lowbit::BitDepthMode::kDeclaredRange},
    "vpmaddubsw_vpaddw",
    "narrow_tile_step_k8"};

// The shapes of the 4-bit weights' target, whose 8-bit weights (16 MiB) are beyond L2.
inline const std::vector<Case>& MemoryBoundCases() {
  static const std::vector<Case> cases = {{{1, 4096, 4096}, 1}, {{8, 4096, 4096}, 1}};
  return cases;
}

// A lowbit setting of the suite, by its name in the cases (lowbit/<name>/...): a kernel alone
// (<kernel>), with prepacked weights (<kernel>_prepacked), narrow (<kernel>_<narrow name>), or
// narrow with prepacked weights (<kernel>_prepacked_<narrow name>: 4-bit weights, and the declared
// bit depths that may run bit-serially). On kernels with bit-serial implementations, the bit
// depths that may run bit-serially, and those the driver times (MayBeTimed), come once more
// untimed (<kernel>_<narrow name>_untimed): the dispatch rule's kernel alone, without the timed
// choice between the bit-serial kernel and the other (doc/less-than-8-bit.md, "Timed close
// calls"), which the same run measures against it.
struct LowbitSetting {
  std::string name;
  lowbit::Kernel kernel;
  bool prepack;
  const BitDepthSetting* narrow;  // null for 8-bit operands
  bool untimed = false;
};

// Every lowbit setting this CPU runs, in the order gemm_bench registers them.
inline std::vector<LowbitSetting> LowbitSettings() {
  std::vector<LowbitSetting> settings;
  for (lowbit::Kernel kernel : lowbit::AvailableKernels()) {
    const std::string name = lowbit::KernelName(kernel);
    const bool has_bit_serial_kernels = HasBitSerialKernels(kernel);
    settings.push_back({name, kernel, false, nullptr});
    settings.push_back({name + "_prepacked", kernel, true, nullptr});
    settings.push_back({name + "_prepacked_R4", kernel, true, &kFourBitWeights});
    for (const BitDepthSetting& narrow : kBitDepthSettings) {
      settings.push_back({name + "_" + narrow.name, kernel, false, &narrow});
      const bool may_run_bit_serial = MayRunBitSerial(&narrow);
      if ((may_run_bit_serial && has_bit_serial_kernels) || MayBeTimed(kernel, narrow)) {
        settings.push_back({name + "_" + narrow.name + "_untimed", kernel, false, &narrow, true});
      }
      if (may_run_bit_serial && narrow.params.mode == lowbit::BitDepthMode::kDeclaredRange) {
        settings.push_back({name + "_prepacked_" + narrow.name, kernel, true, &narrow});
      }
    }
  }
  return settings;
}

// With `prepack`, the rhs (the weights) is packed once here, outside the timed calls. With a
// narrow setting, the GEMM is narrow; in declared-range mode the lhs is made to fit its bits.
inline std::function<void()> SetUpLowbit(const LowbitSetting& setting, const Case& c) {
  const Shape& s = c.shape;
  const bool prepack = setting.prepack;
  const lowbit::BitDepthParams* bit_depth =
      setting.narrow != nullptr ? &setting.narrow->params : nullptr;
  auto problem =
      std::make_shared<LowbitProblem>(s, EngineContext(setting.kernel, c.threads, setting.untimed));
  if (bit_depth != nullptr && bit_depth->mode == lowbit::BitDepthMode::kDeclaredRange) {
    for (std::uint8_t& value : problem->operands.lhs) value >>= 8 - bit_depth->lhs_bits;
    for (std::uint8_t& value : problem->operands.rhs) value >>= 8 - bit_depth->rhs_bits;
  }
  const lowbit::MatrixMap<const std::uint8_t> rhs(problem->operands.rhs.data(), s.depth, s.cols,
                                                  lowbit::Order::kColMajor);
  if (prepack && bit_depth != nullptr) {
    problem->prepacked_rhs =
        std::make_unique<lowbit::PrepackedRhs>(&problem->context, rhs, *bit_depth);
  } else if (prepack) {
    problem->prepacked_rhs = std::make_unique<lowbit::PrepackedRhs>(&problem->context, rhs);
  }
  const lowbit::BitDepthParams narrow =
      bit_depth != nullptr ? *bit_depth : lowbit::BitDepthParams{};
  return [problem, s, rhs, narrow, bit_depth] {
    const lowbit::MatrixMap<const std::uint8_t> lhs(problem->operands.lhs.data(), s.rows, s.depth,
                                                    lowbit::Order::kRowMajor);
    lowbit::MatrixMap<std::uint8_t> result(problem->operands.result.data(), s.rows, s.cols,
                                           lowbit::Order::kColMajor);
    const auto pipeline =
        std::make_tuple(lowbit::OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 15, 128},
                        lowbit::OutputStageSaturatingCastToUint8{});
    if (bit_depth != nullptr && problem->prepacked_rhs != nullptr) {
      lowbit::GemmWithOutputPipeline(&problem->context, lhs, *problem->prepacked_rhs, &result, -128,
                                     -128, pipeline, narrow);
    } else if (bit_depth != nullptr) {
      lowbit::GemmWithOutputPipeline(&problem->context, lhs, rhs, &result, -128, -128, pipeline,
                                     narrow);
    } else if (problem->prepacked_rhs != nullptr) {
      lowbit::GemmWithOutputPipeline(&problem->context, lhs, *problem->prepacked_rhs, &result, -128,
                                     -128, pipeline);
    } else {
      lowbit::GemmWithOutputPipeline(&problem->context, lhs, rhs, &result, -128, -128, pipeline);
    }
  };
}

}  // namespace lowbit_bench

#endif  // LOWBIT_BENCH_LOWBIT_CASES_H_
