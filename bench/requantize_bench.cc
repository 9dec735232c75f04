// The requantization pass on its own (lowbit/internal/driver/bit_depth.h, RequantizeLines), as
// the driver runs it while packing an operand of a requantized GEMM: row-major uint8 lines (lhs
// rows, or the columns of a column-major rhs) to 4 bits, on the run of each kernel's ISA (the
// reference and SSE4.1 kernels share the SSE2 baseline run). One thread; the time of a pass over
// 1024 x 1024 values is the time per million, items_per_second counts values.
//   requantize/<kernel>/<lines>x<depth>/<rounding>   rounding: nearest or xorshift
// And the kernel's rhs packer on the same lines, as they are and, where the kernel requantizes as
// it packs (KernelImplementation::pack_rhs_requantizing), requantized to 4 bits as it reads them
// (add-mod-97), stored as the 8-bit values they stand for, as the 8-bit tile of a requantized
// 4 x 4-bit GEMM takes them. Both packers take a call per scratch's worth of lines
// (max(lhs_rows, rhs_cols), 32 with AVX-512 VNNI), as the driver requantizes them, the blocks'
// phases hashed beforehand, as a context keeps them from one GEMM to the next.
//   pack/<kernel>/<lines>x<depth>/<plain|requantized>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/requantize.h"
#include "lowbit/lowbit.h"

namespace lowbit_bench {
namespace {

struct Pass {
  std::vector<std::uint8_t> source;
  std::vector<std::uint8_t> out;
  std::vector<std::int32_t> sums;
  std::vector<std::uint32_t> work;
  std::vector<std::uint8_t> phases;  // the pack/ cases' blocks' phases
};

void Register(lowbit::Kernel kernel, int lines, int depth, lowbit::BitDepthRounding rounding) {
  const std::string name =
      std::string("requantize/") + lowbit::KernelName(kernel) + "/" + std::to_string(lines) + "x" +
      std::to_string(depth) + "/" +
      (rounding == lowbit::BitDepthRounding::kNearest ? "nearest" : "xorshift");
  const std::size_t count = static_cast<std::size_t>(lines) * depth;
  auto pass = std::make_shared<Pass>();
  pass->source = RandomValues<std::uint8_t>(count, 0, 255, 5);
  pass->out.resize(count);
  pass->sums.resize(static_cast<std::size_t>(lines));
  const lowbit::internal::MatrixView view{pass->source.data(),
                                          lowbit::internal::ElementType::kUint8,
                                          lines,
                                          depth,
                                          lowbit::Order::kRowMajor,
                                          depth};
  pass->work.resize((lowbit::internal::RequantizeWorkBytes(view) + 3) / 4);
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    for (auto _ : state) {
      lowbit::internal::RequantizeLines(kernel, view, 4, rounding, 1,
                                        lowbit::internal::Operand::kLhs, pass->out.data(),
                                        pass->sums.data(), pass->work.data());
      benchmark::DoNotOptimize(pass->out.data());
      benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(count) * state.iterations());
  })->UseRealTime();
}

// The pack/ cases (above). `requantized`: with pack_rhs_requantizing, which the kernel has.
void RegisterPacking(lowbit::Kernel kernel, int lines, int depth, bool requantized) {
  namespace internal = lowbit::internal;
  const std::string name = std::string("pack/") + lowbit::KernelName(kernel) + "/" +
                           std::to_string(lines) + "x" + std::to_string(depth) + "/" +
                           (requantized ? "requantized" : "plain");
  const internal::KernelImplementation& implementation = internal::GetKernelImplementation(kernel);
  const internal::KernelFormat& format = implementation.format;
  const int panel_lines = format.rhs_cols;
  const std::size_t panel_bytes =
      internal::PackedBytes(format.rhs_type, static_cast<std::int64_t>(panel_lines) *
                                                 internal::RoundUp(depth, format.depth_group));
  // The driver's requantizing scratch holds max(lhs_rows, rhs_cols) lines; whole panels of them.
  const int call_lines = std::max(format.lhs_rows, format.rhs_cols) / panel_lines * panel_lines;
  const std::size_t count = static_cast<std::size_t>(lines) * depth;
  auto pass = std::make_shared<Pass>();
  pass->source = RandomValues<std::uint8_t>(count, 0, 255, 5);
  pass->out.resize(static_cast<std::size_t>(internal::RoundUp(lines, panel_lines) / panel_lines) *
                   panel_bytes);
  pass->sums.resize(static_cast<std::size_t>(lines));
  const internal::MatrixView view{pass->source.data(),
                                  internal::ElementType::kUint8,
                                  lines,
                                  depth,
                                  lowbit::Order::kRowMajor,
                                  depth};
  if (requantized) {
    pass->work.resize((internal::RequantizeWorkBytes(view) + 3) / 4);
    pass->phases.resize(internal::PhasesBytes(view));
    internal::HashPhases(kernel, view, 1, internal::Operand::kRhs, pass->phases.data());
  }
  benchmark::RegisterBenchmark(name.c_str(), [=, &implementation](benchmark::State& state) {
    for (auto _ : state) {
      for (int first = 0; first < lines; first += call_lines) {
        const int count_now = std::min(call_lines, lines - first);
        std::uint8_t* const packed = pass->out.data() + first / panel_lines * panel_bytes;
        // Packers add to the lines' sums: each call starts them at zero.
        std::fill_n(pass->sums.data() + first, count_now, 0);
        if (!requantized) {
          implementation.pack_rhs(view, first, count_now, 0, depth, packed,
                                  pass->sums.data() + first);
          continue;
        }
        internal::PackRequantization requantization = internal::RequantizingPack(
            kernel, view, 4, lowbit::BitDepthRounding::kAddMod97, 1, internal::Operand::kRhs, first,
            count_now, pass->work.data(), pass->phases.data());
        requantization.factor = 255 / 15;
        implementation.pack_rhs_requantizing(view, requantization, first, count_now, depth, packed,
                                             pass->sums.data() + first);
      }
      benchmark::DoNotOptimize(pass->out.data());
      benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(count) * state.iterations());
  })->UseRealTime();
}

}  // namespace
}  // namespace lowbit_bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (lowbit::Kernel kernel : lowbit::AvailableKernels()) {
    for (int size : {256, 1024}) {
      for (lowbit::BitDepthRounding rounding :
           {lowbit::BitDepthRounding::kNearest, lowbit::BitDepthRounding::kXorshift}) {
        lowbit_bench::Register(kernel, size, size, rounding);
      }
    }
  }
  for (lowbit::Kernel kernel : lowbit::AvailableKernels()) {
    for (int size : {256, 1024}) {
      lowbit_bench::RegisterPacking(kernel, size, size, false);
      if (lowbit::internal::GetKernelImplementation(kernel).pack_rhs_requantizing != nullptr) {
        lowbit_bench::RegisterPacking(kernel, size, size, true);
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
