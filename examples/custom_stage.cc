// Writing your own output stage: a struct with Eval(value, row, col) and, if it has parameters,
// Validate(rows, cols, name). Here a leaky ReLU in integer arithmetic, placed between
// lowbit's own stages.
#include <lowbit/lowbit.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

// x for x >= 0, x * 2^-negative_slope_shift (rounded) for x < 0.
struct LeakyRelu {
  int negative_slope_shift;

  void Validate(int /*rows*/, int /*cols*/, const std::string& name) const {
    lowbit::checks::CheckInRange(name, "negative_slope_shift", negative_slope_shift, 0, 31);
  }
  std::int32_t Eval(std::int32_t x, int /*row*/, int /*col*/) const {
    return x >= 0 ? x : lowbit::fixedpoint::RoundingDivideByPOT(x, negative_slope_shift);
  }
};

int main() {
  const int rows = 2, depth = 3, cols = 2;
  const std::int8_t weights[] = {10, -20, 30, -40, 50, -60};  // 2 x 3, row-major
  const std::uint8_t inputs[] = {1, 2, 3, 4, 5, 6};           // 3 x 2, row-major
  std::vector<std::int8_t> outputs(rows * cols);
  const lowbit::MatrixMap<const std::int8_t> lhs(weights, rows, depth, lowbit::Order::kRowMajor);
  const lowbit::MatrixMap<const std::uint8_t> rhs(inputs, depth, cols, lowbit::Order::kRowMajor);
  lowbit::MatrixMap<std::int8_t> result(outputs.data(), rows, cols, lowbit::Order::kRowMajor);

  // acc = weights * (inputs - 3) = [[40, 60], [-40, -90]]; leaky ReLU with slope 1/4 gives
  // [[40, 60], [-10, -23]] (-22.5 rounds away from zero), then halving gives the result.
  const auto pipeline = std::make_tuple(LeakyRelu{2}, lowbit::OutputStageShiftByPOT{-1},
                                        lowbit::OutputStageSaturatingCastToInt8{});
  lowbit::Context context;
  lowbit::GemmWithOutputPipeline(&context, lhs, rhs, &result, 0, -3, pipeline);

  const std::int8_t expected[] = {20, 30, -5, -12};
  for (int i = 0; i < rows * cols; ++i) {
    std::printf("%d%s", outputs[i], i + 1 < rows * cols ? " " : "\n");
    if (outputs[i] != expected[i]) return 1;
  }

  // A bad parameter is caught before any output is written.
  try {
    lowbit::GemmWithOutputPipeline(
        &context, lhs, rhs, &result, 0, -3,
        std::make_tuple(LeakyRelu{40}, lowbit::OutputStageSaturatingCastToInt8{}));
    return 1;
  } catch (const lowbit::Error& error) {
    std::printf("%s\n", error.what());
  }
  return 0;
}
