// Operands narrower than 8 bits (doc/less-than-8-bit.md): the same uint8 GEMM with 7-bit
// activations and 5-bit weights, requantized, against the exact 8-bit result; then weights
// prepacked once, and declared-range data that already fits its bit depths.
#include <lowbit/lowbit.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  const int rows = 64, depth = 1024, cols = 32;
  std::mt19937 random(1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> activations(rows * depth), weights(depth * cols);
  for (auto& value : activations) value = static_cast<std::uint8_t>(byte(random));
  for (auto& value : weights) value = static_cast<std::uint8_t>(byte(random));
  const lowbit::MatrixMap<const std::uint8_t> lhs(activations.data(), rows, depth,
                                                  lowbit::Order::kRowMajor);
  const lowbit::MatrixMap<const std::uint8_t> rhs(weights.data(), depth, cols,
                                                  lowbit::Order::kColMajor);
  std::vector<std::int32_t> exact(rows * cols), narrow(rows * cols);
  lowbit::MatrixMap<std::int32_t> exact_map(exact.data(), rows, cols, lowbit::Order::kRowMajor);
  lowbit::MatrixMap<std::int32_t> narrow_map(narrow.data(), rows, cols, lowbit::Order::kRowMajor);
  const std::int32_t lhs_offset = 0, rhs_offset = -128;  // zero points 0 and 128

  lowbit::Context context;
  lowbit::Gemm(&context, lhs, rhs, &exact_map, lhs_offset, rhs_offset);

  // Requantize: 7-bit lhs, 5-bit rhs, add-mod-97 rounding seeded with 42.
  lowbit::BitDepthParams params;
  params.lhs_bits = 7;
  params.rhs_bits = 5;
  params.rounding = lowbit::BitDepthRounding::kAddMod97;
  params.seed = 42;
  lowbit::Gemm(&context, lhs, rhs, &narrow_map, lhs_offset, rhs_offset, params);
  double squares = 0, scale = 0;
  for (int i = 0; i < rows * cols; ++i) {
    squares += std::pow(narrow[i] - exact[i], 2.0);
    scale += std::pow(exact[i], 2.0);
  }
  std::printf("L7R5 add-mod-97: RMS error %.1f, %.3f%% of the RMS result\n",
              std::sqrt(squares / (rows * cols)), 100 * std::sqrt(squares / scale));

  // Weights requantized once, reused: the same bits as requantizing them on every call.
  const lowbit::PrepackedRhs packed(&context, rhs, params);
  std::vector<std::int32_t> again(rows * cols);
  lowbit::MatrixMap<std::int32_t> again_map(again.data(), rows, cols, lowbit::Order::kRowMajor);
  lowbit::Gemm(&context, lhs, packed, &again_map, lhs_offset, rhs_offset, params);
  if (again != narrow) {
    std::printf("prepacked result differs\n");
    return 1;
  }

  // Declared range: data already 4-bit, results exact.
  for (auto& value : activations) value = static_cast<std::uint8_t>(value >> 4);
  lowbit::BitDepthParams declared;
  declared.lhs_bits = 4;
  declared.mode = lowbit::BitDepthMode::kDeclaredRange;
  lowbit::Gemm(&context, lhs, rhs, &narrow_map, lhs_offset, rhs_offset, declared);
  lowbit::Gemm(&context, lhs, rhs, &exact_map, lhs_offset, rhs_offset);
  std::printf("declared 4-bit lhs: %s\n", narrow == exact ? "exact" : "MISMATCH");
  return narrow == exact ? 0 : 1;
}
