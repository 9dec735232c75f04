// Token-by-token inference (doc/design.md, "Prepacked weights"): a layer's weights prepacked
// once, then one activation row per call. Checks each result against the same GEMM on the
// unpacked weights and prints the median speed of both.
// Usage: matrix_vector [depth cols [calls]].
#include <lowbit/lowbit.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

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
  const lowbit::PrepackedRhs prepacked(&context, weights_map);

  // Zero points 128 (activations) and 120 (weights); the result is requantized to uint8.
  const auto pipeline =
      std::make_tuple(lowbit::OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 12, 128},
                      lowbit::OutputStageSaturatingCastToUint8{});
  std::vector<std::uint8_t> out_prepacked(cols), out_unpacked(cols);
  std::vector<double> seconds_prepacked, seconds_unpacked;
  for (int call = 0; call < calls; ++call) {
    const lowbit::MatrixMap<const std::uint8_t> token(tokens.data() + call * depth, 1, depth,
                                                      lowbit::Order::kRowMajor);
    lowbit::MatrixMap<std::uint8_t> result_prepacked(out_prepacked.data(), 1, cols,
                                                     lowbit::Order::kRowMajor);
    lowbit::MatrixMap<std::uint8_t> result_unpacked(out_unpacked.data(), 1, cols,
                                                    lowbit::Order::kRowMajor);
    auto start = std::chrono::steady_clock::now();
    lowbit::GemmWithOutputPipeline(&context, token, prepacked, &result_prepacked, -128, -120,
                                   pipeline);
    seconds_prepacked.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    start = std::chrono::steady_clock::now();
    lowbit::GemmWithOutputPipeline(&context, token, weights_map, &result_unpacked, -128, -120,
                                   pipeline);
    seconds_unpacked.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (out_prepacked != out_unpacked) {
      std::fprintf(stderr, "call %d: prepacked and unpacked weights gave different results\n",
                   call);
      return 1;
    }
  }
  const auto gops = [&](std::vector<double> seconds) {
    std::sort(seconds.begin(), seconds.end());
    return 2.0 * depth * cols / seconds[seconds.size() / 2] / 1e9;
  };
  std::printf("kernel %s, 1x%dx%d, %d calls: the same bits with both\n",
              lowbit::KernelName(context.ResolvedKernel()), cols, depth, calls);
  std::printf("prepacked weights: %.1f GOPS (median)\n", gops(seconds_prepacked));
  std::printf("unpacked weights:  %.1f GOPS (median)\n", gops(seconds_unpacked));
  return 0;
}
