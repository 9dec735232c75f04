// The integer training layer (train/): stochastic rounding, the layers' forward and backward
// against exact 64-bit references, exponent bookkeeping, the straight-through mask, and the same
// bits for every thread count and kernel.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "lowbit/lowbit.h"
#include "test/train_test_util.h"
#include "train/architecture.h"
#include "train/data.h"
#include "train/dyadic.h"
#include "train/float_twin.h"
#include "train/layers.h"
#include "train/model_file.h"
#include "train/network.h"

namespace lowbit {
namespace train {
namespace {

TEST(StochasticRoundingTest, IsUnbiasedAndDeterministicPerSeed) {
  for (const std::int32_t v : {1, 5, 77, -77, 1000, -12345, 65535}) {
    for (const int shift : {1, 3, 7, 12}) {
      double sum = 0;
      const int draws = 1 << 14;
      for (int i = 0; i < draws; ++i) {
        const std::int32_t rounded =
            ShiftRound(v, shift, TrainRounding::kStochastic, 1234, i / 128, i % 128);
        // Always one of the two neighbours of v / 2^shift.
        const std::int32_t floor = v >> shift;
        ASSERT_TRUE(rounded == floor || rounded == floor + 1) << v << " " << shift;
        sum += rounded;
      }
      const double exact = std::ldexp(double(v), -shift);
      // The mean of 2^14 draws, each off by less than 1: within 5 standard deviations of
      // 0.5 / 128.
      EXPECT_NEAR(sum / draws, exact, 5 * 0.5 / 128) << v << " >> " << shift;
    }
  }
  EXPECT_EQ(ShiftRound(12345, 6, TrainRounding::kStochastic, 9, 3, 4),
            ShiftRound(12345, 6, TrainRounding::kStochastic, 9, 3, 4));
  int differ = 0;
  for (int col = 0; col < 64; ++col) {
    differ += ShiftRound(12345, 6, TrainRounding::kStochastic, 9, 0, col) !=
              ShiftRound(12345, 6, TrainRounding::kStochastic, 10, 0, col);
  }
  EXPECT_GT(differ, 0) << "another seed gives other draws";
  EXPECT_EQ(ShiftRound(96, 6, TrainRounding::kNearest, 0, 0, 0), 2);  // 1.5 rounds away
  EXPECT_EQ(ShiftRound(-96, 6, TrainRounding::kNearest, 0, 0, 0), -2);
  EXPECT_EQ(ShiftRound(3, -4, TrainRounding::kNearest, 0, 0, 0), 48);
  EXPECT_THROW(ShiftRound(3, 32, TrainRounding::kNearest, 0, 0, 0), Error);
}

TEST(RequantizeTest, ShiftsAndClipsToTheBitWidth) {
  DyadicInt32 x(1, 4, 10);
  x.mantissas = {1024, -1024 * 200, 64 * 1024, 512};
  const DyadicInt8 y = Requantize(x, 4, 8, TrainRounding::kNearest, 0);
  EXPECT_EQ(y.exponent, 4);
  EXPECT_EQ(y.mantissas, (std::vector<std::int8_t>{16, -128, 127, 8}));
  const DyadicInt8 narrow = Requantize(x, 4, 4, TrainRounding::kNearest, 0);
  EXPECT_EQ(narrow.mantissas, (std::vector<std::int8_t>{7, -8, 7, 7}));
}

// The exponents of the Linear layers below: input 4, weights 6, forward shift 7 (output exponent
// 3), backward shift 5 (input gradient exponent = output gradient exponent + 1).
LinearExponents TestExponents() {
  LinearExponents exponents;
  exponents.input_exponent = 4;
  exponents.weight_exponent = 6;
  exponents.forward_shift = 7;
  exponents.backward_shift = 5;
  return exponents;
}

// A Linear layer with nearest rounding against a 64-bit reference: forward, and backward's
// weight, bias and input gradients, with exponents that differ from layer to layer.
TEST(LinearTest, ForwardAndBackwardMatchAnExactReference) {
  Context context;
  const int batch = 5, inputs = 7, outputs = 3;
  const LinearExponents exponents = TestExponents();
  SeedSequence init(1);
  Linear layer(inputs, outputs, exponents, 8, TrainRounding::kNearest, &init);
  const DyadicInt8 w = RandomInt8(outputs, inputs, 6, -100, 100, 2);
  const std::vector<std::int32_t> bias = {300, -2000, 17};
  layer.SetWeights(w.mantissas, bias);
  const DyadicInt8 x = RandomInt8(batch, inputs, 4, -128, 127, 3);
  const DyadicInt8 y = layer.Forward(&context, x, 0);
  ASSERT_EQ(y.exponent, 3);
  for (int b = 0; b < batch; ++b) {
    for (int o = 0; o < outputs; ++o) {
      std::int64_t acc = bias[o];
      for (int i = 0; i < inputs; ++i) acc += std::int64_t{x.at(b, i)} * w.at(o, i);
      EXPECT_EQ(y.at(b, o), Clamp8(RoundNearest(acc, 7))) << b << "," << o;
    }
  }
  const DyadicInt8 dy = RandomInt8(batch, outputs, 9, -60, 60, 4);
  DyadicInt8 dx;
  layer.Backward(&context, dy, 0, &dx);
  ASSERT_EQ(dx.exponent, 9 + 6 - 5);
  ASSERT_EQ(layer.weight_gradient().exponent, 9 + 4);
  ASSERT_EQ(layer.bias_gradient().exponent, 9);
  for (int o = 0; o < outputs; ++o) {
    std::int64_t bias_gradient = 0;
    for (int b = 0; b < batch; ++b) bias_gradient += Clipped(y.at(b, o), 8) ? 0 : dy.at(b, o);
    EXPECT_EQ(layer.bias_gradient().mantissas[o], bias_gradient);
    for (int i = 0; i < inputs; ++i) {
      std::int64_t gradient = 0;
      for (int b = 0; b < batch; ++b) {
        gradient += Clipped(y.at(b, o), 8) ? 0 : std::int64_t{dy.at(b, o)} * x.at(b, i);
      }
      EXPECT_EQ(layer.weight_gradient().at(o, i), gradient) << o << "," << i;
    }
  }
  for (int b = 0; b < batch; ++b) {
    for (int i = 0; i < inputs; ++i) {
      std::int64_t acc = 0;
      for (int o = 0; o < outputs; ++o) {
        acc += Clipped(y.at(b, o), 8) ? 0 : std::int64_t{dy.at(b, o)} * w.at(o, i);
      }
      EXPECT_EQ(dx.at(b, i), Clamp8(RoundNearest(acc, 5))) << b << "," << i;
    }
  }
}

// One SGD step of a master entry in 64-bit arithmetic with ShiftRound: the rule of
// SgdSettings (layers.h), bounds included.
std::int64_t Clamp(std::int64_t v, std::int64_t bound) { return std::clamp(v, -bound, bound); }
void ReferenceStep(const SgdSettings& sgd, TrainRounding rounding, int gradient_exponent,
                   int master_exponent, std::uint32_t seed, int row, int col, std::int64_t gradient,
                   std::int32_t* master, std::int32_t* velocity, std::int64_t master_bound) {
  std::int64_t g = Clamp(gradient, 1 << 29);
  if (sgd.weight_decay_shift > 0) {
    g = Clamp(g + ShiftRound(*master, master_exponent - gradient_exponent + sgd.weight_decay_shift,
                             rounding, seed ^ 0x5bd1e995U, row, col),
              1 << 29);
  }
  const std::int64_t kept =
      *velocity - ShiftRound(*velocity, sgd.momentum_shift, TrainRounding::kNearest, 0, 0, 0);
  *velocity = static_cast<std::int32_t>(Clamp(g + kept, 1 << 30));
  const std::int64_t step =
      Clamp(ShiftRound(*velocity, gradient_exponent + sgd.learning_rate_shift - master_exponent,
                       rounding, seed, row, col),
            sgd.max_step > 0 ? sgd.max_step : 1 << 30);
  *master = static_cast<std::int32_t>(Clamp(*master - step, master_bound));
}

// Update against ReferenceStep for every entry, with momentum, weight decay, step clipping, both
// roundings, a weight step that divides and a bias step that multiplies (shifts 2 and -6), and
// rows longer than any vector so that vectorized loops meet their tails.
TEST(LinearTest, UpdateMatchesAnExactReference) {
  Context context;
  const int batch = 6, inputs = 37, outputs = 5;
  const LinearExponents exponents = TestExponents();
  const int weight_master_exponent = 6 + Linear::kMasterBits;
  const int bias_master_exponent = 4 + 6 + Linear::kMasterBits;
  std::vector<SgdSettings> settings(4);
  settings[0].learning_rate_shift = 3;
  settings[1].learning_rate_shift = 3;
  settings[1].momentum_shift = 3;
  settings[2].learning_rate_shift = 3;
  settings[2].momentum_shift = 1;
  settings[2].weight_decay_shift = 4;
  settings[3].learning_rate_shift = 3;
  settings[3].momentum_shift = 2;
  settings[3].max_step = 40;
  std::mt19937 generator(11);
  for (const TrainRounding rounding : {TrainRounding::kStochastic, TrainRounding::kNearest}) {
    for (const SgdSettings& sgd : settings) {
      SeedSequence init(1);
      Linear layer(inputs, outputs, exponents, 8, rounding, &init);
      // Masters anywhere in their range, velocities far from zero, so that every rounding and
      // clamp is exercised.
      std::vector<std::int32_t> state(layer.StateSize());
      const std::size_t weights = std::size_t{inputs} * outputs;
      std::uniform_int_distribution<std::int32_t> master(-127 * 256, 127 * 256);
      // Velocities small (steps that round) or large (steps that saturate and clamp).
      std::uniform_int_distribution<std::int32_t> small_velocity(-(1 << 12), 1 << 12);
      std::uniform_int_distribution<std::int32_t> large_velocity(-(1 << 25), 1 << 25);
      for (std::size_t i = 0; i < state.size(); ++i) {
        const bool is_master = i < weights + outputs;
        state[i] = is_master         ? master(generator)
                   : generator() % 2 ? small_velocity(generator)
                                     : large_velocity(generator);
      }
      layer.SetState(state.data());
      layer.Forward(&context, RandomInt8(batch, inputs, 4, -128, 127, 3), 5);
      layer.Backward(&context, RandomInt8(batch, outputs, 9, -100, 100, 4), 6, nullptr);
      const DyadicInt32 weight_gradient = layer.weight_gradient();
      const DyadicInt32 bias_gradient = layer.bias_gradient();
      SeedSequence seeds(7);
      SeedSequence reference_seeds(7);
      layer.Update(sgd, &seeds);
      const std::uint32_t weight_seed = reference_seeds.Next();
      const std::uint32_t bias_seed = reference_seeds.Next();
      std::vector<std::int32_t> expected = state;
      for (int o = 0; o < outputs; ++o) {
        for (int i = 0; i < inputs; ++i) {
          const std::size_t at = static_cast<std::size_t>(o) * inputs + i;
          ReferenceStep(sgd, rounding, weight_gradient.exponent, weight_master_exponent,
                        weight_seed, o, i, weight_gradient.at(o, i), &expected[at],
                        &expected[weights + outputs + at], 127 * 256);
        }
        ReferenceStep(sgd, rounding, bias_gradient.exponent, bias_master_exponent, bias_seed, 0, o,
                      bias_gradient.mantissas[o], &expected[weights + o],
                      &expected[2 * weights + outputs + o], (1 << 30) - 1);
      }
      std::vector<std::int32_t> updated(layer.StateSize());
      layer.GetState(updated.data());
      EXPECT_EQ(updated, expected) << "momentum " << sgd.momentum_shift << " decay "
                                   << sgd.weight_decay_shift << " max step " << sgd.max_step;
      EXPECT_NE(updated, state);
      for (std::size_t i = 0; i < weights; ++i) {
        EXPECT_EQ(layer.weights().mantissas[i], Clamp8(RoundNearest(expected[i], 8))) << i;
      }
      for (int o = 0; o < outputs; ++o) {
        EXPECT_EQ(layer.bias()[o], RoundNearest(expected[weights + o], 8)) << o;
      }
    }
  }
}

// Settings whose shifts leave [-30, 30] are errors naming the setting, before anything moves.
TEST(LinearTest, UpdateRejectsShiftsOutOfRange) {
  Context context;
  SeedSequence init(1);
  Linear layer(3, 2, TestExponents(), 8, TrainRounding::kStochastic, &init);
  layer.Forward(&context, RandomInt8(2, 3, 4, -128, 127, 3), 5);
  layer.Backward(&context, RandomInt8(2, 2, 9, -100, 100, 4), 6, nullptr);
  std::vector<std::int32_t> before(layer.StateSize());
  layer.GetState(before.data());
  const auto expect_error = [&](const SgdSettings& sgd, const std::string& setting) {
    SeedSequence seeds(7);
    try {
      layer.Update(sgd, &seeds);
      ADD_FAILURE() << setting << " was accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(setting), std::string::npos) << error.what();
    }
    std::vector<std::int32_t> after(layer.StateSize());
    layer.GetState(after.data());
    EXPECT_EQ(after, before) << setting;
  };
  SgdSettings sgd;
  sgd.learning_rate_shift = 40;  // weight step shift 9 + 4 + 40 - 14 = 39
  expect_error(sgd, "sgd.learning_rate_shift");
  sgd.learning_rate_shift = 3;
  sgd.momentum_shift = 31;
  expect_error(sgd, "sgd.momentum_shift");
  sgd.momentum_shift = 0;
  sgd.weight_decay_shift = 40;
  expect_error(sgd, "sgd.weight_decay_shift");
}

// The straight-through estimator: no gradient flows through an output that was clipped.
TEST(LinearTest, ClippedOutputsPassNoGradient) {
  Context context;
  LinearExponents exponents{0, 0, 0, 0};
  SeedSequence init(1);
  Linear layer(1, 3, exponents, 8, TrainRounding::kNearest, &init);
  layer.SetWeights({1, 1, 1}, {0, 200, -200});
  DyadicInt8 x(1, 1, 0);
  x.mantissas = {10};
  const DyadicInt8 y = layer.Forward(&context, x, 0);
  EXPECT_EQ(y.mantissas, (std::vector<std::int8_t>{10, 127, -128}));
  EXPECT_EQ(layer.clipped_outputs(), 2);
  DyadicInt8 dy(1, 3, 0);
  dy.mantissas = {5, 6, 7};
  DyadicInt8 dx;
  layer.Backward(&context, dy, 0, &dx);
  EXPECT_EQ(layer.bias_gradient().mantissas, (std::vector<std::int32_t>{5, 0, 0}));
  EXPECT_EQ(dx.mantissas, (std::vector<std::int8_t>{5}));
}

TEST(ReluTest, PassesTheGradientWherePositive) {
  DyadicInt8 x(1, 4, 3);
  x.mantissas = {-5, 0, 7, 127};
  Relu relu;
  EXPECT_EQ(relu.Forward(nullptr, x, 0).mantissas, (std::vector<std::int8_t>{0, 0, 7, 127}));
  DyadicInt8 dy(1, 4, 9);
  dy.mantissas = {1, 2, 3, 4};
  DyadicInt8 dx;
  relu.Backward(nullptr, dy, 0, &dx);
  EXPECT_EQ(dx.exponent, 9);
  EXPECT_EQ(dx.mantissas, (std::vector<std::int8_t>{0, 0, 3, 4}));
  // A gradient of another shape than the forward output is an error, before anything is read.
  const DyadicInt8 wrong(1, 5, 9);
  try {
    relu.Backward(nullptr, wrong, 0, &dx);
    ADD_FAILURE() << "a 1 x 5 gradient for a 1 x 4 output was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("relu output gradient"), std::string::npos)
        << error.what();
  }
}

// Three layers with known, different shifts: the forward output's exponent is the input's plus
// each layer's weight exponent minus its forward shift; going back, each layer's input gradient
// has the incoming gradient's exponent plus its weight exponent minus its backward shift. The
// real values (mantissa * 2^-exponent) agree with a double-precision chain to within the
// roundings, which a pass that forwards the incoming exponent unchanged would not.
TEST(ExponentBookkeepingTest, ThreeLayersForwardAndBackward) {
  Context context;
  const int batch = 4;
  const int widths[] = {6, 5, 4, 3};
  const LinearExponents exponents[] = {{5, 6, 8, 4}, {3, 7, 6, 9}, {4, 5, 6, 6}};
  std::vector<Linear> layers;
  std::vector<DyadicInt8> weights;
  SeedSequence init(7);
  for (int k = 0; k < 3; ++k) {
    layers.emplace_back(widths[k], widths[k + 1], exponents[k], 8, TrainRounding::kNearest, &init);
    weights.push_back(
        RandomInt8(widths[k + 1], widths[k], exponents[k].weight_exponent, -90, 90, 10 + k));
    layers[k].SetWeights(weights[k].mantissas, std::vector<std::int32_t>(widths[k + 1], 0));
  }
  // Forward: 5 -> 5 + 6 - 8 = 3 -> 3 + 7 - 6 = 4 -> 4 + 5 - 6 = 3.
  DyadicInt8 x = RandomInt8(batch, widths[0], 5, -30, 30, 20);
  std::vector<std::vector<double>> real_inputs;
  const DyadicInt8* current = &x;
  const int expected_forward[] = {3, 4, 3};
  std::vector<DyadicInt8> outputs;
  for (int k = 0; k < 3; ++k) {
    std::vector<double> real(current->mantissas.size());
    for (std::size_t i = 0; i < real.size(); ++i)
      real[i] = Real(current->mantissas[i], current->exponent);
    real_inputs.push_back(real);
    current = &layers[k].Forward(&context, *current, 0);
    outputs.push_back(*current);
    EXPECT_EQ(current->exponent, expected_forward[k]);
    // Each output's real value is the real product to within half a unit of its exponent,
    // where it is not clipped (most are not: the weights and inputs are small).
    int unclipped = 0;
    for (int b = 0; b < batch; ++b) {
      for (int o = 0; o < widths[k + 1]; ++o) {
        double exact = 0;
        for (int i = 0; i < widths[k]; ++i) {
          exact +=
              real[b * widths[k] + i] * Real(weights[k].at(o, i), exponents[k].weight_exponent);
        }
        if (Clipped(current->at(b, o), 8)) continue;
        ++unclipped;
        EXPECT_NEAR(Real(current->at(b, o), current->exponent), exact,
                    std::ldexp(0.5, -current->exponent) + 1e-12);
      }
    }
    EXPECT_GT(unclipped, batch * widths[k + 1] / 2) << "layer " << k;
  }
  EXPECT_EQ(current->exponent, 5 + (6 - 8) + (7 - 6) + (5 - 6));
  // Backward from a gradient at exponent 10: 10 -> 10 + 5 - 6 = 9 -> 9 + 7 - 9 = 7
  // -> 7 + 6 - 4 = 9.
  DyadicInt8 gradient = RandomInt8(batch, widths[3], 10, -50, 50, 30);
  const int expected_backward[] = {9, 7, 9};
  for (int k = 2; k >= 0; --k) {
    DyadicInt8 input_gradient;
    layers[k].Backward(&context, gradient, 0, &input_gradient);
    EXPECT_EQ(input_gradient.exponent, expected_backward[k]) << "layer " << k;
    for (int b = 0; b < batch; ++b) {
      for (int i = 0; i < widths[k]; ++i) {
        double exact = 0;
        for (int o = 0; o < widths[k + 1]; ++o) {
          if (Clipped(outputs[k].at(b, o), 8)) continue;  // the straight-through mask
          exact += Real(gradient.at(b, o), gradient.exponent) *
                   Real(weights[k].at(o, i), exponents[k].weight_exponent);
        }
        if (Clipped(input_gradient.at(b, i), 8)) continue;
        EXPECT_NEAR(Real(input_gradient.at(b, i), input_gradient.exponent), exact,
                    std::ldexp(0.5, -input_gradient.exponent) + 1e-12)
            << "layer " << k;
      }
    }
    gradient = input_gradient;
  }
}

// The network reports the same exponents as the layers compute.
TEST(NetworkTest, ReportsItsExponents) {
  Context context;
  NetworkSettings settings;
  settings.architecture = MlpArchitecture({4, 8, 3});
  settings.activation_exponent = 5;
  Network network(settings);
  const DyadicInt8 x = RandomInt8(6, 4, 5, -100, 100, 1);
  network.TrainStep(&context, x, {0, 1, 2, 0, 1, 2});
  const std::vector<int> forward = network.ForwardExponents();
  EXPECT_EQ(forward, (std::vector<int>{5, 5}));
  const std::vector<int>& backward = network.BackwardExponents();
  ASSERT_EQ(backward.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const LinearExponents& e = Linears(network)[k]->exponents();
    EXPECT_EQ(backward[k],
              (k == 1 ? forward[1] : backward[1]) + e.weight_exponent - e.backward_shift);
  }
}

// A few steps of a small network give the same bits on every kernel and thread count.
TEST(NetworkTest, SameBitsForEveryKernelAndThreadCount) {
  NetworkSettings settings;
  settings.architecture = MlpArchitecture({64, 96, 40, 10});
  settings.sgd.momentum_shift = 3;
  settings.seed = 42;
  std::vector<int> labels(200);
  for (int i = 0; i < 200; ++i) labels[i] = i % 10;
  ExpectSameBitsForEveryKernelAndThreadCount(settings, RandomInt8(200, 64, 5, -128, 127, 5),
                                             labels);
}

TEST(NetworkTest, BadArgumentsAreErrors) {
  const ImageShape features{1, 1, 784};
  EXPECT_EQ(DescribeArchitecture(ParseArchitecture("784-128-10", features, "--arch")),
            "linear:128,relu,linear:10");
  EXPECT_EQ(DescribeArchitecture(ParseArchitecture("784-128-10", {28, 28, 1}, "--arch")),
            "flatten,linear:128,relu,linear:10");
  for (const char* bad : {"", "784", "784--10", "784-0-10", "784-x-10", "-10", "785-10"}) {
    EXPECT_THROW(ParseArchitecture(bad, features, "--arch"), Error) << bad;
  }
  Context context;
  NetworkSettings settings;
  settings.architecture = MlpArchitecture({4, 3});
  Network network(settings);
  EXPECT_THROW(network.TrainStep(&context, DyadicInt8(2, 4, 5), {0}), Error);
  EXPECT_THROW(network.TrainStep(&context, DyadicInt8(1, 4, 5), {3}), Error);
  EXPECT_THROW(network.Forward(&context, DyadicInt8(1, 5, 5)), Error);
  EXPECT_THROW(network.Forward(&context, DyadicInt8(1, 4, 6)), Error);
  // A bad label anywhere in an epoch stops it before its first step.
  std::vector<std::int32_t> before(Linears(network)[0]->StateSize());
  Linears(network)[0]->GetState(before.data());
  EXPECT_THROW(TrainEpoch(&network, &context, DyadicInt8(3, 4, 5), {0, 1, 3}, 1, 7), Error);
  std::vector<std::int32_t> after(before.size());
  Linears(network)[0]->GetState(after.data());
  EXPECT_EQ(after, before);
}

// The integer softmax against double precision, and -log2 of a probability.
TEST(CrossEntropyTest, SoftmaxAndLogMatchDoublePrecision) {
  const std::int8_t logits[] = {40, -3, 17, 40, -128, 0};
  for (const int exponent : {3, 5, 7}) {
    std::int32_t probabilities[6];
    Softmax(logits, 6, exponent, probabilities);
    double sum = 0;
    for (const std::int8_t z : logits) sum += std::exp(Real(z, exponent));
    std::int32_t total = 0;
    for (int i = 0; i < 6; ++i) {
      EXPECT_NEAR(probabilities[i], std::exp(Real(logits[i], exponent)) / sum * 32768, 1.0)
          << "exponent " << exponent << ", entry " << i;
      total += probabilities[i];
    }
    EXPECT_NEAR(total, 32768, 6);
  }
  for (const std::int32_t p : {1, 2, 100, 12345, 16384, 32767, 32768}) {
    EXPECT_NEAR(MinusLog2(p) / 256.0, -std::log2(p / 32768.0), 1.0 / 128) << p;
  }
  EXPECT_EQ(MinusLog2(0), MinusLog2(1));
}

// The cross-entropy step's gradient is p - y at exponent 7: with all logits equal, 1/n - 1 for
// the label and 1/n elsewhere.
TEST(CrossEntropyTest, GradientIsProbabilityMinusTarget) {
  Context context;
  NetworkSettings settings;
  settings.architecture = MlpArchitecture({2, 4});
  settings.loss = Loss::kCrossEntropy;
  settings.sgd.learning_rate_shift = 20;
  Network network(settings);
  Linears(network)[0]->SetWeights(std::vector<std::int8_t>(8, 0), {0, 0, 0, 0});
  DyadicInt8 x(1, 2, 5);
  x.mantissas = {10, -10};
  const StepStatistics statistics = network.TrainStep(&context, x, {2});
  // -log2(1/4) = 2 bits.
  EXPECT_EQ(statistics.loss_exponent, 8);
  EXPECT_EQ(statistics.loss_mantissa, 2 * 256);
  // The bias gradient is the output gradient: 32 (1/4 at exponent 7) and 32 - 128 = -96.
  EXPECT_EQ(Linears(network)[0]->bias_gradient().exponent, kCrossEntropyGradientExponent);
  EXPECT_EQ(Linears(network)[0]->bias_gradient().mantissas,
            (std::vector<std::int32_t>{32, 32, -96, 32}));
}

// A short Iris run (the command's defaults: 4-8-8-3, MSE, 500 epochs of batches of 8) reaches at
// least 90% on the 30 test flowers for each of three seeds.
// The Iris network of doc/training.md's table, and its inputs, for one seed.
struct IrisRun {
  Split split;
  Network network;
  DyadicInt8 train_inputs;
  DyadicInt8 test_inputs;
};
IrisRun MakeIrisRun(std::uint64_t seed) {
  Split split = StratifiedSplit(LoadIris(ShippedDatasetsDirectory() + "/iris.csv"), 0.2, seed);
  Standardize(&split);
  NetworkSettings settings;
  settings.architecture = MlpArchitecture({4, 8, 8, 3});
  settings.input_exponent = 5;
  settings.activation_exponent = 5;
  settings.sgd.learning_rate_shift = 10;
  settings.sgd.momentum_shift = 3;
  settings.seed = seed;
  DyadicInt8 train_inputs(split.train.size(), 4, 5), test_inputs(split.test.size(), 4, 5);
  train_inputs.mantissas = Quantize(split.train.inputs, 5);
  test_inputs.mantissas = Quantize(split.test.inputs, 5);
  return {split, Network(settings), train_inputs, test_inputs};
}

TEST(TrainingTest, IrisReachesNinetyPercent) {
  for (const std::uint64_t seed : {1, 2, 3}) {
    IrisRun run = MakeIrisRun(seed);
    Context context;
    SeedSequence epoch_seeds(seed);
    for (int epoch = 0; epoch < 500; ++epoch) {
      TrainEpoch(&run.network, &context, run.train_inputs, run.split.train.labels, 8,
                 epoch_seeds.Next64());
    }
    const int correct =
        CountCorrect(&run.network, &context, run.test_inputs, run.split.test.labels, 64);
    EXPECT_GE(correct, 27) << "seed " << seed << ": " << correct << " of 30";
  }
}

// The float twin starts from the network's masters and follows SgdSettings' rule: two steps of
// a 3-2 network against the same rule in double precision.
TEST(FloatTwinTest, StartsFromTheNetworkAndFollowsTheSgdRule) {
  NetworkSettings settings;
  settings.architecture = MlpArchitecture({3, 2});
  settings.input_exponent = 5;
  settings.sgd.learning_rate_shift = 4;
  settings.sgd.momentum_shift = 1;  // momentum 1/2
  settings.seed = 5;
  Network network(settings);
  const Linear& linear = *Linears(network)[0];
  std::vector<std::int32_t> state(linear.StateSize());
  linear.GetState(state.data());
  const int weight_exponent = linear.exponents().weight_exponent + Linear::kMasterBits;
  double w[2][3], b[2] = {0, 0}, v_w[2][3] = {}, v_b[2] = {};
  for (int o = 0; o < 2; ++o) {
    for (int i = 0; i < 3; ++i) w[o][i] = Real(state[o * 3 + i], weight_exponent);
  }
  DyadicInt8 x(1, 3, 5);
  x.mantissas = {40, -17, 3};
  const FloatExamples real = RealValues(x);
  ASSERT_EQ(real.values, (std::vector<float>{40 / 32.0f, -17 / 32.0f, 3 / 32.0f}));
  FloatTwin twin(network);
  const auto logits = [&](int o) {
    double y = b[o];
    for (int i = 0; i < 3; ++i) y += w[o][i] * real.values[i];
    return y;
  };
  for (int o = 0; o < 2; ++o) EXPECT_NEAR(twin.Logits(real.values.data(), 1)[o], logits(o), 1e-6);
  for (int step = 0; step < 2; ++step) {
    const FloatEpochStatistics epoch = twin.TrainEpoch(real, {1}, 1, step);
    double loss = 0;
    double gradient[2];
    for (int o = 0; o < 2; ++o) {
      gradient[o] = logits(o) - (o == 1 ? 1.0 : 0.0);
      loss += gradient[o] * gradient[o];
    }
    EXPECT_NEAR(epoch.loss, loss, 1e-5);
    for (int o = 0; o < 2; ++o) {
      v_b[o] = 0.5 * v_b[o] + gradient[o];
      b[o] -= v_b[o] / 16;
      for (int i = 0; i < 3; ++i) {
        v_w[o][i] = 0.5 * v_w[o][i] + gradient[o] * real.values[i];
        w[o][i] -= v_w[o][i] / 16;
      }
    }
    for (int o = 0; o < 2; ++o) {
      EXPECT_NEAR(twin.Logits(real.values.data(), 1)[o], logits(o), 1e-5) << step;
    }
  }
}

// Bad examples are errors naming the argument, before the twin moves.
TEST(FloatTwinTest, BadExamplesAreErrors) {
  NetworkSettings settings;
  settings.architecture = MlpArchitecture({3, 2});
  Network network(settings);
  FloatTwin twin(network);
  FloatExamples x;
  x.rows = 2;
  x.cols = 3;
  x.values = {0.5f, -1, 2, 1, 0, -0.25f};
  const std::vector<float> before = twin.Logits(x.values.data(), 2);
  const auto expect_error = [&](const FloatExamples& inputs, const std::vector<int>& labels,
                                int batch, const std::string& argument) {
    try {
      twin.TrainEpoch(inputs, labels, batch, 1);
      ADD_FAILURE() << argument << " was accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(argument), std::string::npos) << error.what();
    }
    EXPECT_EQ(twin.Logits(x.values.data(), 2), before) << argument;
  };
  FloatExamples four_features = x;
  four_features.cols = 4;
  four_features.values.resize(8);
  expect_error(four_features, {0, 1}, 1, "float twin inputs");
  expect_error(x, {0}, 1, "labels");
  expect_error(x, {0, 2}, 1, "labels");
  expect_error(x, {-1, 0}, 1, "labels");
  expect_error(x, {0, 1}, 0, "batch");
}

// On Iris the twin learns as the integer network does (doc/training.md compares them on every
// network of the table).
TEST(FloatTwinTest, IrisReachesNinetyPercent) {
  IrisRun run = MakeIrisRun(1);
  FloatTwin twin(run.network);
  const FloatExamples train_inputs = RealValues(run.train_inputs);
  SeedSequence epoch_seeds(1);
  for (int epoch = 0; epoch < 500; ++epoch) {
    twin.TrainEpoch(train_inputs, run.split.train.labels, 8, epoch_seeds.Next64());
  }
  EXPECT_GE(twin.CountCorrect(RealValues(run.test_inputs), run.split.test.labels), 27);
}

std::vector<unsigned char> ReadBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(file)),
                                    std::istreambuf_iterator<char>());
}

void WriteBytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// Rewrites the trailing CRC-32 so that a deliberately changed body passes the checksum.
void Reseal(std::vector<unsigned char>* bytes) {
  const std::size_t body = bytes->size() - 4;
  const auto crc = static_cast<std::uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), bytes->data(), static_cast<uInt>(body)));
  for (int i = 0; i < 4; ++i) (*bytes)[body + i] = static_cast<unsigned char>(crc >> (8 * i));
}

class ModelFileTest : public testing::Test {
 protected:
  void SetUp() override {
    settings_.architecture = MlpArchitecture({6, 5, 3});
    settings_.loss = Loss::kCrossEntropy;
    settings_.sgd.momentum_shift = 3;
    settings_.seed = 11;
    Network network(settings_);
    for (int step = 0; step < 3; ++step) network.TrainStep(&context_, input_, {0, 1, 2, 1});
    path_ = testing::TempDir() + "/lowbit_model_" +
            testing::UnitTest::GetInstance()->current_test_info()->name();
    SaveModel(network, path_);
    expected_predictions_ = network.Predict(&context_, input_);
    expected_states_ = LearningStates(network);
  }

  // LoadModel on `bytes` throws DataError naming the file and containing `fault`.
  void ExpectFault(const std::vector<unsigned char>& bytes, const std::string& fault) {
    WriteBytes(path_, bytes);
    try {
      LoadModel(path_);
      ADD_FAILURE() << "no error for " << fault;
    } catch (const DataError& error) {
      EXPECT_NE(std::string(error.what()).find(path_), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find(fault), std::string::npos) << error.what();
    }
  }

  void ExpectStates(const Network& loaded) { EXPECT_EQ(LearningStates(loaded), expected_states_); }

  Context context_;
  NetworkSettings settings_;
  DyadicInt8 input_ = RandomInt8(4, 6, 5, -100, 100, 3);
  std::string path_;
  std::vector<int> expected_predictions_;
  std::vector<std::vector<std::int32_t>> expected_states_;
};

TEST_F(ModelFileTest, RoundTripKeepsEveryBit) {
  Network loaded = LoadModel(path_);
  EXPECT_EQ(DescribeArchitecture(loaded.settings().architecture),
            DescribeArchitecture(settings_.architecture));
  EXPECT_EQ(loaded.settings().architecture.input, settings_.architecture.input);
  EXPECT_EQ(loaded.settings().loss, Loss::kCrossEntropy);
  EXPECT_EQ(loaded.settings().seed, 11u);
  ExpectStates(loaded);
  EXPECT_EQ(loaded.Predict(&context_, input_), expected_predictions_);
}

// Version 1 files (MLPs, saved before networks had an architecture) load with the same bits:
// the same bytes with the widths in place of the architecture.
TEST_F(ModelFileTest, VersionOneFilesLoad) {
  const std::vector<unsigned char> good = ReadBytes(path_);
  // Version 2's architecture: input shape (3 int32s), layer count and 3 layers of 5 int32s.
  const std::size_t architecture_start = 12, architecture_bytes = 4 * (3 + 1 + 3 * 5);
  std::vector<unsigned char> version1(good.begin(), good.begin() + architecture_start);
  version1[8] = 1;
  for (const std::int32_t v : {3, 6, 5, 3}) {
    for (int i = 0; i < 4; ++i) version1.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  version1.insert(version1.end(), good.begin() + architecture_start + architecture_bytes,
                  good.end());
  Reseal(&version1);
  WriteBytes(path_, version1);
  Network loaded = LoadModel(path_);
  EXPECT_EQ(DescribeArchitecture(loaded.settings().architecture), "linear:5,relu,linear:3");
  ExpectStates(loaded);
  EXPECT_EQ(loaded.Predict(&context_, input_), expected_predictions_);
}

TEST_F(ModelFileTest, EachFaultIsAnErrorNamingTheFile) {
  const std::vector<unsigned char> good = ReadBytes(path_);
  ASSERT_GT(good.size(), 64u);
  ExpectFault({}, "truncated");
  ExpectFault(std::vector<unsigned char>(good.begin(), good.begin() + 10), "truncated");
  ExpectFault(std::vector<unsigned char>(good.begin(), good.end() - 7), "checksum mismatch");
  std::vector<unsigned char> flipped = good;
  flipped[40] ^= 1;
  ExpectFault(flipped, "checksum mismatch");
  std::vector<unsigned char> magic = good;
  magic[0] = 'X';
  ExpectFault(magic, "not a lowbit-train model file");
  std::vector<unsigned char> version = good;
  version[8] = 3;
  Reseal(&version);
  ExpectFault(version, "format version 3");
  // The first layer's weight exponent (after magic, version, the input shape, the layer count,
  // 3 layers of 5 values, 9 settings and the 8-byte seed, then the layer's input exponent).
  std::vector<unsigned char> exponent = good;
  exponent[8 + 4 + 4 * (3 + 1 + 3 * 5 + 9) + 8 + 4] += 1;
  Reseal(&exponent);
  ExpectFault(exponent, "layer exponents differ");
  std::vector<unsigned char> longer = good;
  longer.insert(longer.end() - 4, {0, 0, 0, 0});
  Reseal(&longer);
  ExpectFault(longer, "left over");
  std::vector<unsigned char> layers = good;
  layers[8 + 4 + 4 * 3] = 0;  // no layers
  Reseal(&layers);
  ExpectFault(layers, "layer count 0");
  std::vector<unsigned char> kind = good;
  kind[8 + 4 + 4 * 4] = 9;  // the first layer's kind
  Reseal(&kind);
  ExpectFault(kind, "layer kind 9 unknown");
  std::vector<unsigned char> misfit = good;
  misfit[8 + 4 + 4 * (4 + 2 * 5)] = static_cast<unsigned char>(LayerKind::kRelu);  // the last
  Reseal(&misfit);
  ExpectFault(misfit, "architecture rejected");
  try {
    LoadModel(path_ + ".missing");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const DataError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot open"), std::string::npos);
  }
}

}  // namespace
}  // namespace train
}  // namespace lowbit
