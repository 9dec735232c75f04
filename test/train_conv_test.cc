// The training layer's image layers (train/image_layers.h): Conv2d, MaxPool2d and AvgPool2d
// forward and backward against exact 64-bit references, exponent bookkeeping through them,
// the --arch notation for them, and convolutional networks: the same bits for every thread
// count and kernel, model files, and the float twin.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lowbit/lowbit.h"
#include "test/train_test_util.h"
#include "train/architecture.h"
#include "train/data.h"
#include "train/float_twin.h"
#include "train/image_layers.h"
#include "train/model_file.h"
#include "train/network.h"

namespace lowbit {
namespace train {
namespace {

// Throws unless `call` throws lowbit::Error whose message contains `text`.
template <typename Call>
void ExpectError(Call call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no error containing \"" << text << "\"";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
  }
}

struct ConvCase {
  ImageShape input;
  int channels;
  Window window;
};

// Conv2d with nearest rounding against a direct 64-bit convolution: the forward output, and
// backward's weight, bias and input gradients (the input's summed over every window over a
// pixel, then rounded once), with exponents that differ between passes.
TEST(Conv2dTest, ForwardAndBackwardMatchAnExactReference) {
  const ConvCase cases[] = {
      {{5, 6, 3}, 4, {3, 1, 1}},  // "same" padding
      {{7, 5, 2}, 3, {3, 2, 0}},  // stride 2, no padding
      {{4, 4, 1}, 2, {2, 2, 1}},  // even kernel, padding
      {{6, 6, 5}, 1, {5, 1, 2}},  // wide kernel, one filter
      {{3, 4, 2}, 5, {1, 1, 0}},  // 1 x 1
  };
  LinearExponents exponents;
  exponents.input_exponent = 4;
  exponents.weight_exponent = 6;
  exponents.forward_shift = 7;
  exponents.backward_shift = 5;
  for (const ConvCase& c : cases) {
    for (const int threads : {1, 2}) {
      Context context;
      context.set_max_num_threads(threads);
      SeedSequence init(1);
      Conv2d layer(c.input, c.channels, c.window, exponents, 8, TrainRounding::kNearest, &init);
      const ImageShape out = layer.output_shape();
      const int k = c.window.kernel;
      const int inputs = k * k * c.input.channels;
      const DyadicInt8 w = RandomInt8(c.channels, inputs, 6, -100, 100, 2);
      std::vector<std::int32_t> bias(c.channels);
      for (int o = 0; o < c.channels; ++o) bias[o] = 300 * o - 500;
      layer.filters().SetWeights(w.mantissas, bias);
      const int batch = 3;
      const DyadicInt8 x = RandomInt8(batch, c.input.size(), 4, -128, 127, 3);
      const DyadicInt8 y = layer.Forward(&context, x, 0);
      ASSERT_EQ(y.rows, batch);
      ASSERT_EQ(y.cols, out.size());
      ASSERT_EQ(y.exponent, 3);
      // The input value under kernel offset (ky, kx) of output pixel (oy, ox), 0 in padding.
      const auto pixel = [&](const DyadicInt8& t, int b, int oy, int ox, int ky, int kx,
                             int channel) -> std::int64_t {
        const int iy = oy * c.window.stride - c.window.padding + ky;
        const int ix = ox * c.window.stride - c.window.padding + kx;
        if (iy < 0 || iy >= c.input.height || ix < 0 || ix >= c.input.width) return 0;
        return t.at(b, (iy * c.input.width + ix) * c.input.channels + channel);
      };
      const auto weight = [&](int o, int ky, int kx, int channel) {
        return std::int64_t{w.at(o, (ky * k + kx) * c.input.channels + channel)};
      };
      for (int b = 0; b < batch; ++b) {
        for (int oy = 0; oy < out.height; ++oy) {
          for (int ox = 0; ox < out.width; ++ox) {
            for (int o = 0; o < c.channels; ++o) {
              std::int64_t acc = bias[o];
              for (int ky = 0; ky < k; ++ky) {
                for (int kx = 0; kx < k; ++kx) {
                  for (int ch = 0; ch < c.input.channels; ++ch) {
                    acc += pixel(x, b, oy, ox, ky, kx, ch) * weight(o, ky, kx, ch);
                  }
                }
              }
              ASSERT_EQ(y.at(b, (oy * out.width + ox) * c.channels + o),
                        Clamp8(RoundNearest(acc, 7)))
                  << b << " " << oy << " " << ox << " " << o;
            }
          }
        }
      }
      DyadicInt8 dy = RandomInt8(batch, out.size(), 9, -60, 60, 4);
      DyadicInt8 dx;
      layer.Backward(&context, dy, 0, &dx);
      ASSERT_EQ(dx.exponent, 9 + 6 - 5);
      ASSERT_EQ(dx.exponent, layer.InputGradientExponent(9));
      ASSERT_EQ(layer.filters().weight_gradient().exponent, 9 + 4);
      // The straight-through estimator: no gradient where the output clipped.
      for (std::size_t i = 0; i < dy.mantissas.size(); ++i) {
        if (Clipped(y.mantissas[i], 8)) dy.mantissas[i] = 0;
      }
      const auto masked = [&](int b, int oy, int ox, int o) {
        return std::int64_t{dy.at(b, (oy * out.width + ox) * c.channels + o)};
      };
      std::vector<std::int64_t> input_sums(static_cast<std::size_t>(batch) * c.input.size(), 0);
      for (int o = 0; o < c.channels; ++o) {
        std::int64_t bias_sum = 0;
        for (int b = 0; b < batch; ++b) {
          for (int oy = 0; oy < out.height; ++oy) {
            for (int ox = 0; ox < out.width; ++ox) bias_sum += masked(b, oy, ox, o);
          }
        }
        EXPECT_EQ(layer.filters().bias_gradient().mantissas[o], bias_sum);
        for (int ky = 0; ky < k; ++ky) {
          for (int kx = 0; kx < k; ++kx) {
            for (int ch = 0; ch < c.input.channels; ++ch) {
              std::int64_t sum = 0;
              for (int b = 0; b < batch; ++b) {
                for (int oy = 0; oy < out.height; ++oy) {
                  for (int ox = 0; ox < out.width; ++ox) {
                    sum += masked(b, oy, ox, o) * pixel(x, b, oy, ox, ky, kx, ch);
                    const int iy = oy * c.window.stride - c.window.padding + ky;
                    const int ix = ox * c.window.stride - c.window.padding + kx;
                    if (iy >= 0 && iy < c.input.height && ix >= 0 && ix < c.input.width) {
                      input_sums[static_cast<std::size_t>(b) * c.input.size() +
                                 (iy * c.input.width + ix) * c.input.channels + ch] +=
                          masked(b, oy, ox, o) * weight(o, ky, kx, ch);
                    }
                  }
                }
              }
              EXPECT_EQ(
                  layer.filters().weight_gradient().at(o, (ky * k + kx) * c.input.channels + ch),
                  sum);
            }
          }
        }
      }
      for (std::size_t i = 0; i < input_sums.size(); ++i) {
        ASSERT_EQ(dx.mantissas[i], Clamp8(RoundNearest(input_sums[i], 5))) << i;
      }
    }
  }
}

// A convolution's weight gradient sums over every output pixel of every example: past 2^16 of
// them the product is split into GEMMs of 2^16 rows, added in 64 bits.
TEST(Conv2dTest, DeepWeightGradientsAddUpExactly) {
  Context context;
  SeedSequence init(1);
  const ImageShape input{64, 64, 1};
  Conv2d layer(input, 2, {1, 1, 0}, LinearExponents{}, 8, TrainRounding::kNearest, &init);
  const int batch = 17;  // 69632 output pixels
  const DyadicInt8 x = RandomInt8(batch, input.size(), 0, -128, 127, 5);
  layer.filters().SetWeights({0, 0}, {0, 0});
  layer.Forward(&context, x, 0);
  const DyadicInt8 dy = RandomInt8(batch, input.size() * 2, 0, -100, 100, 6);
  layer.Backward(&context, dy, 0, nullptr);
  for (int o = 0; o < 2; ++o) {
    std::int64_t sum = 0;
    for (int b = 0; b < batch; ++b) {
      for (int p = 0; p < input.size(); ++p) sum += std::int64_t{dy.at(b, 2 * p + o)} * x.at(b, p);
    }
    EXPECT_EQ(layer.filters().weight_gradient().mantissas[o], sum) << o;
  }
}

TEST(Conv2dTest, BadGeometryAndShapesAreErrors) {
  SeedSequence init(1);
  const ImageShape input{5, 5, 2};
  const auto make = [&](int channels, Window window) {
    return [=, &init] {
      Conv2d(input, channels, window, LinearExponents{}, 8, TrainRounding::kNearest, &init);
    };
  };
  ExpectError(make(4, {0, 1, 0}), "conv2d");
  ExpectError(make(4, {3, 0, 0}), "conv2d");
  ExpectError(make(4, {3, 1, 3}), "padding < kernel");
  ExpectError(make(4, {7, 1, 0}), "fits the padded input");
  ExpectError(make(0, {3, 1, 1}), "channels");
  ExpectError(make(1 << 14, {3, 1, 1}), "2^17");
  Context context;
  Conv2d layer(input, 3, {3, 1, 1}, LinearExponents{}, 8, TrainRounding::kNearest, &init);
  ExpectError([&] { layer.Forward(&context, DyadicInt8(2, 49, 0), 0); }, "conv2d input");
  ExpectError([&] { layer.Forward(&context, DyadicInt8(2, 50, 3), 0); }, "conv2d input");
  layer.Forward(&context, DyadicInt8(2, 50, 0), 0);
  DyadicInt8 dx;
  ExpectError([&] { layer.Backward(&context, DyadicInt8(1, 75, 0), 0, &dx); },
              "conv2d output gradient");
}

// Max pooling: the largest of each window, the gradient to the first maximum of its window
// (row-major), nothing to the rows and columns past the last whole window.
TEST(MaxPool2dTest, ForwardAndBackward) {
  const ImageShape input{3, 5, 2};  // 1 x 2 windows of 2 x 2; row 2 and column 4 dropped
  MaxPool2d pool(input, 2);
  ASSERT_EQ(pool.output_shape(), (ImageShape{1, 2, 2}));
  DyadicInt8 x(1, input.size(), 4);
  // Channel 0: 1..15 in row-major order, so each window's maximum is its bottom-right pixel.
  // Channel 1: all 7, a tie, so the top-left pixel takes the gradient.
  for (int p = 0; p < 15; ++p) {
    x.mantissas[2 * p] = static_cast<std::int8_t>(p + 1);
    x.mantissas[2 * p + 1] = 7;
  }
  const DyadicInt8 y = pool.Forward(nullptr, x, 0);
  EXPECT_EQ(y.exponent, 4);
  EXPECT_EQ(y.mantissas, (std::vector<std::int8_t>{7, 7, 9, 7}));
  DyadicInt8 dy(1, 4, 9);
  dy.mantissas = {10, 20, 30, 40};
  DyadicInt8 dx;
  pool.Backward(nullptr, dy, 0, &dx);
  EXPECT_EQ(dx.exponent, 9);
  std::vector<std::int8_t> expected(input.size(), 0);
  expected[2 * (1 * 5 + 1)] = 10;      // channel 0, window 0: pixel (1, 1)
  expected[2 * (0 * 5 + 0) + 1] = 20;  // channel 1, window 0: pixel (0, 0)
  expected[2 * (1 * 5 + 3)] = 30;      // channel 0, window 1: pixel (1, 3)
  expected[2 * (0 * 5 + 2) + 1] = 40;  // channel 1, window 1: pixel (0, 2)
  EXPECT_EQ(dx.mantissas, expected);
  ExpectError([&] { MaxPool2d(input, 4); }, "maxpool");
  ExpectError([&] { pool.Forward(nullptr, DyadicInt8(1, 29, 4), 0); }, "maxpool input");
  ExpectError([&] { pool.Backward(nullptr, DyadicInt8(1, 5, 9), 0, &dx); },
              "maxpool output gradient");
}

// Average pooling: a window's sum rounded by 2 log2(size) bits (to nearest here); backward
// hands each pixel the output's gradient mantissa at an exponent 2 log2(size) finer.
TEST(AvgPool2dTest, ForwardAndBackward) {
  const ImageShape input{4, 4, 3};
  AvgPool2d pool(input, 2, TrainRounding::kNearest);
  const DyadicInt8 x = RandomInt8(2, input.size(), 5, -128, 127, 8);
  const DyadicInt8 y = pool.Forward(nullptr, x, 0);
  ASSERT_EQ(y.cols, 12);
  for (int b = 0; b < 2; ++b) {
    for (int o = 0; o < 4; ++o) {
      for (int c = 0; c < 3; ++c) {
        const int oy = o / 2, ox = o % 2;
        std::int64_t sum = 0;
        for (int ky = 0; ky < 2; ++ky) {
          for (int kx = 0; kx < 2; ++kx) {
            sum += x.at(b, ((2 * oy + ky) * 4 + 2 * ox + kx) * 3 + c);
          }
        }
        EXPECT_EQ(y.at(b, o * 3 + c), RoundNearest(sum, 2));
      }
    }
  }
  const DyadicInt8 dy = RandomInt8(2, 12, 7, -128, 127, 9);
  DyadicInt8 dx;
  pool.Backward(nullptr, dy, 0, &dx);
  EXPECT_EQ(dx.exponent, 9);
  EXPECT_EQ(pool.InputGradientExponent(7), 9);
  for (int b = 0; b < 2; ++b) {
    for (int p = 0; p < 16; ++p) {
      for (int c = 0; c < 3; ++c) {
        const int o = (p / 4 / 2) * 2 + (p % 4) / 2;
        EXPECT_EQ(dx.at(b, p * 3 + c), dy.at(b, o * 3 + c));
      }
    }
  }
  // Stochastic rounding: the mean of the outputs over many seeds is the exact mean.
  AvgPool2d stochastic({2, 2, 1}, 2, TrainRounding::kStochastic);
  DyadicInt8 window(1, 4, 0);
  window.mantissas = {1, 2, 2, 0};  // mean 1.25
  double total = 0;
  for (std::uint32_t seed = 0; seed < 4096; ++seed) {
    total += stochastic.Forward(nullptr, window, seed).mantissas[0];
  }
  EXPECT_NEAR(total / 4096, 1.25, 0.03);
  ExpectError([&] { AvgPool2d(input, 3, TrainRounding::kNearest); }, "power of two");
}

TEST(ArchitectureTest, ConvolutionalNotation) {
  const ImageShape image{28, 28, 1};
  const Architecture architecture =
      ParseArchitecture("conv3x3:16,pool2,conv3x3:32,maxpool2,linear:10", image, "--arch");
  EXPECT_EQ(DescribeArchitecture(architecture),
            "conv3x3:16/s1/p1,relu,maxpool2,conv3x3:32/s1/p1,relu,maxpool2,flatten,linear:10");
  const std::vector<ImageShape> shapes = LayerShapes(architecture, "--arch");
  EXPECT_EQ(shapes[2], (ImageShape{14, 14, 16}));
  EXPECT_EQ(shapes[5], (ImageShape{7, 7, 32}));
  EXPECT_EQ(shapes[6], (ImageShape{1, 1, 1568}));
  EXPECT_EQ(architecture.classes(), 10);
  EXPECT_EQ(DescribeArchitecture(ParseArchitecture(
                "conv5x5:8/s2/p0,avgpool2,flatten,linear:64,linear:10", image, "--arch")),
            "conv5x5:8/s2/p0,relu,avgpool2,flatten,linear:64,relu,linear:10");
  for (const char* bad :
       {"conv3x2:4,linear:10", "conv3x3:0,linear:10", "conv3x3:4/p3,linear:10",
        "conv3x3:4/s0,linear:10", "avgpool3,linear:10", "pool0,linear:10",
        "linear:10,conv3x3:4,linear:10", "linear:10,flatten,linear:10", "conv3x3:4",
        "conv29x29:4/p0,linear:10", "pool29,linear:10", "conv3x3:4,,linear:10", "relu,linear:10",
        "lin:10", "conv3x3:4 ,linear:10"}) {
    EXPECT_THROW(ParseArchitecture(bad, image, "--arch"), Error) << bad;
  }
  ExpectError(
      [] {
        ParseArchitecture("conv3x3:4,linear:3", {1, 1, 4}, "--arch");
      },
      "image layers need image data");
}

NetworkSettings ConvSettings() {
  NetworkSettings settings;
  settings.architecture =
      ParseArchitecture("conv3x3:4,avgpool2,conv3x3:6/s1/p1,maxpool2,linear:3", {8, 8, 1}, "arch");
  settings.input_exponent = 6;
  settings.activation_exponent = 5;
  settings.loss = Loss::kCrossEntropy;
  settings.sgd.learning_rate_shift = 12;
  settings.sgd.momentum_shift = 3;
  settings.seed = 9;
  return settings;
}

// Through conv and pool layers, the exponents follow each layer's rule: every learning layer's
// output at the activation exponent; going back, the cross-entropy gradient's exponent kept by
// each learning layer's backward shift and made 2 finer by the average pool, so the first
// convolution's input gradient is 2 finer than the last layers'. A pass that forwarded the
// incoming exponent unchanged through the pool would report 7 there.
TEST(ConvNetworkTest, ExponentBookkeeping) {
  Context context;
  Network network(ConvSettings());
  const DyadicInt8 x = RandomInt8(5, 64, 6, -128, 127, 2);
  network.TrainStep(&context, x, {0, 1, 2, 0, 1});
  EXPECT_EQ(network.ForwardExponents(), (std::vector<int>{5, 5, 5}));
  const int g = kCrossEntropyGradientExponent;
  EXPECT_EQ(network.BackwardExponents(), (std::vector<int>{g + 2, g, g}));
  // Each layer's gradient tensor has the exponent the network reports.
  DyadicInt8 gradient = RandomInt8(5, 3, g, -10, 10, 3);
  DyadicInt8 input_gradient;
  for (std::size_t k = network.layers().size(); k-- > 1;) {
    Layer& layer = *network.layers()[k];
    layer.Backward(&context, gradient, 0, &input_gradient);
    EXPECT_EQ(input_gradient.exponent, layer.InputGradientExponent(gradient.exponent)) << k;
    EXPECT_EQ(input_gradient.cols, network.shapes()[k - 1].size()) << k;
    std::swap(gradient, input_gradient);
  }
}

// A few steps of a small convolutional network give the same bits on every kernel and thread
// count.
TEST(ConvNetworkTest, SameBitsForEveryKernelAndThreadCount) {
  const NetworkSettings settings = ConvSettings();
  std::vector<int> labels(40);
  for (int i = 0; i < 40; ++i) labels[i] = i % 3;
  ExpectSameBitsForEveryKernelAndThreadCount(settings, RandomInt8(40, 64, 6, -128, 127, 5), labels);
}

TEST(ConvNetworkTest, ModelFileRoundTrip) {
  Context context;
  Network network(ConvSettings());
  const DyadicInt8 x = RandomInt8(6, 64, 6, -128, 127, 2);
  network.TrainStep(&context, x, {0, 1, 2, 0, 1, 2});
  const std::string path = testing::TempDir() + "/lowbit_conv_model";
  SaveModel(network, path);
  Network loaded = LoadModel(path);
  EXPECT_EQ(DescribeArchitecture(loaded.settings().architecture),
            DescribeArchitecture(network.settings().architecture));
  EXPECT_EQ(loaded.settings().architecture.input, (ImageShape{8, 8, 1}));
  ASSERT_EQ(loaded.LearningLayers().size(), 3u);
  EXPECT_EQ(LearningStates(loaded), LearningStates(network));
  EXPECT_EQ(loaded.Predict(&context, x), network.Predict(&context, x));
}

// The float twin's convolutions, pools and flatten against a direct double-precision forward
// pass from the integer network's masters.
TEST(ConvNetworkTest, FloatTwinForwardMatchesADirectConvolution) {
  NetworkSettings settings;
  settings.architecture = ParseArchitecture("conv3x3:3/s2/p1,maxpool2,linear:2", {6, 6, 2}, "arch");
  Network network(settings);
  FloatTwin twin(network);
  const DyadicInt8 x = RandomInt8(2, 72, 5, -128, 127, 4);
  const FloatExamples real = RealValues(x);
  const std::vector<float> logits = twin.Logits(real.values.data(), 2);
  const std::vector<Layer*> learning = network.LearningLayers();
  const auto masters = [](const Layer& layer, std::vector<double>* weights,
                          std::vector<double>* bias) {
    const Linear& linear = LayerWeights(layer);
    std::vector<std::int32_t> state(linear.StateSize());
    linear.GetState(state.data());
    const int weight_exponent = linear.exponents().weight_exponent + Linear::kMasterBits;
    const std::size_t count = static_cast<std::size_t>(linear.inputs()) * linear.outputs();
    for (std::size_t i = 0; i < count; ++i) weights->push_back(Real(state[i], weight_exponent));
    for (int o = 0; o < linear.outputs(); ++o) {
      bias->push_back(Real(state[count + o], weight_exponent + linear.exponents().input_exponent));
    }
  };
  std::vector<double> conv_w, conv_b, linear_w, linear_b;
  masters(*learning[0], &conv_w, &conv_b);
  masters(*learning[1], &linear_w, &linear_b);
  for (int b = 0; b < 2; ++b) {
    // conv (3 x 3, stride 2, padding 1): 6 x 6 x 2 -> 3 x 3 x 3, ReLU, then the 2 x 2 max pool
    // keeps the top-left 2 x 2 pixels' maxima: 1 x 1 x 3.
    double conv[3][3][3];
    for (int oy = 0; oy < 3; ++oy) {
      for (int ox = 0; ox < 3; ++ox) {
        for (int o = 0; o < 3; ++o) {
          double sum = conv_b[o];
          for (int ky = 0; ky < 3; ++ky) {
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = 2 * oy - 1 + ky, ix = 2 * ox - 1 + kx;
              if (iy < 0 || iy >= 6 || ix < 0 || ix >= 6) continue;
              for (int c = 0; c < 2; ++c) {
                sum += conv_w[o * 18 + (ky * 3 + kx) * 2 + c] *
                       real.values[b * 72 + (iy * 6 + ix) * 2 + c];
              }
            }
          }
          conv[oy][ox][o] = std::max(sum, 0.0);
        }
      }
    }
    for (int o = 0; o < 2; ++o) {
      double sum = linear_b[o];
      for (int c = 0; c < 3; ++c) {
        const double pooled = std::max(std::max(conv[0][0][c], conv[0][1][c]),
                                       std::max(conv[1][0][c], conv[1][1][c]));
        sum += linear_w[o * 3 + c] * pooled;
      }
      EXPECT_NEAR(logits[b * 2 + o], sum, 1e-4) << b << " " << o;
    }
  }
}

// A short run of a convolutional network on the 8 x 8 digits: the integer network and its
// float twin both learn (doc/training.md has the Fashion-MNIST figures).
TEST(ConvNetworkTest, DigitsReachNinetyPercent) {
  Split split = StratifiedSplit(LoadDigits(ShippedDatasetsDirectory() + "/digits.csv.gz"), 0.2, 1);
  Standardize(&split);
  NetworkSettings settings;
  settings.architecture = ParseArchitecture("conv3x3:8,pool2,linear:10", {8, 8, 1}, "arch");
  settings.loss = Loss::kCrossEntropy;
  settings.sgd.learning_rate_shift = 12;
  settings.sgd.momentum_shift = 3;
  Network network(settings);
  FloatTwin twin(network);
  DyadicInt8 train_inputs(split.train.size(), 64, 5), test_inputs(split.test.size(), 64, 5);
  train_inputs.mantissas = Quantize(split.train.inputs, 5);
  test_inputs.mantissas = Quantize(split.test.inputs, 5);
  const FloatExamples real_train = RealValues(train_inputs);
  Context context;
  SeedSequence epoch_seeds(1);
  for (int epoch = 0; epoch < 5; ++epoch) {
    const std::uint64_t seed = epoch_seeds.Next64();
    TrainEpoch(&network, &context, train_inputs, split.train.labels, 16, seed);
    twin.TrainEpoch(real_train, split.train.labels, 16, seed);
  }
  const int tests = split.test.size();
  EXPECT_GE(CountCorrect(&network, &context, test_inputs, split.test.labels, 64), 0.9 * tests);
  EXPECT_GE(twin.CountCorrect(RealValues(test_inputs), split.test.labels), 0.9 * tests);
}

}  // namespace
}  // namespace train
}  // namespace lowbit
