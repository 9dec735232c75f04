// What the training layer's test suites share: random dyadic tensors, the 64-bit rounding they
// check against, a network's Linear layers and states, and the same-bits check across kernels.
#ifndef LOWBIT_TEST_TRAIN_TEST_UTIL_H_
#define LOWBIT_TEST_TRAIN_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "lowbit/lowbit.h"
#include "train/dyadic.h"
#include "train/network.h"

namespace lowbit {
namespace train {

inline double Real(std::int64_t mantissa, int exponent) {
  return std::ldexp(double(mantissa), -exponent);
}

inline DyadicInt8 RandomInt8(int rows, int cols, int exponent, int low, int high,
                             std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> distribution(low, high);
  DyadicInt8 x(rows, cols, exponent);
  for (std::int8_t& v : x.mantissas) v = static_cast<std::int8_t>(distribution(generator));
  return x;
}

// Nearest rounding of v / 2^shift, ties away from zero (RoundingDivideByPOT), in 64 bits.
inline std::int64_t RoundNearest(std::int64_t v, int shift) {
  if (shift <= 0) return v * (std::int64_t{1} << -shift);
  const std::int64_t half = std::int64_t{1} << (shift - 1);
  return v >= 0 ? (v + half) >> shift : -((-v + half) >> shift);
}

inline std::int64_t Clamp8(std::int64_t v) {
  return std::min<std::int64_t>(127, std::max<std::int64_t>(-128, v));
}

// The Linear layers of a network, first to last.
inline std::vector<Linear*> Linears(const Network& network) {
  std::vector<Linear*> layers;
  for (Layer* layer : network.LearningLayers()) layers.push_back(dynamic_cast<Linear*>(layer));
  return layers;
}

// What training moved in each learning layer of a network (Layer::GetState), first to last.
inline std::vector<std::vector<std::int32_t>> LearningStates(const Network& network) {
  std::vector<std::vector<std::int32_t>> states;
  for (const Layer* layer : network.LearningLayers()) {
    states.emplace_back(layer->StateSize());
    layer->GetState(states.back().data());
  }
  return states;
}

// Three steps of a network built from `settings` on x leave the same states on every kernel
// and thread count.
inline void ExpectSameBitsForEveryKernelAndThreadCount(const NetworkSettings& settings,
                                                       const DyadicInt8& x,
                                                       const std::vector<int>& labels) {
  std::vector<std::vector<std::int32_t>> first_states;
  for (const Kernel kernel : AvailableKernels()) {
    for (const int threads : {1, 2}) {
      Context context;
      context.set_kernel(kernel);
      context.set_max_num_threads(threads);
      Network network(settings);
      for (int step = 0; step < 3; ++step) network.TrainStep(&context, x, labels);
      const std::vector<std::vector<std::int32_t>> states = LearningStates(network);
      if (first_states.empty()) first_states = states;
      EXPECT_EQ(states, first_states) << KernelName(kernel) << " threads " << threads;
    }
  }
}

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TEST_TRAIN_TEST_UTIL_H_
