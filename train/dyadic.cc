// Stochastic rounding, requantization and seeds of the training layer (train/dyadic.h).
#include "train/dyadic.h"

#include <algorithm>
#include <string>

namespace lowbit {
namespace train {

std::uint64_t SeedSequence::Next64() {
  // splitmix64: a fixed, documented generator, the same on every platform and library.
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint32_t SeedSequence::Next() { return static_cast<std::uint32_t>(Next64() >> 32); }

void CheckShift(int shift) {
  if (shift < -31 || shift > 31) {
    throw Error("shift", "must be in [-31, 31], got " + std::to_string(shift));
  }
}

namespace {

// Requantize's loop for stochastic right shifts, the common case (a convolution's input
// gradient): the stage's arithmetic written out with the shift and seed as loop invariants, so
// that it vectorizes.
LOWBIT_TRAIN_CLONES void StochasticShiftRows(const std::int32_t* __restrict__ in, int rows,
                                             int cols, int shift, std::uint32_t seed, int bits,
                                             std::int8_t* __restrict__ out) {
  const std::int64_t low = QMin(bits), high = QMax(bits);
  for (int row = 0; row < rows; ++row) {
    for (int col = 0; col < cols; ++col) {
      const std::uint32_t random = stage_detail::StochasticRoundingBits(seed, row, col);
      const std::int64_t v = (std::int64_t{*in++} + (random >> (32 - shift))) >> shift;
      *out++ = static_cast<std::int8_t>(std::clamp(v, low, high));
    }
  }
}

}  // namespace

DyadicInt8 Requantize(const DyadicInt32& x, int target_exponent, int bits, TrainRounding rounding,
                      std::uint32_t seed) {
  DyadicInt8 y(x.rows, x.cols, target_exponent);
  const int shift = x.exponent - target_exponent;
  CheckShift(shift);
  if (rounding == TrainRounding::kStochastic && shift > 0) {
    StochasticShiftRows(x.mantissas.data(), x.rows, x.cols, shift, seed, bits, y.mantissas.data());
    return y;
  }
  for (int row = 0; row < x.rows; ++row) {
    for (int col = 0; col < x.cols; ++col) {
      const std::int32_t v = ShiftRound(x.at(row, col), shift, rounding, seed, row, col);
      y.at(row, col) = static_cast<std::int8_t>(std::clamp(v, QMin(bits), QMax(bits)));
    }
  }
  return y;
}

}  // namespace train
}  // namespace lowbit
