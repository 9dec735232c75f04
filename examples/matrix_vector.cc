// Token-by-token inference (doc/design.md, "Weights for matrix-vector products"): a layer's
// weights prepacked once for 1-row lhs, then one activation row per call. Checks that both
// prepacked layouts give the same bits and prints their median times.
// Usage: matrix_vector [depth cols [calls]].
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "public/lowbit.h"

int main(int argc, char** argv) {
  if (argc != 1 && argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s [depth cols [calls]]\n", argv[0]);
    return 2;
  }
  const int depth = argc > 1 ? std::stoi(argv[1]) : 1024;
  const int cols = argc > 1 ? std::stoi(argv[2]) : 1024;
  const int calls = argc > 3 ? std::stoi(argv[3]) : 101;

  std::mt19937 random(1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> weights(static_cast<std::size_t>(depth) * cols);
  for (std::uint8_t& w : weights) w = static_cast<std::uint8_t>(byte(random));
  std::vector<std::uint8_t> tokens(static_cast<std::size_t>(calls) * depth);
  for (std::uint8_t& t : tokens) t = static_cast<std::uint8_t>(byte(random));

  lowbit::Context context;
  const lowbit::MatrixMap<const std::uint8_t> weights_map(weights.data(), depth, cols,
                                                          lowbit::Order::kColMajor);
  const lowbit::PrepackedRhs for_vectors(&context, weights_map, lowbit::PrepackFor::kMatrixVector);
  const lowbit::PrepackedRhs for_batches(&context, weights_map);

  // Zero points 128 (activations) and 120 (weights); the result is requantized to uint8.
  const auto pipeline =
      std::make_tuple(lowbit::OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 12, 128},
                      lowbit::OutputStageSaturatingCastToUint8{});
  std::vector<std::uint8_t> out_vectors(cols), out_batches(cols);
  std::vector<double> seconds_vectors, seconds_batches;
  for (int call = 0; call < calls; ++call) {
    const lowbit::MatrixMap<const std::uint8_t> token(tokens.data() + call * depth, 1, depth,
                                                      lowbit::Order::kRowMajor);
    lowbit::MatrixMap<std::uint8_t> result_vectors(out_vectors.data(), 1, cols,
                                                   lowbit::Order::kRowMajor);
    lowbit::MatrixMap<std::uint8_t> result_batches(out_batches.data(), 1, cols,
                                                   lowbit::Order::kRowMajor);
    auto start = std::chrono::steady_clock::now();
    lowbit::GemmWithOutputPipeline(&context, token, for_vectors, &result_vectors, -128, -120,
                                   pipeline);
    seconds_vectors.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    start = std::chrono::steady_clock::now();
    lowbit::GemmWithOutputPipeline(&context, token, for_batches, &result_batches, -128, -120,
                                   pipeline);
    seconds_batches.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (out_vectors != out_batches) {
      std::fprintf(stderr, "call %d: the two layouts gave different results\n", call);
      return 1;
    }
  }
  const auto gops = [&](std::vector<double> seconds) {
    std::sort(seconds.begin(), seconds.end());
    return 2.0 * depth * cols / seconds[seconds.size() / 2] / 1e9;
  };
  std::printf("kernel %s, 1x%dx%d, %d calls: same bits from both layouts\n",
              lowbit::KernelName(context.ResolvedKernel()), cols, depth, calls);
  std::printf("PrepackFor::kMatrixVector: %.1f GOPS (median)\n", gops(seconds_vectors));
  std::printf("PrepackFor::kBatches:      %.1f GOPS (median)\n", gops(seconds_batches));
  return 0;
}
