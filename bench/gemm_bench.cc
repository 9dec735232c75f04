// lowbit's GEMM throughput for every available kernel, and every installed peer's on the same
// cases: lowbit/<kernel>/<M>x<N>x<K>/threads:<t> with the uint8 -> uint8
// QuantizeDownInt32ByFixedPoint + saturating cast pipeline; and lowbit's narrow settings
// (lowbit/<kernel>_<setting>/...), requantizing inside the timed call. The run ends with a
// summary of the medians side by side, with ratios (bench/summary_reporter.h). With
// --pairs=REGEX[,REGEX...] the cases selected run in paired rounds instead (bench/paired_rounds.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_common.h"
#include "bench/lowbit_cases.h"
#include "bench/paired_rounds.h"
#include "bench/summary_reporter.h"
#include "lowbit/lowbit.h"

namespace lowbit_bench {
namespace {

// The ceilings each AVX2 case is measured against: the 8-bit GEMM's and the narrow settings'
// arithmetic, and their tiles' whole steps. (Prepacked weights go through
// other tiles, the matrix-vector one a pmaddubsw tile on a memory-bound stream.)
lowbit_bench::SummaryReporter::Ceilings Avx2Ceilings() {
  lowbit_bench::SummaryReporter::Ceilings ceilings;
  ceilings.arithmetic["avx2"] = "vpmaddwd_vpaddd";
  ceilings.tile_step["avx2"] = "pair_tile_step";
  for (const LowbitSetting& setting : LowbitSettings()) {
    if (setting.kernel != lowbit::Kernel::kAvx2 || setting.narrow == nullptr ||
        setting.narrow->ceiling == nullptr) {
      continue;
    }
    ceilings.arithmetic[setting.name] = setting.narrow->ceiling;
    ceilings.tile_step[setting.name] = setting.narrow->tile_step;
  }
  return ceilings;
}

// The AVX-512 VNNI kernel's (`arithmetic` vpdpbusd, `tile_step` dot_tile_step, `tile_in_blocks`
// vnni_tile_in_blocks) or the AMX kernel's (tdpbsud, amx_tile_step, amx_tile_in_blocks): each runs
// prepacked weights and the narrow settings through its 8-bit tile too, but 1 x 1 bits, measured
// against one AND and popcount a product (the bit-serial kernel's, which the dispatch picks for the
// larger shapes), and 1 x 2 bits, bit-serial on some shapes and not others, measured against no
// ceiling.
lowbit_bench::SummaryReporter::Ceilings Avx512Ceilings(lowbit::Kernel kernel,
                                                       const char* arithmetic,
                                                       const char* tile_step,
                                                       const char* tile_in_blocks) {
  lowbit_bench::SummaryReporter::Ceilings ceilings;
  for (const LowbitSetting& setting : LowbitSettings()) {
    if (setting.kernel != kernel) continue;
    const bool one_bit = setting.narrow != nullptr && setting.narrow->params.lhs_bits == 1 &&
                         setting.narrow->params.rhs_bits == 1;
    if (MayRunBitSerial(setting.narrow) && !one_bit) continue;
    ceilings.arithmetic[setting.name] = one_bit ? "vpandd_vpopcntd_vpaddd" : arithmetic;
    if (one_bit) continue;
    ceilings.tile_step[setting.name] = tile_step;
    // The tile alone, on unpacked operands' blocks: the GEMMs that pack both.
    if (tile_in_blocks != nullptr && !setting.prepack) {
      ceilings.tile_in_blocks[setting.name] = tile_in_blocks;
    }
  }
  return ceilings;
}

// Threads asked for where they may not pay, for the fastest kernel alone: 128^3 and 256^3 on 2
// threads, and more threads than a small machine has cores. A GEMM runs no more threads than the
// cores, and on one thread where its shape ran faster so, so each should match the better of 1
// and 2 threads (Cases() has the rest).
std::vector<Case> OversubscribedCases() {
  std::vector<Case> cases = {{{128, 128, 128}, 1}, {{128, 128, 128}, 2}, {{256, 256, 256}, 2}};
  for (int threads : {8, 1024}) {
    for (const Shape& shape : {Shape{256, 256, 256}, Shape{1024, 1024, 1024}}) {
      cases.push_back({shape, threads});
    }
  }
  return cases;
}

// The shapes on which the dispatch chooses between a bit-serial kernel and the 8-bit one
// (dispatch.cc's BitSerialPays), from a short lhs to 1024^3.
const std::vector<Case>& BitSerialChoiceCases() {
  static const std::vector<Case> cases = {{{1, 1024, 1024}, 1},  {{8, 1024, 1024}, 1},
                                          {{64, 1024, 1024}, 1}, {{256, 256, 256}, 1},
                                          {{512, 512, 512}, 1},  {{1024, 1024, 1024}, 1}};
  return cases;
}

// The narrow settings run on the shapes of their targets only, and those that may run bit-serially
// on the shapes of that choice, where the kernel has bit-serial implementations on this CPU; 8-bit
// GEMMs on those shapes too, to be measured against, and 8-bit prepacked weights on the 4-bit
// weights' shapes.
std::vector<Case> CasesOf(const LowbitSetting& setting) {
  if (setting.narrow == &kFourBitWeights) return MemoryBoundCases();
  const bool bit_serial_choice = HasBitSerialKernels(setting.kernel);
  if (setting.narrow != nullptr && bit_serial_choice && MayRunBitSerial(setting.narrow)) {
    return BitSerialChoiceCases();
  }
  if (setting.narrow != nullptr) return {{{1024, 1024, 1024}, 1}, {{256, 256, 256}, 1}};
  std::vector<Case> cases = Cases();
  if (bit_serial_choice) {
    for (const Case& c : BitSerialChoiceCases()) {
      if (std::find(cases.begin(), cases.end(), c) == cases.end()) cases.push_back(c);
    }
  }
  if (setting.prepack) {
    cases.insert(cases.end(), MemoryBoundCases().begin(), MemoryBoundCases().end());
  }
  return cases;
}

void RegisterLowbit() {
  for (const LowbitSetting& setting : LowbitSettings()) {
    RegisterCases(
        "lowbit", setting.name, [setting](const Case& c) { return SetUpLowbit(setting, c); },
        CasesOf(setting));
  }
  const lowbit::Kernel best = lowbit::AvailableKernels().back();
  const LowbitSetting best_alone{lowbit::KernelName(best), best, false, nullptr};
  RegisterCases(
      "lowbit", best_alone.name, [best_alone](const Case& c) { return SetUpLowbit(best_alone, c); },
      OversubscribedCases());
}

}  // namespace
}  // namespace lowbit_bench

int main(int argc, char** argv) {
  lowbit_bench::RegisterLowbit();
  for (auto register_cases : lowbit_bench::Registrations()) register_cases();
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--pairs=", 0) != 0) continue;
    lowbit_bench::PairedRoundsOptions options;
    std::string error;
    if (!lowbit_bench::ParsePairedRoundsOptions(argc, argv, &options, &error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    return lowbit_bench::RunPairedRounds(options);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const lowbit::Kernel best = lowbit::Context().ResolvedKernel();
  lowbit_bench::SummaryReporter reporter(
      benchmark::CreateDefaultDisplayReporter(), lowbit::KernelName(best),
      best == lowbit::Kernel::kAvx2 ? lowbit_bench::Avx2Ceilings()
      : best == lowbit::Kernel::kAvx512Vnni
          ? lowbit_bench::Avx512Ceilings(best, "vpdpbusd", "dot_tile_step", "vnni_tile_in_blocks")
      : best == lowbit::Kernel::kAmx
          ? lowbit_bench::Avx512Ceilings(best, "tdpbsud", "amx_tile_step", "amx_tile_in_blocks")
          : lowbit_bench::SummaryReporter::Ceilings{});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
