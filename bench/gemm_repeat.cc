// Runs one of gemm_bench's lowbit cases a fixed number of times, for tools that count rather
// than time: `valgrind --tool=callgrind build/release/bench/gemm_repeat 64 64 64 1000` gives the
// same instruction counts on every run, which this shared host's timings cannot.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "bench/bench_common.h"
#include "public/lowbit.h"

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: %s M N K [iterations=1000] [kernel=avx2|sse41|neon|reference]\n",
                 argv[0]);
    return 2;
  }
  // M x N x K, as in the case names.
  const lowbit_bench::Shape shape{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3])};
  const int iterations = argc > 4 ? std::atoi(argv[4]) : 1000;
  const std::string kernel_name = argc > 5 ? argv[5] : "";
  if (shape.rows < 1 || shape.depth < 1 || shape.cols < 1 || iterations < 1) {
    std::fprintf(stderr, "M, N, K and iterations must be positive\n");
    return 2;
  }
  lowbit::Context context;
  for (lowbit::Kernel kernel : lowbit::AvailableKernels()) {
    if (kernel_name == lowbit::KernelName(kernel)) context.set_kernel(kernel);
  }
  if (!kernel_name.empty() && kernel_name != lowbit::KernelName(context.ResolvedKernel())) {
    std::fprintf(stderr, "kernel %s is not available on this CPU\n", kernel_name.c_str());
    return 2;
  }
  lowbit_bench::Uint8Operands operands(shape);
  // gemm_bench's layout and pipeline (bench/gemm_bench.cc, SetUpLowbit).
  const lowbit::MatrixMap<const std::uint8_t> lhs(operands.lhs.data(), shape.rows, shape.depth,
                                                  lowbit::Order::kRowMajor);
  const lowbit::MatrixMap<const std::uint8_t> rhs(operands.rhs.data(), shape.depth, shape.cols,
                                                  lowbit::Order::kColMajor);
  lowbit::MatrixMap<std::uint8_t> result(operands.result.data(), shape.rows, shape.cols,
                                         lowbit::Order::kColMajor);
  const auto pipeline =
      std::make_tuple(lowbit::OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 15, 128},
                      lowbit::OutputStageSaturatingCastToUint8{});
  unsigned checksum = 0;
  for (int i = 0; i < iterations; ++i) {
    lowbit::GemmWithOutputPipeline(&context, lhs, rhs, &result, -128, -128, pipeline);
    checksum += operands.result[i % operands.result.size()];
  }
  std::printf("%d GEMMs %dx%dx%d, kernel %s, checksum %u\n", iterations, shape.rows, shape.cols,
              shape.depth, lowbit::KernelName(context.ResolvedKernel()), checksum);
  return 0;
}
