// The vectorized output writers of every kernel against the stages' scalar Eval, at the values
// where rounding, saturation and wrapping decide: INT32 extremes, exact ties, every shift,
// extreme multipliers, every block width from 1 to 17, both block layouts and both result orders;
// and the quantized add's stage, which reads a residual matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lowbit/internal/output/output.h"
#include "lowbit/internal/output/output_line.h"
#include "lowbit/internal/output/unpack.h"
#include "lowbit/lowbit.h"

namespace lowbit {
namespace {

std::vector<std::int32_t> EdgeValues() {
  std::vector<std::int32_t> values = {0, 1, -1, std::numeric_limits<std::int32_t>::min(),
                                      std::numeric_limits<std::int32_t>::max()};
  for (int bit = 0; bit < 31; ++bit) {
    const std::int64_t power = std::int64_t{1} << bit;
    for (std::int64_t value : {power - 1, power, power + 1, -power - 1, -power, -power + 1,
                               power + power / 2, -power - power / 2}) {
      values.push_back(static_cast<std::int32_t>(value));
    }
  }
  std::mt19937 random(3);
  std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(),
                                                  std::numeric_limits<std::int32_t>::max());
  while (values.size() % 61 != 0) values.push_back(any(random));
  return values;
}

// The result row and column of a checked block's first entry.
constexpr int kRowStart = 3, kColStart = 5;

// Runs `writer` on the rows x cols block of sums `acc`, at kRowStart, kColStart of the result,
// with the sums along rows and along columns (entry (r, c) at acc[r * cols + c] or
// acc[r + c * rows]) into results of both orders, and hands each result and block to
// check(out_map, block).
template <typename Result, typename Check>
void WriteInEveryLayout(internal::OutputWriter writer, const internal::OutputProgram& program,
                        int rows, int cols, const std::vector<std::int32_t>& acc,
                        const internal::OffsetTerms& terms, const internal::Rescale* rescale,
                        const Check& check) {
  for (bool acc_row_major : {true, false}) {
    for (Order order : {Order::kRowMajor, Order::kColMajor}) {
      const internal::AccumulatorBlock block{kRowStart,
                                             kColStart,
                                             rows,
                                             cols,
                                             acc.data(),
                                             acc_row_major ? cols : 1,
                                             acc_row_major ? 1 : rows};
      const int total_rows = kRowStart + rows, total_cols = kColStart + cols;
      std::vector<Result> out(static_cast<std::size_t>(total_rows) * total_cols);
      MatrixMap<Result> out_map(out.data(), total_rows, total_cols, order);
      writer(program, block, terms, rescale, internal::ViewOf(out_map));
      check(out_map, block);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
}

// Runs `pipeline` over a rows x cols block of edge values through `writer` and through the
// scalar Eval, in every layout, and compares; once on the edge values as final accumulators, and
// four times as raw sums still owed random offset terms (which wrap), as the driver hands them
// over: as two products, and separable into row and column parts, both or one of them (the other
// zero and marked so, as the driver marks the parts of an operand whose factor is zero: the
// writers' loops for 8-bit results leave out the terms along the lines then).
// With `rescale` (sums of requantized operands), the scalar side rescales each sum with the
// scalar path's RescaleBlock before Eval.
// `accumulators`: the values to cycle through instead of the edge values.
template <typename Pipeline>
void CheckWriter(internal::OutputWriter writer, const Pipeline& pipeline, int rows, int cols,
                 const internal::Rescale* rescale = nullptr,
                 const std::vector<std::int32_t>& accumulators = {}) {
  using Result = typename meta::PipelineOutput<Pipeline>::type;
  internal::OutputProgram program;
  ASSERT_TRUE(meta::CompileOutputProgram(pipeline, &program));
  const std::vector<std::int32_t> values = accumulators.empty() ? EdgeValues() : accumulators;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(rows) * cols);
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = values[(i * 7) % values.size()];
  std::mt19937 random(static_cast<std::uint32_t>(rows * 131 + cols));
  const auto terms_for = [&](int count, bool owed) {
    std::vector<std::int32_t> terms(count);
    for (std::int32_t& term : terms) term = owed ? static_cast<std::int32_t>(random()) : 0;
    return terms;
  };
  enum class Owed { kNothing, kProducts, kSeparable, kRowParts, kColParts };
  for (Owed owed :
       {Owed::kNothing, Owed::kProducts, Owed::kSeparable, Owed::kRowParts, Owed::kColParts}) {
    const bool products = owed == Owed::kProducts;
    const bool separable =
        owed == Owed::kSeparable || owed == Owed::kRowParts || owed == Owed::kColParts;
    const std::vector<std::int32_t> row_first = terms_for(rows, products),
                                    row_second = terms_for(rows, products);
    const std::vector<std::int32_t> col_first = terms_for(cols, products),
                                    col_second = terms_for(cols, products);
    const std::vector<std::int32_t> row_part =
                                        terms_for(rows, separable && owed != Owed::kColParts),
                                    col_part =
                                        terms_for(cols, separable && owed != Owed::kRowParts);
    const internal::OffsetTerms terms =
        separable
            ? internal::OffsetTerms::Separable(row_part.data(), col_part.data(), 1,
                                               owed == Owed::kColParts, owed == Owed::kRowParts)
        : products ? internal::OffsetTerms{row_first.data(), col_first.data(), row_second.data(),
                                           col_second.data()}
                   : internal::OffsetTerms{};
    WriteInEveryLayout<Result>(
        writer, program, rows, cols, acc, terms, rescale,
        [&](const MatrixMap<Result>& out_map, const internal::AccumulatorBlock& block) {
          for (int r = 0; r < rows; ++r) {
            for (int c = 0; c < cols; ++c) {
              auto value = static_cast<std::int32_t>(
                  static_cast<std::uint32_t>(acc[r * block.row_stride + c * block.col_stride]) +
                  static_cast<std::uint32_t>(row_first[r]) *
                      static_cast<std::uint32_t>(col_first[c]) +
                  static_cast<std::uint32_t>(row_second[r]) *
                      static_cast<std::uint32_t>(col_second[c]) +
                  static_cast<std::uint32_t>(row_part[r]) +
                  static_cast<std::uint32_t>(col_part[c]));
              if (rescale != nullptr) {
                internal::RescaleBlock(*rescale, kRowStart + r, 1, kColStart + c, 1, &value, 1);
              }
              ASSERT_EQ(out_map(kRowStart + r, kColStart + c),
                        meta::EvalPipeline(pipeline, value, kRowStart + r, kColStart + c))
                  << "acc " << value << " at (" << r << ", " << c << ") of " << rows << "x" << cols
                  << (products                  ? " with offset terms"
                      : owed == Owed::kRowParts ? " with separable terms, rows' parts alone"
                      : owed == Owed::kColParts ? " with separable terms, columns' parts alone"
                      : separable               ? " with separable terms"
                                                : "");
            }
          }
        });
    if (testing::Test::HasFatalFailure()) return;
  }
}

// Gives `rescale` its terms' float values, as the driver does for the writers' float form
// (RescaleLineTerms::a_float), for its first lhs_count rows and rhs_count columns; `floats` holds
// them.
void AddFloatTerms(internal::Rescale* rescale, int lhs_count, int rhs_count,
                   std::vector<float> (&floats)[4]) {
  internal::RescaleLineTerms* const sides[2] = {&rescale->lhs, &rescale->rhs};
  for (int side = 0; side < 2; ++side) {
    const int count = side == 0 ? lhs_count : rhs_count;
    internal::RescaleLineTerms& terms = *sides[side];
    floats[2 * side].assign(terms.a, terms.a + count);
    floats[2 * side + 1].assign(terms.b, terms.b + count);
    terms.a_float = floats[2 * side].data();
    terms.b_float = floats[2 * side + 1].data();
  }
}

struct KernelWriter {
  Kernel kernel;
  internal::OutputWriter writer;
};

// Every kernel but the reference, which has no ISA, comes with its ISA's writer.
std::vector<KernelWriter> Writers() {
  std::vector<KernelWriter> writers;
  for (Kernel kernel : AvailableKernels()) {
    const internal::OutputWriter writer = internal::OutputWriterFor(kernel);
    if (kernel != Kernel::kReference) {
      EXPECT_NE(writer, nullptr) << KernelName(kernel);
    }
    if (writer != nullptr) writers.push_back({kernel, writer});
  }
  return writers;
}

TEST(OutputWriterTest, EveryCompiledStageMatchesScalarEval) {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  // One value per channel of the largest block below (131 lines after a start of 5).
  constexpr int kChannels = 136;
  std::vector<std::int32_t> per_channel(kChannels);
  std::vector<std::int32_t> shifts(kChannels), exponents(kChannels), multipliers(kChannels);
  std::mt19937 random(11);
  for (int i = 0; i < kChannels; ++i) {
    per_channel[i] = static_cast<std::int32_t>(random());
    shifts[i] = i % 32;
    exponents[i] = i % 62 - 31;
    multipliers[i] =
        i % 3 == 0 ? (i % 2 == 0 ? kMax : kMin) : static_cast<std::int32_t>(random() >> 1);
  }
  const VectorMap<const std::int32_t> channel_values(per_channel.data(), kChannels);
  for (const KernelWriter& kernel_writer : Writers()) {
    SCOPED_TRACE(KernelName(kernel_writer.kernel));
    const internal::OutputWriter writer = kernel_writer.writer;
    // Every short length, and lines long enough for whole batches of vectors (the writers'
    // inner loops) with and without a remainder, and for two chunks of the transposed path.
    std::vector<int> lengths = {31, 32, 33, 48, 67, 131};
    for (int length = 1; length <= 17; ++length) lengths.push_back(length);
    for (int length : lengths) {
      for (int shift = 0; shift <= 31; ++shift) {
        CheckWriter(
            writer,
            std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{kMax - shift, shift, -shift}),
            length, 3);
        CheckWriter(writer, std::make_tuple(OutputStageShiftByPOT{shift}), 2, length);
        CheckWriter(writer, std::make_tuple(OutputStageShiftByPOT{-shift}), length, 2);
        // Stochastic rounding's random bits follow each entry's row and column, along rows and
        // along columns.
        const OutputStageShiftByPOT stochastic{-shift, Rounding::kStochastic, 0x9e37u * shift};
        CheckWriter(writer, std::make_tuple(stochastic), 2, length);
        CheckWriter(writer, std::make_tuple(stochastic), length, 2);
      }
      for (int exponent = -31; exponent <= 30; ++exponent) {
        CheckWriter(
            writer,
            std::make_tuple(OutputStageScaleInt32ByFixedPointAndExponent{1 << 30, exponent, 7}),
            length, 2);
      }
      for (std::int32_t multiplier : {kMin, kMax, 0, 1}) {
        for (int shift : {0, 1, 30, 31}) {
          CheckWriter(
              writer,
              std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{multiplier, shift, 0}), 3,
              length);
        }
        for (int exponent : {-31, -1, 0, 1, 30}) {
          CheckWriter(writer,
                      std::make_tuple(
                          OutputStageScaleInt32ByFixedPointAndExponent{multiplier, exponent, 0}),
                      length, 3);
        }
      }
      for (ChannelAxis axis : {ChannelAxis::kRow, ChannelAxis::kCol}) {
        CheckWriter(
            writer,
            std::make_tuple(OutputStageBiasAddition{channel_values, axis},
                            OutputStageQuantizeDownInt32ByFixedPointPerChannel{
                                VectorMap<const std::int32_t>(multipliers.data(), kChannels),
                                VectorMap<const std::int32_t>(shifts.data(), kChannels), 9, axis},
                            OutputStageSaturatingCastToUint8{}),
            length, 19);
        CheckWriter(writer,
                    std::make_tuple(
                        OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
                            VectorMap<const std::int32_t>(multipliers.data(), kChannels),
                            VectorMap<const std::int32_t>(exponents.data(), kChannels), -3, axis},
                        OutputStageClamp{-30000, 20000}, OutputStageSaturatingCastToInt16{}),
                    23, length);
      }
      // The known-shape loops leave a saturating cast after a scale to a saturating store.
      const OutputStageQuantizeDownInt32ByFixedPoint quantize_down{1 << 30, 23, -3};
      CheckWriter(writer, std::make_tuple(quantize_down, OutputStageSaturatingCastToUint8{}),
                  length, 3);
      CheckWriter(writer, std::make_tuple(quantize_down, OutputStageSaturatingCastToInt8{}), 3,
                  length);
      CheckWriter(writer,
                  std::make_tuple(OutputStageShiftByPOT{-15}, OutputStageSaturatingCastToInt16{}),
                  length, 3);
      // The training layer's pipelines (train/layers.cc).
      for (ChannelAxis axis : {ChannelAxis::kRow, ChannelAxis::kCol}) {
        CheckWriter(writer,
                    std::make_tuple(OutputStageBiasAddition{channel_values, axis},
                                    OutputStageShiftByPOT{-9, Rounding::kStochastic, 77},
                                    OutputStageClamp{-64, 63}, OutputStageSaturatingCastToInt8{}),
                    length, 7);
        CheckWriter(writer,
                    std::make_tuple(OutputStageShiftByPOT{-20, Rounding::kStochastic, 5},
                                    OutputStageClamp{-128, 127}, OutputStageSaturatingCastToInt8{}),
                    7, length);
      }
      CheckWriter(writer, std::make_tuple(OutputStageSaturatingCastToInt8{}), length, 5);
      CheckWriter(writer, std::make_tuple(OutputStageTruncatingCastToUint8{}), 5, length);
      CheckWriter(writer, std::tuple<>(), length, length);
    }
  }
}

// The quantized add's stage (lowbit/public/quantized_add.h) reads its residual at each result's row
// and column: along and across the residual's storage order (contiguous loads and gathers), uint8
// and int8, with a plan of one product per input and a split one (an output scale 2^14 times finer
// than the inputs'), per-tensor and per-axis (a channel per row for the lhs, per column for the
// residual). A shift first brings the edge values near the lhs type's range.
TEST(OutputWriterTest, QuantizedAddStageMatchesScalarEval) {
  constexpr int kSize = 140;  // the blocks' rows and columns: start + up to 131
  constexpr int kStride = kSize + 3;
  std::mt19937 random(23);
  std::vector<std::int32_t> bias(kSize);
  for (std::int32_t& value : bias) value = static_cast<std::int32_t>(random() % 2000001) - 1000000;
  const VectorMap<const std::int32_t> channel_values(bias.data(), kSize);
  std::vector<std::uint8_t> unsigned_residual(kSize * kStride);
  std::vector<std::int8_t> signed_residual(kSize * kStride);
  for (std::uint8_t& value : unsigned_residual) value = static_cast<std::uint8_t>(random());
  for (std::int8_t& value : signed_residual) value = static_cast<std::int8_t>(random());
  struct Case {
    QuantizationParams lhs, rhs, output;
    bool split;
  };
  const Case cases[] = {{{0.05, 120}, {0.02, 7}, {0.04, 100}, false},
                        {{1.0, 3}, {0.5, 100}, {std::exp2(-14), 10}, true}};
  for (const Case& test_case : cases) {
    for (bool signed_lhs : {false, true}) {
      for (bool signed_residual_type : {false, true}) {
        const auto type = [](bool is_signed) {
          return is_signed ? QuantizedType::Int8() : QuantizedType::Uint8();
        };
        const auto params = [](QuantizationParams p, bool is_signed) {
          if (is_signed) p.zero_point -= 128;
          return p;
        };
        // Per-tensor, or per-axis: the lhs with a channel per result row, the residual per
        // column, each channel's scale and zero point its own.
        const auto input = [&](const QuantizationParams& base, bool is_signed, bool per_axis,
                               ChannelAxis axis) {
          QuantizedAddInput added{type(is_signed), {params(base, is_signed)}, axis};
          for (int channel = 1; per_axis && channel < kSize; ++channel) {
            added.params.push_back(
                params({base.scale * (1 + channel % 7 * 0.125), base.zero_point + channel % 5 - 2},
                       is_signed));
          }
          return added;
        };
        for (bool per_axis : {false, true}) {
          const QuantizedAddPlan plan = MakeQuantizedAddPlan(
              input(test_case.lhs, signed_lhs, per_axis, ChannelAxis::kRow),
              input(test_case.rhs, signed_residual_type, per_axis, ChannelAxis::kCol),
              test_case.output, QuantizedType::Uint8());
          ASSERT_EQ(plan.low_bits > 0, test_case.split);
          for (Order order : {Order::kRowMajor, Order::kColMajor}) {
            // Through the generic loop (after a shift), and through the known shapes of a
            // requantization and the stage, with and without a bias before it.
            const auto check = [&](const auto& stage) {
              const OutputStageScaleInt32ByFixedPointAndExponent requantize{1 << 30, -22, 100};
              const auto pipelines = std::make_tuple(
                  std::make_tuple(OutputStageShiftByPOT{-23}, stage,
                                  OutputStageSaturatingCastToUint8{}),
                  std::make_tuple(requantize, stage, OutputStageSaturatingCastToUint8{}),
                  std::make_tuple(OutputStageBiasAddition{channel_values, ChannelAxis::kCol},
                                  requantize, stage, OutputStageSaturatingCastToUint8{}));
              for (const KernelWriter& kernel_writer : Writers()) {
                SCOPED_TRACE(KernelName(kernel_writer.kernel));
                for (int length : {1, 2, 3, 5, 8, 9, 15, 16, 17, 31, 33, 67, 131}) {
                  std::apply(
                      [&](const auto&... pipeline) {
                        (CheckWriter(kernel_writer.writer, pipeline, length, 3), ...);
                        (CheckWriter(kernel_writer.writer, pipeline, 3, length), ...);
                      },
                      pipelines);
                }
              }
            };
            if (signed_residual_type) {
              check(MakeOutputStageQuantizedAdd(
                  plan, MatrixMap<const std::int8_t>(signed_residual.data(), kSize, kSize, order,
                                                     kStride)));
            } else {
              check(MakeOutputStageQuantizedAdd(
                  plan, MatrixMap<const std::uint8_t>(unsigned_residual.data(), kSize, kSize, order,
                                                      kStride)));
            }
          }
        }
      }
    }
  }
}

// Sums of requantized operands (lowbit/public/bit_depth.h) are rescaled by the writer after the
// offset terms and before the program: as the scalar path's RescaleBlock does, for every divisor
// shape, line terms of both signs as large as the depth guard allows, and quotients that saturate.
TEST(OutputWriterTest, RescaleMatchesTheScalarPath) {
  constexpr int kLines = 80;  // result rows and columns covered: start (3 or 5) + up to 67
  std::mt19937 random(17);
  const auto terms = [&](double magnitude) {
    std::uniform_real_distribution<double> uniform(-magnitude, magnitude);
    std::vector<double> values(kLines);
    for (double& value : values) value = std::nearbyint(uniform(random));
    return values;
  };
  const std::vector<double> lhs_a = terms(1 << 20), lhs_b = terms(1 << 20);
  const std::vector<double> rhs_a = terms(1 << 30), rhs_b = terms(1 << 30);
  std::vector<float> floats[4];
  std::vector<std::int32_t> multipliers(kLines), shifts(kLines);
  for (int i = 0; i < kLines; ++i) {
    multipliers[i] = static_cast<std::int32_t>(random() >> 1);
    shifts[i] = i % 32;
  }
  for (const KernelWriter& kernel_writer : Writers()) {
    SCOPED_TRACE(KernelName(kernel_writer.kernel));
    // (2^L - 1)(2^R - 1) for 1x1, 2x1, 4x4, 7x5 and 8x7 bits.
    for (int divisor : {1, 3, 225, 3937, 32385}) {
      // Without and with the terms' float values, which the float form of a QuantizeDown after
      // the rescale reads (and turns down here: these terms are too large for it).
      internal::Rescale rescale{
          {lhs_a.data(), lhs_b.data()}, {rhs_a.data(), rhs_b.data()}, divisor};
      for (bool with_floats : {false, true}) {
        if (with_floats) AddFloatTerms(&rescale, kLines, kLines, floats);
        for (int length : {1, 3, 8, 17, 33, 67}) {
          CheckWriter(kernel_writer.writer, std::tuple<>(), length, 5, &rescale);
          CheckWriter(kernel_writer.writer, std::tuple<>(), 7, length, &rescale);
          CheckWriter(kernel_writer.writer,
                      std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 9, 100},
                                      OutputStageSaturatingCastToUint8{}),
                      length, 17, &rescale);
          CheckWriter(
              kernel_writer.writer,
              std::make_tuple(
                  OutputStageQuantizeDownInt32ByFixedPointPerChannel{
                      VectorMap<const std::int32_t>(multipliers.data(), kLines),
                      VectorMap<const std::int32_t>(shifts.data(), kLines), -7, ChannelAxis::kCol},
                  OutputStageSaturatingCastToInt8{}),
              19, length, &rescale);
          // Shapes without a loop of their own for the rescale (int16 results, the training
          // layer's stochastic shift) run their loop for anything owed; int32 results after a
          // clamp run the generic loop.
          CheckWriter(kernel_writer.writer,
                      std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 9, 100},
                                      OutputStageSaturatingCastToInt16{}),
                      length, 17, &rescale);
          CheckWriter(
              kernel_writer.writer,
              std::make_tuple(OutputStageShiftByPOT{-12, Rounding::kStochastic, 5},
                              OutputStageClamp{-100, 100}, OutputStageSaturatingCastToInt8{}),
              17, length, &rescale);
          CheckWriter(kernel_writer.writer,
                      std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 9, 100},
                                      OutputStageClamp{-1000, 1000}),
                      length, 17, &rescale);
        }
      }
    }
  }
}

// 8-bit results of blocks large enough for every chunk of the writers' path across the
// accumulators (128 lines and 4 vectors of entries per buffer, transposed as bytes 16 x 16 at a
// time), with lines and entries left over, per-channel parameters along and across the lines,
// and the rescale of requantized operands.
TEST(OutputWriterTest, EightBitResultsOfLargeBlocksMatchScalarEval) {
  constexpr int kLines = 310;  // result rows and columns covered: start (3 or 5) + up to 300
  std::mt19937 random(23);
  std::vector<std::int32_t> multipliers(kLines), shifts(kLines);
  std::vector<double> line_terms[4];
  for (int i = 0; i < kLines; ++i) {
    multipliers[i] = static_cast<std::int32_t>(random() >> 1);
    shifts[i] = i % 32;
  }
  for (std::vector<double>& terms : line_terms) {
    for (int i = 0; i < kLines; ++i) terms.push_back(std::nearbyint((random() % 2001) - 1000.0));
  }
  internal::Rescale rescale{{line_terms[0].data(), line_terms[1].data()},
                            {line_terms[2].data(), line_terms[3].data()},
                            3937};
  // With the terms' float values, as the driver sets them: the float form of the QuantizeDown
  // after the rescale takes these lines.
  std::vector<float> floats[4];
  AddFloatTerms(&rescale, kLines, kLines, floats);
  for (const KernelWriter& kernel_writer : Writers()) {
    SCOPED_TRACE(KernelName(kernel_writer.kernel));
    for (const auto& [rows, cols] :
         std::vector<std::pair<int, int>>{{64, 64}, {300, 150}, {150, 300}, {80, 130}, {47, 200}}) {
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
      CheckWriter(kernel_writer.writer,
                  std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 20, 3},
                                  OutputStageSaturatingCastToUint8{}),
                  rows, cols);
      for (ChannelAxis axis : {ChannelAxis::kRow, ChannelAxis::kCol}) {
        CheckWriter(kernel_writer.writer,
                    std::make_tuple(
                        OutputStageQuantizeDownInt32ByFixedPointPerChannel{
                            VectorMap<const std::int32_t>(multipliers.data(), kLines),
                            VectorMap<const std::int32_t>(shifts.data(), kLines), -7, axis},
                        OutputStageSaturatingCastToInt8{}),
                    rows, cols);
      }
      CheckWriter(kernel_writer.writer,
                  std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 9, 100},
                                  OutputStageSaturatingCastToUint8{}),
                  rows, cols, &rescale);
    }
  }
}

// A QuantizeDown that a clamp to bytes follows runs in float on the AVX-512 and AVX2 writers
// (ByteScaleConstants, lowbit/internal/output/output_line.h), exact only by its error bound and
// the rounding boundaries it sends to the exact arithmetic: accumulators a few units from every
// boundary that a result within 3 of the clamp's range has, for x M >= 0 and x M < 0 (whose
// boundaries the rounding away from zero moves), with multipliers of 1 to 31 significant bits,
// shifts and offsets at and beyond the float form's limits, and windows of 2^-7 to 2^-12 from
// error bounds of 2^-14 and 2^-13 (2^31 - 1 at shifts 15 and 31).
TEST(OutputWriterTest, ScaleBeforeAByteClampMatchesScalarEvalAtEveryRoundingBoundary) {
  struct Scale {
    std::int32_t multiplier;
    int shift;
    std::int32_t offset;
  };
  const Scale scales[] = {{1 << 30, 15, 128},
                          {1518500250, 8, -128},
                          {2147483647, 31, 255},
                          {1234567891, 11, 0},
                          {1, 9, 7},
                          {1518500250, 12, -256},
                          {1518500250, 7, 3},
                          {1518500250, 20, 257},
                          {1073741825, 10, 256},
                          {2147483647, 15, 256}};
  for (const Scale& scale : scales) {
    SCOPED_TRACE(std::to_string(scale.multiplier) + " >> " + std::to_string(scale.shift) + " + " +
                 std::to_string(scale.offset));
    std::vector<std::int32_t> values;
    const int exponent = 31 + scale.shift;
    for (std::int64_t result = -131; result <= 258; ++result) {
      for (int negative = 0; negative <= 1; ++negative) {
        // The smallest x whose x M + nudge reaches (result - offset) 2^(31+e).
        const __int128 nudge = (__int128{1} << 30) + (__int128{1} << (30 + scale.shift)) -
                               (negative ? (__int128{1} << 31) : 0);
        const __int128 target = __int128{result - scale.offset} * (__int128{1} << exponent) - nudge;
        __int128 boundary = target / scale.multiplier;
        if (boundary * scale.multiplier < target) ++boundary;
        for (int step = -2; step <= 2; ++step) {
          const __int128 x = boundary + step;
          if (x >= std::numeric_limits<std::int32_t>::min() &&
              x <= std::numeric_limits<std::int32_t>::max()) {
            values.push_back(static_cast<std::int32_t>(x));
          }
        }
      }
    }
    const std::vector<std::int32_t> edges = EdgeValues();
    values.insert(values.end(), edges.begin(), edges.end());
    // CheckWriter takes every 7th value, cyclically: all of them when 7 does not divide the count.
    if (values.size() % 7 == 0) values.push_back(0);
    const OutputStageQuantizeDownInt32ByFixedPoint quantize_down{scale.multiplier, scale.shift,
                                                                 scale.offset};
    for (const KernelWriter& kernel_writer : Writers()) {
      SCOPED_TRACE(KernelName(kernel_writer.kernel));
      const int cols = static_cast<int>(values.size() + 60) / 61;
      CheckWriter(kernel_writer.writer,
                  std::make_tuple(quantize_down, OutputStageSaturatingCastToUint8{}), 61, cols,
                  nullptr, values);
      CheckWriter(kernel_writer.writer,
                  std::make_tuple(quantize_down, OutputStageSaturatingCastToInt8{}), 61, cols,
                  nullptr, values);
      CheckWriter(kernel_writer.writer,
                  std::make_tuple(quantize_down, OutputStageClamp{10, 200},
                                  OutputStageSaturatingCastToUint8{}),
                  61, cols, nullptr, values);
      CheckWriter(kernel_writer.writer,
                  std::make_tuple(quantize_down, OutputStageSaturatingCastToInt16{}), 61, cols,
                  nullptr, values);
    }
  }
}

// The same, exhaustively: every accumulator whose result is within 3 of a uint8 or int8 cast's
// range (millions of them), for multipliers of 31 significant bits (whose float form rounds) and
// shifts that make the window widest and narrowest (2^-8, and 2^-12 where it equals 2 delta +
// 2^-e), under every rounding mode: every lane the window lets through, not only those next to a
// boundary.
TEST(OutputWriterTest, ScaleBeforeAByteClampMatchesScalarEvalOnEveryAccumulatorItDecides) {
  for (const auto& [multiplier, shift, offset] :
       std::vector<std::tuple<std::int32_t, int, std::int32_t>>{
           {1518500250, 9, 128}, {2045123457, 13, -3}, {1234567891, 12, 255}}) {
    SCOPED_TRACE(std::to_string(multiplier) + " >> " + std::to_string(shift) + " + " +
                 std::to_string(offset));
    const __int128 unit = __int128{1} << (31 + shift);
    const auto first_reaching = [&](std::int64_t result) {
      const __int128 target = (result - offset) * unit;
      return static_cast<std::int32_t>(target / multiplier);
    };
    const std::int32_t first = first_reaching(-132) - 1, last = first_reaching(260) + 1;
    std::vector<std::int32_t> acc;
    for (std::int64_t x = first; x <= last; ++x) acc.push_back(static_cast<std::int32_t>(x));
    const int count = static_cast<int>(acc.size());
    const OutputStageQuantizeDownInt32ByFixedPoint quantize_down{multiplier, shift, offset};
    for (const KernelWriter& kernel_writer : Writers()) {
      SCOPED_TRACE(KernelName(kernel_writer.kernel));
      // Under each rounding mode a caller may have set: the float form must not depend on it.
      const auto check = [&](const auto& pipeline) {
        using Result = typename meta::PipelineOutput<std::decay_t<decltype(pipeline)>>::type;
        internal::OutputProgram program;
        ASSERT_TRUE(meta::CompileOutputProgram(pipeline, &program));
        for (int rounding : {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO}) {
          SCOPED_TRACE("rounding mode " + std::to_string(rounding));
          std::vector<Result> out(acc.size());
          MatrixMap<Result> out_map(out.data(), 1, count, Order::kRowMajor);
          ASSERT_EQ(std::fesetround(rounding), 0);
          kernel_writer.writer(program, {0, 0, 1, count, acc.data(), count, 1}, {}, nullptr,
                               internal::ViewOf(out_map));
          std::fesetround(FE_TONEAREST);
          for (int i = 0; i < count; ++i) {
            ASSERT_EQ(out[i], meta::EvalPipeline(pipeline, acc[i], 0, i)) << "acc " << acc[i];
          }
        }
      };
      check(std::make_tuple(quantize_down, OutputStageSaturatingCastToUint8{}));
      check(std::make_tuple(quantize_down, OutputStageSaturatingCastToInt8{}));
    }
  }
}

// The rescale of requantized operands' sums and a QuantizeDown that a clamp to bytes follows run
// together in float on the AVX-512 and AVX2 writers (RescaledByteScaleConstants,
// lowbit/internal/output/output_line.h), exact only by its error bound and the window that sends
// lanes to the exact arithmetic: sums from below the clamp's range to above it and far beyond,
// each entry with its own rescale terms, or with a term the same along each line as uniform
// offsets make it, for the scale whose rounding of the rescale moves results most (M' near 2^-9,
// the widest window), the benchmarks' (1 << 30 >> 15, offset 128), small divisors on either side
// of the form's limit (65025 M' / D < 1/4) and others, every 3rd or 13th sum where there are
// millions, per tensor and per channel, against the scalar path's RescaleBlock and Eval, both
// block layouts and result orders.
TEST(OutputWriterTest, RescaleAndScaleBeforeAByteClampMatchTheScalarPath) {
  struct Case {
    int divisor;
    std::int32_t multiplier;
    int shift;
    std::int32_t offset;
    int sum_step;
    bool float_form;  // whether the float form takes the lines (else the exact arithmetic does)
  };
  const Case cases[] = {{3937, 2147483647, 9, 0, 1, true},   {3937, 1518500250, 9, -128, 1, true},
                        {3937, 1 << 30, 15, 128, 13, true},  {32385, 1234567891, 9, 255, 3, true},
                        {1905, 2045123457, 13, -3, 3, true}, {49, 1 << 30, 12, 100, 1, true},
                        {3, 1 << 30, 9, 100, 1, false}};
  const int rows = 61;
  for (const Case& test : cases) {
    SCOPED_TRACE(std::to_string(test.multiplier) + " >> " + std::to_string(test.shift) + " + " +
                 std::to_string(test.offset) + ", divisor " + std::to_string(test.divisor));
    const double scale = std::ldexp(test.multiplier, -(31 + test.shift)) / test.divisor;
    // Sums from results 150 below the clamp's range to 150 above, with the terms' 120 each way.
    const auto first_sum =
        static_cast<std::int32_t>(std::floor((-150 - 120 - test.offset) / (65025 * scale)));
    const auto last_sum =
        static_cast<std::int32_t>(std::ceil((255 + 150 + 120 - test.offset) / (65025 * scale)));
    std::vector<std::int32_t> acc;
    for (std::int64_t sum = first_sum; sum <= last_sum; sum += test.sum_step) {
      acc.push_back(static_cast<std::int32_t>(sum));
    }
    // And sums far beyond, whose results float cannot hold where the divisor is small.
    const std::vector<std::int32_t> edges = EdgeValues();
    acc.insert(acc.end(), edges.begin(), edges.end());
    const int cols = static_cast<int>(acc.size() + rows - 1) / rows;
    acc.resize(static_cast<std::size_t>(rows) * cols, 0);
    // Terms whose products move results by up to about 60 each way: random integers up to
    // sqrt(60 / scale), exact in double, and their float values.
    std::mt19937 random(static_cast<std::uint32_t>(test.shift * 7 + test.offset));
    const double term_limit = std::floor(std::sqrt(60 / scale));
    std::uniform_real_distribution<double> uniform(-term_limit, term_limit);
    const auto terms = [&](int count) {
      std::vector<double> values(count);
      for (double& value : values) value = std::nearbyint(uniform(random));
      return values;
    };
    for (bool uniform_offsets : {false, true}) {
      SCOPED_TRACE(uniform_offsets ? "uniform offsets" : "per-channel offsets");
      std::vector<double> lhs_a = terms(kRowStart + rows), lhs_b = terms(kRowStart + rows);
      std::vector<double> rhs_a = terms(kColStart + cols), rhs_b = terms(kColStart + cols);
      // With uniform offsets the lhs rows' a and the rhs columns' b are one value each, and each
      // line has a term the same all along it.
      if (uniform_offsets) {
        std::fill(lhs_a.begin(), lhs_a.end(), lhs_a[0]);
        std::fill(rhs_b.begin(), rhs_b.end(), rhs_b[0]);
      }
      internal::Rescale rescale{
          {lhs_a.data(), lhs_b.data()}, {rhs_a.data(), rhs_b.data()}, test.divisor};
      std::vector<float> floats[4];
      AddFloatTerms(&rescale, kRowStart + rows, kColStart + cols, floats);
      // Whether the float form takes these lines, or the test checks only the exact arithmetic.
      EXPECT_EQ(internal::output_writer::RescaledByteScaleConstants(
                    test.multiplier, test.shift, test.offset, test.divisor, term_limit, term_limit,
                    term_limit, term_limit)
                    .usable,
                test.float_form);
      // Separable offset terms of zero: the writer's loop for separable terms and a rescale.
      const std::vector<std::int32_t> row_part(rows, 0), col_part(cols, 0);
      const internal::OffsetTerms offset_terms =
          internal::OffsetTerms::Separable(row_part.data(), col_part.data());
      const OutputStageQuantizeDownInt32ByFixedPoint quantize_down{test.multiplier, test.shift,
                                                                   test.offset};
      const auto check = [&](const auto& pipeline) {
        using Result = typename meta::PipelineOutput<std::decay_t<decltype(pipeline)>>::type;
        internal::OutputProgram program;
        ASSERT_TRUE(meta::CompileOutputProgram(pipeline, &program));
        for (const KernelWriter& kernel_writer : Writers()) {
          SCOPED_TRACE(KernelName(kernel_writer.kernel));
          WriteInEveryLayout<Result>(
              kernel_writer.writer, program, rows, cols, acc, offset_terms, &rescale,
              [&](const MatrixMap<Result>& out_map, const internal::AccumulatorBlock& block) {
                for (int r = 0; r < rows; ++r) {
                  for (int c = 0; c < cols; ++c) {
                    std::int32_t value = acc[r * block.row_stride + c * block.col_stride];
                    const std::int32_t sum = value;
                    internal::RescaleBlock(rescale, kRowStart + r, 1, kColStart + c, 1, &value, 1);
                    ASSERT_EQ(out_map(kRowStart + r, kColStart + c),
                              meta::EvalPipeline(pipeline, value, kRowStart + r, kColStart + c))
                        << "sum " << sum << " rescaled to " << value << " at (" << r << ", " << c
                        << ")";
                  }
                }
              });
          if (HasFatalFailure()) return;
        }
      };
      check(std::make_tuple(quantize_down, OutputStageSaturatingCastToUint8{}));
      check(std::make_tuple(quantize_down, OutputStageSaturatingCastToInt8{}));
      // Per channel: multipliers up to a quarter apart, so that each line across the channels has
      // constants of its own (the lines along them take the exact arithmetic).
      const int channels = std::max(kRowStart + rows, kColStart + cols);
      std::vector<std::int32_t> multipliers(channels), shifts(channels, test.shift);
      for (std::size_t i = 0; i < multipliers.size(); ++i) {
        multipliers[i] =
            test.multiplier - static_cast<std::int32_t>(i % 5) * (test.multiplier / 16);
      }
      for (ChannelAxis axis : {ChannelAxis::kRow, ChannelAxis::kCol}) {
        check(std::make_tuple(
            OutputStageQuantizeDownInt32ByFixedPointPerChannel{
                VectorMap<const std::int32_t>(multipliers.data(), channels),
                VectorMap<const std::int32_t>(shifts.data(), channels), test.offset, axis},
            OutputStageSaturatingCastToUint8{}));
      }
    }
  }
}

// Stages without a compiled form keep the whole pipeline on the scalar path.
TEST(OutputWriterTest, PipelinesWithScalarOnlyStagesDoNotCompile) {
  internal::OutputProgram program;
  EXPECT_FALSE(meta::CompileOutputProgram(
      std::make_tuple(OutputStageClamp{0, 1}, OutputStageTanh{0, 100}), &program));
  EXPECT_FALSE(meta::CompileOutputProgram(
      std::make_tuple(OutputStageQuantizeDownInt32ToUint8Scale{0, 1, 0}), &program));
  EXPECT_TRUE(meta::CompileOutputProgram(
      std::make_tuple(OutputStageShiftByPOT{-3, Rounding::kNearest, 1}), &program));
  EXPECT_TRUE(meta::CompileOutputProgram(
      std::make_tuple(OutputStageShiftByPOT{-3, Rounding::kStochastic, 1}), &program));
}

}  // namespace
}  // namespace lowbit
