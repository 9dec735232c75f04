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

DyadicInt8 Requantize(const DyadicInt32& x, int target_exponent, int bits, TrainRounding rounding,
                      std::uint32_t seed) {
  DyadicInt8 y(x.rows, x.cols, target_exponent);
  const int shift = x.exponent - target_exponent;
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
