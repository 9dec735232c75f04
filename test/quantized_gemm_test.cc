// Tests of lowbit/public/quantized_gemm.h: the pipeline's integers against QuantizeMultiplier and
// the activations' bounds, QuantizedGemm against the real product, the fully-connected layer
// against the same GEMM built by hand and against its float layer, on every kernel and thread
// count, and each bad argument.
#include "lowbit/public/quantized_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lowbit/lowbit.h"
#include "test/test_util.h"

namespace lowbit {
namespace {

using test::ExpectError;

TEST(QuantizedGemmPipelineTest, IntegersAndActivationBounds) {
  const QuantizationParams lhs{0.02, 130}, rhs{0.005, -3}, result{0.1, 20};
  const QuantizedGemmPipeline none = MakeQuantizedGemmPipeline(lhs, rhs, result);
  const FixedPointMultiplier multiplier = QuantizeMultiplier(0.02 * 0.005 / 0.1);
  EXPECT_EQ(none.lhs_offset, -130);
  EXPECT_EQ(none.rhs_offset, 3);
  EXPECT_EQ(none.requantize.result_fixedpoint_multiplier, multiplier.multiplier);
  EXPECT_EQ(none.requantize.result_exponent, multiplier.exponent);
  EXPECT_EQ(none.requantize.result_offset_after_exponent, 20);
  EXPECT_EQ(none.clamp.min, 0);
  EXPECT_EQ(none.clamp.max, 255);
  const QuantizedGemmPipeline relu =
      MakeQuantizedGemmPipeline(lhs, rhs, result, QuantizedType::Uint8(), FusedActivation::kRelu);
  EXPECT_EQ(relu.clamp.min, 20);
  EXPECT_EQ(relu.clamp.max, 255);
  const QuantizedGemmPipeline relu6 = MakeQuantizedGemmPipeline(
      lhs, rhs, {0.05, -100}, QuantizedType::Int8(), FusedActivation::kRelu6);
  EXPECT_EQ(relu6.clamp.min, -100);
  EXPECT_EQ(relu6.clamp.max, 20);  // 6 / 0.05 = 120 steps above -100
  // A 6 beyond the type's range stays at its end.
  EXPECT_EQ(
      MakeQuantizedGemmPipeline(lhs, rhs, result, QuantizedType::Uint8(), FusedActivation::kRelu6)
          .clamp.max,
      80);
  EXPECT_EQ(MakeQuantizedGemmPipeline(lhs, rhs, {0.01, 20}, QuantizedType::Uint8(),
                                      FusedActivation::kRelu6)
                .clamp.max,
            255);
}

// From real ranges: each range's asymmetric params in its type, then the same pipeline.
TEST(QuantizedGemmPipelineTest, FromRanges) {
  const QuantizedGemmPipeline pipeline = MakeQuantizedGemmPipeline(
      {-1.0, 3.0}, QuantizedType::Uint8(), {-0.5, 0.25}, QuantizedType::Int8(), {0.0, 6.0},
      QuantizedType::Uint8(), FusedActivation::kRelu6);
  const QuantizationParams lhs = ChooseQuantizationParams(-1.0, 3.0);
  const QuantizationParams rhs = ChooseQuantizationParams(-0.5, 0.25, QuantizedType::Int8());
  const QuantizationParams result = ChooseQuantizationParams(0.0, 6.0);
  EXPECT_EQ(pipeline.lhs.scale, lhs.scale);
  EXPECT_EQ(pipeline.lhs.zero_point, lhs.zero_point);
  EXPECT_EQ(pipeline.rhs.zero_point, rhs.zero_point);
  EXPECT_EQ(pipeline.result.scale, result.scale);
  const QuantizedGemmPipeline from_params =
      MakeQuantizedGemmPipeline(lhs, rhs, result, QuantizedType::Uint8(), FusedActivation::kRelu6);
  EXPECT_EQ(pipeline.lhs_offset, from_params.lhs_offset);
  EXPECT_EQ(pipeline.rhs_offset, from_params.rhs_offset);
  EXPECT_EQ(pipeline.requantize.result_fixedpoint_multiplier,
            from_params.requantize.result_fixedpoint_multiplier);
  EXPECT_EQ(pipeline.requantize.result_exponent, from_params.requantize.result_exponent);
  EXPECT_EQ(pipeline.clamp.min, 0);
  EXPECT_EQ(pipeline.clamp.max, 255);  // [0, 6] is the whole range
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline({1.0, -1.0}, QuantizedType::Uint8(), {-1, 1},
                                  QuantizedType::Int8(), {0, 1});
      },
      "lhs.min", "must not exceed");
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline({-1, 1}, QuantizedType::Uint8(), {NAN, 1}, QuantizedType::Int8(),
                                  {0, 1});
      },
      "rhs.min", "finite");
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline({-1, 1}, QuantizedType::Uint8(), {-1, 1}, {true, 12}, {0, 1});
      },
      "rhs_type.bits", "[2, 8]");
}

TEST(QuantizedGemmPipelineTest, BadArgumentsAreNamed) {
  const QuantizationParams good{0.5, 3};
  ExpectError([&] { MakeQuantizedGemmPipeline({0, 3}, good, good); }, "lhs.scale", "positive");
  ExpectError([&] { MakeQuantizedGemmPipeline(good, {NAN, 3}, good); }, "rhs.scale", "finite");
  ExpectError([&] { MakeQuantizedGemmPipeline(good, good, {-1, 3}); }, "result.scale", "positive");
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline({0.5, 300}, good, good);
      },
      "lhs.zero_point", "[-255, 255]");
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline(good, {0.5, -256}, good);
      },
      "rhs.zero_point", "[-255, 255]");
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline(good, good, {0.5, 200}, QuantizedType::Int8());
      },
      "result.zero_point", "[-128, 127]");
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline(good, good, good, {false, 9});
      },
      "result_type.bits", "[2, 8]");
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline(good, good, good, QuantizedType::Uint8(),
                                  static_cast<FusedActivation>(7));
      },
      "activation", "kRelu6");
  // 0.5 * 0.5 / 1e-12: a multiplier beyond 2^30.
  ExpectError(
      [&] {
        MakeQuantizedGemmPipeline(good, good, {1e-12, 3});
      },
      "result.scale", "fixed-point");
}

// The real product of the dequantized operands, requantized in double: the GEMM is within one
// step of it (the multiplier's 31 bits and the two roundings), and almost always equal.
TEST(QuantizedGemmTest, MatchesTheRealProductOnEveryPath) {
  std::mt19937 random(5);
  const QuantizationParams lhs_params{0.013, 120}, rhs_params{0.021, -7};
  for (const test::PathSetting& setting : test::PathSettings({1, 2})) {
    SCOPED_TRACE(testing::PrintToString(setting));
    Context context;
    test::Configure(&context, setting);
    for (const test::Shape& shape :
         {test::Shape{1, 1, 1}, test::Shape{7, 33, 19}, test::Shape{40, 200, 65}}) {
      test::OwnedMatrix<std::uint8_t> lhs(shape.rows, shape.depth, Order::kRowMajor, 1, &random);
      test::OwnedMatrix<std::int8_t> rhs(shape.depth, shape.cols, Order::kColMajor, 0, &random);
      // A result scale that covers most products and saturates a few.
      const double result_scale = lhs_params.scale * rhs_params.scale * 6.0 * shape.depth;
      for (FusedActivation activation : {FusedActivation::kNone, FusedActivation::kRelu}) {
        std::vector<std::int8_t> out(static_cast<std::size_t>(shape.rows) * shape.cols);
        QuantizedMatrix<std::int8_t> result{
            MatrixMap<std::int8_t>(out.data(), shape.rows, shape.cols, Order::kRowMajor),
            {result_scale, -5}};
        QuantizedGemm(&context, QuantizedMatrix<const std::uint8_t>{lhs.const_map(), lhs_params},
                      QuantizedMatrix<const std::int8_t>{rhs.const_map(), rhs_params}, &result,
                      activation);
        int exact = 0;
        for (int r = 0; r < shape.rows; ++r) {
          for (int c = 0; c < shape.cols; ++c) {
            double real = 0;
            for (int k = 0; k < shape.depth; ++k) {
              real += lhs_params.scale * (lhs.map(r, k) - lhs_params.zero_point) *
                      rhs_params.scale * (rhs.map(k, c) - rhs_params.zero_point);
            }
            const double low = activation == FusedActivation::kRelu ? -5 : -128;
            const double expected =
                std::min(std::max(std::round(real / result_scale) - 5, low), 127.0);
            const int got = result.map(r, c);
            ASSERT_LE(std::abs(got - expected), 1) << "at (" << r << ", " << c << ")";
            exact += got == expected;
          }
        }
        EXPECT_GE(exact, shape.rows * shape.cols * 9 / 10);
      }
    }
  }
}

TEST(QuantizedGemmTest, ZeroPointsMustFitTheData) {
  Context context;
  std::vector<std::uint8_t> data(4, 1);
  std::vector<std::int8_t> signed_data(4, 1), out(4, 9);
  const QuantizedMatrix<const std::uint8_t> lhs{
      MatrixMap<const std::uint8_t>(data.data(), 2, 2, Order::kRowMajor), {0.5, -1}};
  const QuantizedMatrix<const std::int8_t> rhs{
      MatrixMap<const std::int8_t>(signed_data.data(), 2, 2, Order::kColMajor), {0.5, 200}};
  QuantizedMatrix<std::int8_t> result{MatrixMap<std::int8_t>(out.data(), 2, 2, Order::kRowMajor),
                                      {1.0, 0}};
  ExpectError([&] { QuantizedGemm(&context, lhs, rhs, &result); }, "lhs.params.zero_point",
              "[0, 255]");
  const QuantizedMatrix<const std::uint8_t> good_lhs{lhs.map, {0.5, 1}};
  ExpectError([&] { QuantizedGemm(&context, good_lhs, rhs, &result); }, "rhs.params.zero_point",
              "[-128, 127]");
  EXPECT_EQ(out, std::vector<std::int8_t>(4, 9));
}

// A float layer with ranges of very different sizes across its channels, a bias and a ReLU.
struct FloatLayer {
  int inputs = 24, outputs = 13;
  std::vector<float> weights, bias;
  explicit FloatLayer(std::mt19937* random) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int c = 0; c < outputs; ++c) {
      const float channel_size = std::ldexp(1.0f, c % 5 - 3);
      for (int i = 0; i < inputs; ++i) weights.push_back(normal(*random) * channel_size);
      bias.push_back(0.3f * normal(*random));
    }
    for (int i = 0; i < inputs; ++i) weights[7 * inputs + i] = 0;  // an all-zero channel
  }
};

// The layer against the same GEMM built from its own quantized weights by hand (bit for bit),
// and its dequantized output against the float layer applied to the dequantized input (within
// the quantization error), on every kernel and thread count, with a batch of 1, 5 and 70.
TEST(QuantizedFullyConnectedTest, MatchesTheHandBuiltGemmAndTheFloatLayer) {
  std::mt19937 random(9);
  const FloatLayer layer(&random);
  const QuantizationParams input{0.04, 12}, output{0.05, -20};
  for (const test::PathSetting& setting : test::PathSettings({1, 2})) {
    SCOPED_TRACE(testing::PrintToString(setting));
    Context context;
    test::Configure(&context, setting);
    const QuantizedFullyConnected fully_connected(
        &context, layer.weights.data(), layer.bias.data(), layer.inputs, layer.outputs, input,
        QuantizedType::Uint8(), output, QuantizedType::Int8(), FusedActivation::kRelu);
    ASSERT_EQ(fully_connected.inputs(), layer.inputs);
    ASSERT_EQ(fully_connected.outputs(), layer.outputs);
    EXPECT_EQ(fully_connected.weight_params()[7].scale, 1.0);  // the all-zero channel
    for (int batch : {1, 5, 70}) {
      test::OwnedMatrix<std::uint8_t> x(batch, layer.inputs, Order::kRowMajor, 0, &random);
      std::vector<std::int8_t> y(static_cast<std::size_t>(batch) * layer.outputs);
      MatrixMap<std::int8_t> y_map(y.data(), batch, layer.outputs, Order::kRowMajor);
      fully_connected.Run(&context, x.const_map(), &y_map);

      // By hand: the weights as the column-major rhs, per-column bias and multipliers.
      std::vector<double> real_multipliers;
      for (const QuantizationParams& channel : fully_connected.weight_params()) {
        real_multipliers.push_back(input.scale * channel.scale / output.scale);
      }
      const FixedPointMultipliers multipliers = QuantizeMultipliers(real_multipliers);
      std::vector<std::int8_t> expected(y.size());
      MatrixMap<std::int8_t> expected_map(expected.data(), batch, layer.outputs, Order::kRowMajor);
      GemmWithOutputPipeline(
          &context, x.const_map(),
          MatrixMap<const std::int8_t>(fully_connected.quantized_weights().data(), layer.inputs,
                                       layer.outputs, Order::kColMajor),
          &expected_map, -input.zero_point, 0,
          std::make_tuple(
              OutputStageBiasAddition{
                  VectorMap<const std::int32_t>(fully_connected.bias().data(), layer.outputs),
                  ChannelAxis::kCol},
              OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
                  VectorMap<const std::int32_t>(multipliers.multipliers.data(), layer.outputs),
                  VectorMap<const std::int32_t>(multipliers.exponents.data(), layer.outputs),
                  output.zero_point, ChannelAxis::kCol},
              OutputStageClamp{output.zero_point, 127}, OutputStageSaturatingCastToInt8{}));
      ASSERT_EQ(y, expected) << "batch " << batch;

      // Against the float layer on the dequantized input: each weight is within half its
      // channel's step, the bias within half a step of its scale, the output rounded once more.
      for (int b = 0; b < batch; ++b) {
        for (int c = 0; c < layer.outputs; ++c) {
          double real = layer.bias[c];
          double bound = output.scale / 2 + input.scale * fully_connected.weight_params()[c].scale;
          for (int i = 0; i < layer.inputs; ++i) {
            const double x_real = input.scale * (x.map(b, i) - input.zero_point);
            real += double{layer.weights[c * layer.inputs + i]} * x_real;
            bound += std::abs(x_real) * fully_connected.weight_params()[c].scale / 2;
          }
          const double low = 0, high = output.scale * (127 - output.zero_point);
          const double clamped = std::min(std::max(real, low), high);
          const double got = output.scale * (y_map(b, c) - output.zero_point);
          ASSERT_LE(std::abs(got - clamped), bound + 1e-9) << "example " << b << ", output " << c;
        }
      }
    }
  }
}

// Weights quantized elsewhere go in as they are: the int8 constructor on the float layer's own
// quantization gives the same bits.
TEST(QuantizedFullyConnectedTest, Int8WeightsGiveTheSameLayer) {
  std::mt19937 random(10);
  const FloatLayer layer(&random);
  const QuantizationParams input{0.04, -12}, output{0.05, 100};
  Context context;
  const QuantizedFullyConnected from_float(&context, layer.weights.data(), layer.bias.data(),
                                           layer.inputs, layer.outputs, input,
                                           QuantizedType::Int8(), output, QuantizedType::Uint8());
  std::vector<double> scales;
  for (const QuantizationParams& channel : from_float.weight_params()) {
    scales.push_back(channel.scale);
  }
  const QuantizedFullyConnected from_int8(&context, from_float.quantized_weights().data(), scales,
                                          from_float.bias().data(), layer.inputs, input,
                                          QuantizedType::Int8(), output, QuantizedType::Uint8());
  test::OwnedMatrix<std::int8_t> x(9, layer.inputs, Order::kColMajor, 2, &random);
  std::vector<std::uint8_t> a(9 * layer.outputs), b(9 * layer.outputs);
  MatrixMap<std::uint8_t> a_map(a.data(), 9, layer.outputs, Order::kColMajor);
  MatrixMap<std::uint8_t> b_map(b.data(), 9, layer.outputs, Order::kColMajor);
  from_float.Run(&context, x.const_map(), &a_map);
  from_int8.Run(&context, x.const_map(), &b_map);
  EXPECT_EQ(a, b);
  // Without a bias the layer is the same as with a zero bias.
  const std::vector<float> zeros(layer.outputs, 0.0f);
  const QuantizedFullyConnected no_bias(&context, layer.weights.data(), nullptr, layer.inputs,
                                        layer.outputs, input, QuantizedType::Int8(), output,
                                        QuantizedType::Uint8());
  const QuantizedFullyConnected zero_bias(&context, layer.weights.data(), zeros.data(),
                                          layer.inputs, layer.outputs, input, QuantizedType::Int8(),
                                          output, QuantizedType::Uint8());
  no_bias.Run(&context, x.const_map(), &a_map);
  zero_bias.Run(&context, x.const_map(), &b_map);
  EXPECT_EQ(a, b);
}

TEST(QuantizedFullyConnectedTest, BadArgumentsAreNamed) {
  Context context;
  std::vector<float> weights(6, 0.5f), bias(3, 0.0f);
  const QuantizationParams good{0.1, 0};
  const auto make = [&](Context* c, const float* w, const float* b, int inputs, int outputs,
                        const QuantizationParams& input, QuantizedType input_type,
                        const QuantizationParams& output, QuantizedType output_type,
                        FusedActivation activation) {
    QuantizedFullyConnected(c, w, b, inputs, outputs, input, input_type, output, output_type,
                            activation);
  };
  const QuantizedType u8 = QuantizedType::Uint8();
  const FusedActivation none = FusedActivation::kNone;
  ExpectError([&] { make(nullptr, weights.data(), bias.data(), 2, 3, good, u8, good, u8, none); },
              "context", "null");
  ExpectError([&] { make(&context, weights.data(), bias.data(), 0, 3, good, u8, good, u8, none); },
              "inputs", "positive");
  ExpectError([&] { make(&context, weights.data(), bias.data(), 2, -1, good, u8, good, u8, none); },
              "outputs", "positive");
  ExpectError([&] { make(&context, nullptr, bias.data(), 2, 3, good, u8, good, u8, none); },
              "weights", "null");
  ExpectError(
      [&] {
        make(&context, weights.data(), bias.data(), 2, 3, good, QuantizedType::Unsigned(4), good,
             u8, none);
      },
      "input_type.bits", "8");
  ExpectError(
      [&] {
        make(&context, weights.data(), bias.data(), 2, 3, {0, 0}, u8, good, u8, none);
      },
      "input.scale", "positive");
  ExpectError(
      [&] {
        make(&context, weights.data(), bias.data(), 2, 3, good, u8, {0.1, 300}, u8, none);
      },
      "output.zero_point", "[0, 255]");
  ExpectError(
      [&] {
        make(&context, weights.data(), bias.data(), 2, 3, good, u8, good, u8,
             static_cast<FusedActivation>(3));
      },
      "activation", "kRelu6");
  weights[4] = std::numeric_limits<float>::infinity();
  ExpectError([&] { make(&context, weights.data(), bias.data(), 2, 3, good, u8, good, u8, none); },
              "weights[4]", "finite");
  weights[4] = 0.5f;
  bias[2] = 1e30f;
  ExpectError([&] { make(&context, weights.data(), bias.data(), 2, 3, good, u8, good, u8, none); },
              "bias[2]", "int32");
  bias[2] = 0;
  // 0.1 * (0.5 / 127) / 1e-15: no fixed-point multiplier.
  ExpectError(
      [&] {
        make(&context, weights.data(), bias.data(), 2, 3, good, u8, {1e-15, 0}, u8, none);
      },
      "output.scale", "fixed-point");
  ExpectError(
      [&] {
        QuantizedFullyConnected(&context, static_cast<const std::int8_t*>(nullptr),
                                std::vector<double>{0.1}, nullptr, 2, good, u8, good, u8);
      },
      "weights", "null");
  const std::vector<std::int8_t> int8_weights(6, 1);
  ExpectError(
      [&] {
        QuantizedFullyConnected(&context, int8_weights.data(), std::vector<double>{}, nullptr, 2,
                                good, u8, good, u8);
      },
      "weight_scales", "one scale per output");
  ExpectError(
      [&] {
        QuantizedFullyConnected(&context, int8_weights.data(), std::vector<double>{0.1, -1, 0.1},
                                nullptr, 2, good, u8, good, u8);
      },
      "weight_scales[1]", "positive");

  // Run.
  const QuantizedFullyConnected layer(&context, weights.data(), bias.data(), 2, 3, good, u8, good,
                                      u8);
  std::vector<std::uint8_t> x(8, 1), y(12, 7);
  std::vector<std::int8_t> signed_x(8, 1), signed_y(12, 7);
  MatrixMap<std::uint8_t> y_map(y.data(), 4, 3, Order::kRowMajor);
  MatrixMap<std::int8_t> signed_y_map(signed_y.data(), 4, 3, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> x_map(x.data(), 4, 2, Order::kRowMajor);
  ExpectError(
      [&] {
        layer.Run(&context, MatrixMap<const std::int8_t>(signed_x.data(), 4, 2, Order::kRowMajor),
                  &y_map);
      },
      "input", "uint8_t");
  ExpectError([&] { layer.Run(&context, x_map, &signed_y_map); }, "output", "uint8_t");
  ExpectError(
      [&] {
        layer.Run(&context, MatrixMap<const std::uint8_t>(x.data(), 2, 4, Order::kRowMajor),
                  &y_map);
      },
      "input", "one column per input");
  MatrixMap<std::uint8_t> short_y(y.data(), 3, 3, Order::kRowMajor);
  ExpectError([&] { layer.Run(&context, x_map, &short_y); }, "output", "4 x 3");
  // Packed for this context's kernel: another kernel's context is refused by the GEMM.
  if (AvailableKernels().size() > 1) {
    Context other;
    other.set_kernel(AvailableKernels().front());
    if (other.ResolvedKernel() != context.ResolvedKernel()) {
      ExpectError([&] { layer.Run(&other, x_map, &y_map); }, "rhs", "kernel");
    }
  }
  EXPECT_EQ(y, std::vector<std::uint8_t>(12, 7));
  layer.Run(&context, x_map, &y_map);
  // 2 inputs of real 0.1 times weights 0.5 (exactly 127 steps of 0.5 / 127): 0.1 = 1 step.
  EXPECT_EQ(y, std::vector<std::uint8_t>(12, 1));
}

// The snippets of doc/quantization.md, sections 11 and 12.
TEST(QuantizedGemmTest, DocumentationSnippets) {
  Context context;
  std::vector<std::uint8_t> a_data = {0, 128, 255, 200, 64, 100};  // 2 x 3
  std::vector<std::int8_t> b_data = {127, -127, 0, 64, 10, -10};   // 3 x 2
  std::vector<std::uint8_t> c_data(4);
  const MatrixMap<const std::uint8_t> a_map(a_data.data(), 2, 3, Order::kRowMajor);
  const MatrixMap<const std::int8_t> b_map(b_data.data(), 3, 2, Order::kColMajor);
  MatrixMap<std::uint8_t> c_map(c_data.data(), 2, 2, Order::kRowMajor);
  const QuantizedMatrix<const std::uint8_t> a{a_map, ChooseQuantizationParams(-1.0, 1.0)};
  const QuantizedMatrix<const std::int8_t> b{
      b_map,
      ChooseQuantizationParams(-0.5, 0.5, QuantizedType::Int8(), QuantizationMode::kSymmetric)};
  QuantizedMatrix<std::uint8_t> c{c_map, ChooseQuantizationParams(0.0, 8.0)};
  QuantizedGemm(&context, a, b, &c, FusedActivation::kRelu);  // c = max(0, a b), quantized
  for (int r = 0; r < 2; ++r) {
    for (int col = 0; col < 2; ++col) {
      double real = 0;
      for (int k = 0; k < 3; ++k) {
        real += a.params.scale * (a_map(r, k) - a.params.zero_point) * b.params.scale *
                (b_map(k, col) - b.params.zero_point);
      }
      EXPECT_NEAR(c.params.scale * (c_map(r, col) - c.params.zero_point), std::max(real, 0.0),
                  c.params.scale);
    }
  }

  const int inputs = 3, outputs = 2, batch = 2;
  const std::vector<float> W = {0.5f, -0.25f, 1.0f, -1.0f, 0.0f, 0.75f}, bias = {0.1f, -0.2f};
  const QuantizationParams input_params = ChooseQuantizationParams(0.0, 2.0);
  const QuantizationParams output_params = ChooseQuantizationParams(0.0, 4.0);
  std::vector<std::uint8_t> x = {0, 50, 255, 100, 100, 100}, y(4);
  MatrixMap<std::uint8_t> y_map(y.data(), batch, outputs, Order::kRowMajor);
  const QuantizedFullyConnected layer(&context, W.data(), bias.data(), inputs, outputs,
                                      input_params, QuantizedType::Uint8(), output_params,
                                      QuantizedType::Uint8(), FusedActivation::kRelu);
  layer.Run(&context, MatrixMap<const std::uint8_t>(x.data(), batch, inputs, Order::kRowMajor),
            &y_map);
  for (int e = 0; e < batch; ++e) {
    for (int o = 0; o < outputs; ++o) {
      double real = bias[o];
      for (int i = 0; i < inputs; ++i) {
        real +=
            W[o * inputs + i] * input_params.scale * (x[e * inputs + i] - input_params.zero_point);
      }
      EXPECT_NEAR(output_params.scale * (y_map(e, o) - output_params.zero_point),
                  std::max(real, 0.0), 2 * output_params.scale);
    }
  }
}

}  // namespace
}  // namespace lowbit
