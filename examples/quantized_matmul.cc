// From float matrices to a quantized GEMM and back (doc/quantization.md): choose scales and
// zero points, quantize, multiply through a requantizing pipeline, dequantize, compare with the
// float product, and time the GEMM. Usage: quantized_matmul [rows depth cols [threads]].
#include <lowbit/lowbit.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

// The median over `runs` of the seconds one call of `gemm` takes.
template <typename Function>
double MedianSeconds(Function gemm, int runs) {
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    gemm();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

int main(int argc, char** argv) {
  if (argc != 1 && argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s [rows depth cols [threads]]\n", argv[0]);
    return 2;
  }
  const int rows = argc > 1 ? std::stoi(argv[1]) : 64;
  const int depth = argc > 1 ? std::stoi(argv[2]) : 256;
  const int cols = argc > 1 ? std::stoi(argv[3]) : 48;
  const int threads = argc > 4 ? std::stoi(argv[4]) : 1;
  std::mt19937 random(1);
  std::uniform_real_distribution<float> lhs_value(-1.0f, 1.0f), rhs_value(0.0f, 4.0f);
  std::vector<float> lhs(rows * depth), rhs(depth * cols), product(rows * cols, 0.0f);
  for (auto& v : lhs) v = lhs_value(random);
  for (auto& v : rhs) v = rhs_value(random);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      for (int k = 0; k < depth; ++k)
        product[r * cols + c] += lhs[r * depth + k] * rhs[k * cols + c];
    }
  }
  const auto [min_product, max_product] = std::minmax_element(product.begin(), product.end());

  // uint8, asymmetric: real = scale * (q - zero_point) over each range, 0.0 exact.
  const lowbit::QuantizationParams lhs_q = lowbit::ChooseQuantizationParams(-1.0, 1.0);
  const lowbit::QuantizationParams rhs_q = lowbit::ChooseQuantizationParams(0.0, 4.0);
  const lowbit::QuantizationParams result_q =
      lowbit::ChooseQuantizationParams(*min_product, *max_product);
  std::vector<std::uint8_t> lhs_quantized(lhs.size()), rhs_quantized(rhs.size());
  lowbit::Quantize(lhs.data(), lhs.size(), lhs_q, lhs_quantized.data());
  lowbit::Quantize(rhs.data(), rhs.size(), rhs_q, rhs_quantized.data());

  // acc * lhs_scale * rhs_scale / result_scale, plus the result zero point.
  const lowbit::FixedPointMultiplier multiplier =
      lowbit::QuantizeMultiplier(lhs_q.scale * rhs_q.scale / result_q.scale);
  const auto pipeline = std::make_tuple(
      lowbit::OutputStageScaleInt32ByFixedPointAndExponent{
          multiplier.multiplier, multiplier.exponent, result_q.zero_point},
      lowbit::OutputStageSaturatingCastToUint8{});

  std::vector<std::uint8_t> result(rows * cols);
  lowbit::MatrixMap<const std::uint8_t> lhs_map(lhs_quantized.data(), rows, depth,
                                                lowbit::Order::kRowMajor);
  lowbit::MatrixMap<const std::uint8_t> rhs_map(rhs_quantized.data(), depth, cols,
                                                lowbit::Order::kRowMajor);
  lowbit::MatrixMap<std::uint8_t> result_map(result.data(), rows, cols, lowbit::Order::kRowMajor);
  lowbit::Context context;
  context.set_max_num_threads(threads);
  const auto gemm = [&] {
    lowbit::GemmWithOutputPipeline(&context, lhs_map, rhs_map, &result_map, -lhs_q.zero_point,
                                   -rhs_q.zero_point, pipeline);
  };
  gemm();

  std::vector<float> dequantized(result.size());
  lowbit::Dequantize(result.data(), result.size(), result_q, dequantized.data());
  double max_error = 0, rms = 0;
  for (int i = 0; i < rows * cols; ++i) {
    const double error = dequantized[i] - product[i];
    max_error = std::max(max_error, std::abs(error));
    rms += error * error;
  }
  rms = std::sqrt(rms / (rows * cols));
  const double gops = 2.0 * rows * depth * cols / MedianSeconds(gemm, 15) / 1e9;
  std::printf("%d x %d x %d, uint8 -> uint8, kernel %s, %d thread(s)\n", rows, depth, cols,
              lowbit::KernelName(context.ResolvedKernel()), threads);
  std::printf(
      "error against the float product: max %.4f, rms %.4f (result scale %.4f, range %.2f)\n",
      max_error, rms, result_q.scale, *max_product - *min_product);
  std::printf("%.2f GOPS (median of 15 runs; benchmarks: scripts/bench)\n", gops);
  // The demo's data keeps the worst error within a few result steps at any depth used here.
  return max_error < 4 * result_q.scale ? 0 : 1;
}
