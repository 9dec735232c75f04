// Dyadic tensors (integer mantissas with one power-of-two exponent per tensor) and the integer
// arithmetic on them that training needs: stochastic rounding, requantization, alignment.
#ifndef LOWBIT_TRAIN_DYADIC_H_
#define LOWBIT_TRAIN_DYADIC_H_

#include <cstdint>
#include <vector>

#include "lowbit/lowbit.h"

namespace lowbit {
namespace train {

// The loops over every weight (the update) or every entry of a layer's output run once per step:
// GCC compiles AVX-512 and AVX2 clones of them as well, chosen when the program loads (the
// update's AVX-512 clone, on 512-bit vectors, takes about half the AVX2 clone's time per
// weight). Sanitizer builds keep one plain version (their runtimes start after the loader
// resolves the clones).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define LOWBIT_TRAIN_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define LOWBIT_TRAIN_CLONES
#endif

// value = mantissa * 2^-exponent: a larger exponent is a finer unit. Row-major.
template <typename Mantissa>
struct Dyadic {
  int rows = 0;
  int cols = 0;
  int exponent = 0;
  std::vector<Mantissa> mantissas;

  Dyadic() = default;
  Dyadic(int rows_in, int cols_in, int exponent_in)
      : rows(rows_in),
        cols(cols_in),
        exponent(exponent_in),
        mantissas(static_cast<std::size_t>(rows_in) * cols_in) {}
  // A new shape and exponent on the same storage, for a tensor its owner is about to overwrite
  // whole: no clearing, and no allocation unless it grows. Each training step's layers reshape
  // their outputs and gradients rather than build new ones.
  void Reshape(int rows_in, int cols_in, int exponent_in) {
    rows = rows_in;
    cols = cols_in;
    exponent = exponent_in;
    mantissas.resize(static_cast<std::size_t>(rows_in) * cols_in);
  }
  Mantissa& at(int row, int col) { return mantissas[static_cast<std::size_t>(row) * cols + col]; }
  Mantissa at(int row, int col) const {
    return mantissas[static_cast<std::size_t>(row) * cols + col];
  }
};

// GEMM operands and activations: int8 mantissas. Accumulators, gradients of weights and the
// weights' master copies: int32.
using DyadicInt8 = Dyadic<std::int8_t>;
using DyadicInt32 = Dyadic<std::int32_t>;

enum class TrainRounding { kStochastic, kNearest };

// The seeds of a run's stochastic roundings: one per rounding, drawn in a fixed order, so that
// the same run seed gives the same bits whatever the thread count or kernel (each rounding's
// random bits depend only on its seed and the entry's row and column; OutputStageShiftByPOT).
class SeedSequence {
 public:
  explicit SeedSequence(std::uint64_t seed) : state_(seed) {}
  std::uint32_t Next();
  // A 64-bit draw, for shuffling and initialisation.
  std::uint64_t Next64();

 private:
  std::uint64_t state_;
};

// The stage doing ShiftRound(acc, shift, ...) inside a GEMM's output pipeline.
inline OutputStageShiftByPOT ShiftStage(int shift, TrainRounding rounding, std::uint32_t seed) {
  return OutputStageShiftByPOT{
      -shift, rounding == TrainRounding::kStochastic ? Rounding::kStochastic : Rounding::kNearest,
      seed};
}

// Throws lowbit::Error unless shift is in [-31, 31], the range of ShiftRound.
void CheckShift(int shift);

// v * 2^-shift rounded to an integer: shift > 0 divides with stochastic rounding,
// SR(v, k) = floor(v / 2^k) + [ (v mod 2^k) > U ] with U uniform on {0, ..., 2^k - 1} from
// (seed, row, col), or to nearest (ties away from zero); shift <= 0 multiplies, saturating to
// int32. The same function as the GEMM's OutputStageShiftByPOT, so that a rounding in the output
// pipeline and one outside it give the same bits. Inline: the updates call it for every weight
// of every step.
inline std::int32_t ShiftRound(std::int32_t v, int shift, TrainRounding rounding,
                               std::uint32_t seed, int row, int col) {
  // The stage's random bits cover shifts up to 31.
  if (shift < -31 || shift > 31) CheckShift(shift);
  return ShiftStage(shift, rounding, seed).Eval(v, row, col);
}

// Signed b-bit bounds: -2^(b-1) .. 2^(b-1) - 1.
inline std::int32_t QMin(int bits) { return -(1 << (bits - 1)); }
inline std::int32_t QMax(int bits) { return (1 << (bits - 1)) - 1; }

// R(x, target): x's mantissas brought to `target_exponent` (target_exponent <= x.exponent
// rounds; a larger one multiplies) and clipped to signed `bits` bits.
DyadicInt8 Requantize(const DyadicInt32& x, int target_exponent, int bits, TrainRounding rounding,
                      std::uint32_t seed);

// Where the forward value was clipped: mantissa at either bound of `bits` bits. The
// straight-through estimator passes the gradient elsewhere and zeroes it here.
inline bool Clipped(std::int32_t mantissa, int bits) {
  // Bitwise, not ||: no branch, so that loops over it vectorize.
  return (mantissa <= QMin(bits)) | (mantissa >= QMax(bits));
}

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_DYADIC_H_
