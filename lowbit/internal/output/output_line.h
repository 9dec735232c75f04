// What the vectorized output writer (lowbit/internal/output/output_writer.h) computes for one line
// of results, written once over an ISA: the pipeline's instructions with their parameters resolved
// for the line, the offset terms and the rescale of requantized operands' sums, a register of lanes
// at a time. Included through lowbit/internal/output/output_writer.h by the per-ISA writers, and by
// the driver for the float forms' constants of what kernels write between their steps.
#ifndef LOWBIT_INTERNAL_OUTPUT_OUTPUT_LINE_H_
#define LOWBIT_INTERNAL_OUTPUT_OUTPUT_LINE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lowbit/fixedpoint/fixedpoint.h"
#include "lowbit/internal/output/output.h"

namespace lowbit {
namespace internal {
namespace output_writer {

// Isa supplies, for its fixedpoint raw type Raw of kLanes int32 lanes:
//   static Raw Load(const std::int32_t* values);    // kLanes values, unaligned
//   static Raw LoadBytes(const void* bytes, bool is_signed);  // kLanes uint8 or int8, widened
//   static void Store(Raw v, int size, void* out);  // kLanes values' low `size` bytes
//   static Raw Min(Raw a, Raw b);
//   static Raw Max(Raw a, Raw b);
//   static void Transpose(Raw (&rows)[kLanes]);     // the kLanes x kLanes square, in place
//   // The 2 * kLanes lanes of a then b narrowed with saturation to kType (int16, int8, uint8):
//   template <ElementType kType>
//   static void StoreSaturated(Raw a, Raw b, void* out);
//   // Rescale (lowbit/internal/driver/driver.h) per lane i, with kLanes doubles at along_a and
//   along_b:
//   // round((65025 * sums + line_a * along_a[i] + line_b * along_b[i]) * reciprocal),
//   // saturated to int32.
//   static Raw RescaleLanes(Raw sums, double line_a, double line_b, const double* along_a,
//                      const double* along_b, double reciprocal);
// Min and Max are not fixedpoint primitives: only clamping and the split of an exponent into
// its shifts need them. An Isa may also supply
//   class ByteScale;  // a kScaleByFixedPoint whose results a clamp to bytes takes next
// constructed as ByteScale(multiplier, right_shift, offset), with usable() and
// operator()(Raw v, const fixedpoint::QuantizeDownScale<Raw>& exact): the scale's exact results
// wherever the clamp that follows it keeps them, in fewer instructions (ByteScaleConstants).
// And, where it has masked loads and stores,
//   static Raw LoadFirst(const std::int32_t* values, int count);  // count < kLanes values, 0 after
//   static void StoreFirst(Raw v, int size, int count, void* out);  // count lanes' low bytes
// which a line's last, partial vector then takes instead of a buffer (PartialAccess).

// 2^exponent, for exponents of normal doubles.
inline double PowerOfTwo(int exponent) {
  const std::uint64_t bits = static_cast<std::uint64_t>(1023 + exponent) << 52;
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// QuantizeDownInt32ByFixedPoint's scale where a clamp to a range within [-128, 255] follows it,
// as in every 8-bit pipeline, in float: 5 vector instructions per 16 AVX-512 results and a test
// per batch of two vectors (FloorOutsideWindow, output_avx512.cc) where the exact 64-bit
// arithmetic takes 13, and 8 and a test per AVX2 register where it takes 12. These are its
// constants; the Isas' ByteScale run it.
//
// The exact result is floor(V - s 2^-e) (QuantizeDownScale, fixedpoint_avx2.h), with
// V = (x M + 2^30 + 2^(30+e)) / 2^(31+e) + offset and s = 1 where x M < 0 (x < 0, as M > 0).
// Here t = fma(float(x), float(M'), float(c)) for M' = M / 2^(31+e) and c = c0 + delta, where
// V = x M' + c0, c0 = 2^-(e+1) + 1/2 + offset. Where |V| <= 258 (every value the clamp lets
// through, and those within 1 of its bounds), |x M'| <= X = 258 + |c0| < 2^10, and t errs from
// V + delta by at most
//   E = |float(x) - x| float(M') + |x| |float(M') - M'| + |float(c) - c| + 2^-16:
// x is exact in float below 2^24 and otherwise within |x| 2^-24 of it, |x| <= X / M', and the fma
// rounds its result, below 2^9 in magnitude, by at most 2^-16. E is bounded from the constants:
// X 2^-24 (1 + 2^-24) for x where X / M' reaches 2^24, X 2^-24 for M' where it has more than 24
// significant bits, |float(c) - c| (at most 2^-16) as it is; under 2^-13 in all (X < 515). Delta
// is the smaller of 2^-14, 2^-13 that exceeds that bound: |t - (V + delta)| < delta,
// so t lies in (V, V + 2 delta). Let W be the smallest power of two no less than 2 delta + 2^-e,
// twice the larger of the two: 2^-12 at the least. Where frac(t) >= W, V and V - 2^-e both lie in
// (floor(t) + W - 2 delta - 2^-e, t), and floor(t) is the exact result; the vectors with another
// lane (each lane about 2 W of the time) take the exact arithmetic. Any scale with e >= 12 has
// W <= 2^-11; the benchmarks' (M = 2^30, e = 15, offset 128) has delta = 2^-14 and W = 2^-12.
// Elsewhere t errs by less than |V| 2^-21, on the same side of [-129, 256] as V, so the clamp
// gives the same bound; and |t| < 2^24, which converts.
//
// frac(t) < W, for W = 2^-g, is found in the low bits of u = t + magic, magic = 1.5 * 2^(23-h),
// h = g + 1: for |t| < 2^(22-h), every t the clamp decides on (h <= 13), u holds t rounded to a
// multiple of 2^-h, and its low h bits (those of `window`, but the last two) are round(t 2^h) mod
// 2^h, in {0, 1, 2, 3} wherever frac(t) 2^h is in [0, 2). Every float operation must round to
// nearest.
struct ByteScaleConstants {
  bool usable = false;
  float multiplier = 0;
  float addend = 0;
  float magic = 0;
  std::int32_t window = 0;

  ByteScaleConstants(std::int32_t scale_multiplier, int right_shift, std::int32_t offset) {
    // Below 8 bits of shift the window catches more than a third of the vectors.
    if (scale_multiplier <= 0 || right_shift < 8 || right_shift > 31 || offset < -256 ||
        offset > 256) {
      return;
    }
    usable = true;
    // Every double below is exact but the error terms, each rounded by far less than the
    // (1 + 2^-20) allowed for them.
    const double exact_multiplier = scale_multiplier * PowerOfTwo(-(31 + right_shift));
    multiplier = static_cast<float>(exact_multiplier);
    const double c0 = PowerOfTwo(-(right_shift + 1)) + 0.5 + offset;
    const double product_bound = 258 + (c0 < 0 ? -c0 : c0);  // X
    const double rounding = product_bound * PowerOfTwo(-24) * (1 + PowerOfTwo(-24));
    const double product_error =
        (product_bound < PowerOfTwo(24) * exact_multiplier ? 0 : rounding) +
        (multiplier == exact_multiplier ? 0 : rounding);
    int delta_log = 14;  // delta = 2^-delta_log
    for (;; --delta_log) {
      const double delta = PowerOfTwo(-delta_log);
      const double c = c0 + delta;
      addend = static_cast<float>(c);
      const double c_error = addend > c ? addend - c : c - addend;
      // By delta_log = 13 always.
      if ((product_error + c_error + PowerOfTwo(-16)) * (1 + PowerOfTwo(-20)) < delta) break;
    }
    const int window_log = std::min(delta_log - 2, right_shift - 1);  // W = 2^-window_log
    const int window_bits = window_log + 1;
    magic = static_cast<float>(1.5 * PowerOfTwo(23 - window_bits));
    window = ((1 << window_bits) - 1) & ~3;
  }
};

// The ByteScale of an Isa without one: never usable.
struct NoByteScale {
  NoByteScale(std::int32_t, int, std::int32_t) {}
  bool usable() const { return false; }
};
template <typename Isa, typename = void>
struct ByteScaleOf {
  using type = NoByteScale;
};
template <typename Isa>
struct ByteScaleOf<Isa, std::void_t<typename Isa::ByteScale>> {
  using type = typename Isa::ByteScale;
};

// The rescale of requantized operands' sums (LineRescale, below) and then a QuantizeDown that a
// clamp to bytes follows, together in float, as ByteScaleConstants has the QuantizeDown alone: 6
// vector instructions per 16 AVX-512 results (7 where neither of a line's terms is the same all
// along it) and the batch's test, where the rescale in doubles takes 16 and the scale after it 5.
// These are its constants for a block's lines; the Isas' RescaledByteScale run them.
//
// With the sums T (offset terms added) and the line's terms A = line_a along_a[i] and
// B = line_b along_b[i], the rescale is x = round(n / D), n = 65025 T + A + B, and the scale's
// exact result is floor(V - s 2^-e) (ByteScaleConstants), V = x M' + c0, M' = M / 2^(31+e),
// c0 = 2^-(e+1) + 1/2 + offset, s = 1 where x < 0. Here, with k = M' / D,
//   t = fma(float(T), float(65025 k), fma(float(line_a k), float(along_a[i]),
//                                          fma(float(line_b k), float(along_b[i]), float(c))))
// for c = c0 + delta approximates V* + delta, V* = (n / D) M' + c0 = 65025 k T + k A + k B + c0,
// which is within M' / 2 of V (|x - n / D| <= 1/2). Where float(along_b[i]) is one value b on all
// the entries (a uniform offset makes one of the terms so), the inner fma is the constant
// float(c + k line_b b), and likewise for along_a: no larger an error than the fma's.
// Let S bound |k A| + |k B| + |c| on the lines. Each float operation rounds to nearest, within
// 2^-24 of its result: t errs from V* + delta by at most 2^-24 (3 |V* + delta| + 6 S) (1 + 2^-20),
// less than E = 2^-24 (1024 + 8 S) where |V*| <= 259 (every V the clamp keeps, or within 1 of its
// bounds). With delta = M' / 2 + E, t lies in [V, V + 2 delta] there, and ByteScaleConstants'
// argument holds for W >= 2 delta + 2^-e: where frac(t) >= W, floor(t) is the exact result.
// Elsewhere t errs by less than 2^-7 + |V*| 2^-21, on the same side of [-129, 256] as V*.
// x does not saturate where |V*| < 2^10, M' >= 2^-20 putting |n / D| below 2^31 there, and where
// it saturates V and V* are both beyond 2^10 on the same side. With 65025 k 2^31 + S < 2^30,
// |t| < 2^31 for any T, so t converts to an int32, whose floor beyond [-1024, 1024] the clamp
// takes as it does V (the window test has no meaning there). Usable where ByteScaleConstants is,
// for M' >= 2^-20, 65025 k < 1/4 (so M' < D / 260100) and W <= 2^-7 (S up to about 2^12 when
// e >= 9): about 2 W 16 of the vectors have a lane in the window and take the exact arithmetic.
// The rescale's x is rounded to nearest, as RescaleBlock (unpack.cc) rounds it under the FPU's
// default rounding.
struct RescaledByteScaleConstants {
  bool usable = false;
  double term_factor = 0;  // k: a line's line_a k and line_b k are its own (LineRescale below)
  double addend = 0;       // c
  float sum_factor = 0;    // 65025 k
  float magic = 0;
  std::int32_t window = 0;

  RescaledByteScaleConstants() = default;  // not usable
  // For lines whose |line_a|, |line_b| are at most max_line_a, max_line_b, and whose entries'
  // |along_a[i]|, |along_b[i]| are at most max_along_a, max_along_b.
  RescaledByteScaleConstants(std::int32_t scale_multiplier, int right_shift, std::int32_t offset,
                             int divisor, double max_line_a, double max_line_b, double max_along_a,
                             double max_along_b) {
    if (!ByteScaleConstants(scale_multiplier, right_shift, offset).usable) return;
    const double multiplier = scale_multiplier * PowerOfTwo(-(31 + right_shift));  // M'
    if (multiplier < PowerOfTwo(-20)) return;
    const double k = multiplier / divisor;
    const double c0 = PowerOfTwo(-(right_shift + 1)) + 0.5 + offset;
    // The along terms' float values are within 2^-24 of their own; delta < 1 in c.
    const double bound =
        (max_line_a * max_along_a + max_line_b * max_along_b) * k * (1 + PowerOfTwo(-20)) +
        (c0 < 0 ? -c0 : c0) + 1;
    const double delta = 0.5 * multiplier + (1024 + 8 * bound) * PowerOfTwo(-24);
    const double needed = 2 * delta + PowerOfTwo(-right_shift);
    // W = 2^-window_log, at most 2^-11: u then holds t to 2^-12, for |t| < 1024.
    int window_log = 11;
    while (window_log >= 7 && PowerOfTwo(-window_log) < needed) --window_log;
    if (window_log < 7 || 65025 * k >= 0.25) return;
    usable = true;
    term_factor = k;
    addend = c0 + delta;
    sum_factor = static_cast<float>(65025 * k);
    const int window_bits = window_log + 1;
    magic = static_cast<float>(1.5 * PowerOfTwo(23 - window_bits));
    window = ((1 << window_bits) - 1) & ~3;
  }
};

// The magnitudes of a rescale's terms over a block's lines and entries: what
// RescaledByteScaleConstants' error bound takes. And whether an along term's float value is the
// same on all the entries (one of them is where its operand's offset is uniform), with that value.
struct RescaleBounds {
  double line_a = 0;
  double line_b = 0;
  double along_a = 0;
  double along_b = 0;
  bool along_a_same = true;
  bool along_b_same = true;
  float along_a_value = 0;
  float along_b_value = 0;
};

// The terms compared as integers, the bits of their floats: they are finite, and the bits of the
// magnitudes of floats order as their values do. Loops of integer maxima and ORs vectorize, where
// std::max of doubles and == of floats do not (each must keep to NaN's rules): about 7% of the
// writer's samples of an L7R5 GEMM at 1024^3 on the AMX kernel went to the scalar loops, whose
// blocks have 512 lines of 64 entries.
template <typename Term>
using TermBits = std::conditional_t<sizeof(Term) == 8, std::uint64_t, std::uint32_t>;
template <typename Term>
TermBits<Term> BitsOf(Term term) {
  TermBits<Term> bits;
  std::memcpy(&bits, &term, sizeof(bits));
  return bits;
}

// Whether terms[i] has the bits of terms[0] for every i < count (a -0 is not the same as a 0: the
// lines then take the form for terms that vary, which is exact too).
inline bool SameBits(const float* terms, int count) {
  if (count == 0) return true;
  const std::uint32_t first = BitsOf(terms[0]);
  std::uint32_t differ = 0;
  for (int i = 0; i < count; ++i) differ |= BitsOf(terms[i]) ^ first;
  return differ == 0;
}

// The largest |a[i]| and |b[i]| for i < count, as doubles.
template <typename Term>
void MaxMagnitudes(const Term* a, const Term* b, int count, double* max_a, double* max_b) {
  constexpr TermBits<Term> kMagnitude = ~TermBits<Term>{0} >> 1;
  TermBits<Term> bits_a = 0, bits_b = 0;
  for (int i = 0; i < count; ++i) {
    bits_a = std::max<TermBits<Term>>(bits_a, BitsOf(a[i]) & kMagnitude);
    bits_b = std::max<TermBits<Term>>(bits_b, BitsOf(b[i]) & kMagnitude);
  }
  Term magnitude_a, magnitude_b;
  std::memcpy(&magnitude_a, &bits_a, sizeof(bits_a));
  std::memcpy(&magnitude_b, &bits_b, sizeof(bits_b));
  *max_a = magnitude_a;
  *max_b = magnitude_b;
}

// The bounds of `lines` lines whose own terms are line_a[l], line_b[l], over `entries` entries
// whose along terms' float values are along_a[i], along_b[i].
inline RescaleBounds RescaleBoundsOf(const double* line_a, const double* line_b, int lines,
                                     const float* along_a, const float* along_b, int entries) {
  RescaleBounds bounds;
  MaxMagnitudes(line_a, line_b, lines, &bounds.line_a, &bounds.line_b);
  if (entries > 0) {
    bounds.along_a_value = along_a[0];
    bounds.along_b_value = along_b[0];
  }
  MaxMagnitudes(along_a, along_b, entries, &bounds.along_a, &bounds.along_b);
  bounds.along_a_same = SameBits(along_a, entries);
  bounds.along_b_same = SameBits(along_b, entries);
  return bounds;
}

// A line's factors of its along terms and its addend in the rescale's float form, where
// `constants` are usable, from its terms: those times k, a term the same all along the line
// folded into the addend. Then the one varying term is line_a's, along the terms that OneAlong
// names, and line_b is 0; or both vary.
struct RescaledLine {
  float line_a;
  float line_b;
  float addend;
};
inline RescaledLine RescaledLineOf(double line_a, double line_b, const RescaleBounds& bounds,
                                   const RescaledByteScaleConstants& constants) {
  const double k = constants.term_factor, c = constants.addend;
  if (bounds.along_b_same) {
    return {static_cast<float>(line_a * k), 0,
            static_cast<float>(c + k * line_b * bounds.along_b_value)};
  }
  if (bounds.along_a_same) {
    return {static_cast<float>(line_b * k), 0,
            static_cast<float>(c + k * line_a * bounds.along_a_value)};
  }
  return {static_cast<float>(line_a * k), static_cast<float>(line_b * k), static_cast<float>(c)};
}
// The along terms of the one term that varies along the lines (the other folded into
// RescaledLine's addend), or null where both do.
inline const float* OneAlong(const float* along_a, const float* along_b,
                             const RescaleBounds& bounds) {
  if (bounds.along_b_same) return along_a;
  if (bounds.along_a_same) return along_b;
  return nullptr;
}

// The RescaledByteScale of an Isa without one: never constructed from usable constants.
struct NoRescaledByteScale {
  explicit NoRescaledByteScale(const RescaledByteScaleConstants&) {}
  void ForLine(float, float, float) {}
};
template <typename Isa, typename = void>
struct RescaledByteScaleOf {
  using type = NoRescaledByteScale;
};
template <typename Isa>
struct RescaledByteScaleOf<Isa, std::void_t<typename Isa::RescaledByteScale>> {
  using type = typename Isa::RescaledByteScale;
};

// How many vectors a batch of a known program's 8-bit results holds: an Isa's kByteBatch, where it
// narrows that many vectors to bytes in one store (StoreSaturatedBytes), else 2.
template <typename Isa, typename = void>
struct ByteBatchOf {
  static constexpr int value = 2;
};
template <typename Isa>
struct ByteBatchOf<Isa, std::void_t<decltype(Isa::kByteBatch)>> {
  static constexpr int value = Isa::kByteBatch;
};

// Whether `instruction` clamps to a range within [-128, 255]. Its result is then the same for
// an input that errs by less than 1 where the exact input is in [-129, 256], and for one on the
// same side of that interval as the exact input elsewhere: what ByteScale's results rely on.
inline bool ClampsToBytes(const OutputInstruction* instruction) {
  return instruction != nullptr && instruction->opcode == OutputOpcode::kClamp &&
         instruction->offset >= -128 && instruction->limit <= 255;
}

// Whether Isa has LoadFirst and StoreFirst. Through a buffer, the partial vector's load waits
// for the buffer's pieces to be stored (no store forwarding): the AVX-512 writer took twice as
// long on the 8-entry lines of an 8 x 8 x 8 GEMM.
template <typename Isa, typename = void>
struct PartialAccess : std::false_type {};
template <typename Isa>
struct PartialAccess<Isa, std::void_t<decltype(Isa::LoadFirst(nullptr, 0))>> : std::true_type {};

// The first `count` of kLanes lanes from `values`, the others zero.
template <typename Isa>
inline __attribute__((always_inline)) typename Isa::Raw LoadPartial(const std::int32_t* values,
                                                                    int count) {
  if (count == Isa::kLanes) return Isa::Load(values);
  if constexpr (PartialAccess<Isa>::value) return Isa::LoadFirst(values, count);
  std::int32_t buffer[Isa::kLanes] = {};
  std::memcpy(buffer, values, sizeof(std::int32_t) * count);
  return Isa::Load(buffer);
}

// A parameter as one line of results sees it: the same value all along the line (one value, or
// the line's own channel), broadcast once; or one value per entry (per-channel along the line),
// loaded at each step.
template <typename Isa>
struct LineParameter {
  typename Isa::Raw broadcast;
  std::int32_t value;
  const std::int32_t* along;  // the per-channel values from the line's first entry, or null
  bool negated;

  // Whether `parameter` takes a different value at each entry of a line; `along_cols`: the line
  // is a result row (it runs along the columns).
  static bool VariesAlong(const ChannelParameter& parameter, bool along_cols) {
    return parameter.per_channel != nullptr && (parameter.axis == ChannelAxis::kRow) != along_cols;
  }

  static LineParameter For(const ChannelParameter& parameter, int row, int col, bool along_cols) {
    using Raw = typename Isa::Raw;
    if (parameter.per_channel == nullptr) {
      return {fixedpoint::Dup<Raw>(parameter.value), parameter.value, nullptr, false};
    }
    const bool per_row = parameter.axis == ChannelAxis::kRow;
    if (!VariesAlong(parameter, along_cols)) {
      // Per-channel right shifts are stored negated, as shifts in [0, 31].
      const std::int32_t stored = parameter.per_channel[per_row ? row : col];
      const std::int32_t value = parameter.negated ? -stored : stored;
      return {fixedpoint::Dup<Raw>(value), value, nullptr, false};
    }
    return {fixedpoint::Dup<Raw>(0), 0, parameter.per_channel + (per_row ? row : col),
            parameter.negated};
  }

  typename Isa::Raw Lanes(int entry, int count) const {
    if (along == nullptr) return broadcast;
    const typename Isa::Raw values = LoadPartial<Isa>(along + entry, count);
    return negated ? fixedpoint::Neg(values) : values;
  }
};

// x >> shift in unsigned arithmetic, for shift in [1, 31].
template <typename Raw>
inline __attribute__((always_inline)) Raw LogicalShiftRight(Raw x, int shift) {
  return fixedpoint::BitAnd(fixedpoint::ShiftRight(x, shift),
                            fixedpoint::Dup<Raw>(static_cast<std::int32_t>(0xffffffffU >> shift)));
}

// The hash of StochasticRoundingHash on each lane, in wrapping int32 (the bits of uint32).
template <typename Raw>
inline __attribute__((always_inline)) Raw HashLanes(Raw x) {
  using Hash = StochasticRoundingHash;
  x = fixedpoint::BitXor(x, LogicalShiftRight(x, 16));
  x = fixedpoint::Mul(x, fixedpoint::Dup<Raw>(static_cast<std::int32_t>(Hash::kFirstMultiplier)));
  x = fixedpoint::BitXor(x, LogicalShiftRight(x, 15));
  x = fixedpoint::Mul(x, fixedpoint::Dup<Raw>(static_cast<std::int32_t>(Hash::kSecondMultiplier)));
  return fixedpoint::BitXor(x, LogicalShiftRight(x, 16));
}

// 0, 1, ..., kLanes - 1: the lanes' offsets along a line.
template <typename Isa>
inline __attribute__((always_inline)) typename Isa::Raw LaneIndices() {
  alignas(64) static constexpr std::int32_t kIndices[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                            8, 9, 10, 11, 12, 13, 14, 15};
  static_assert(Isa::kLanes <= 16, "one index per lane");
  return Isa::Load(kIndices);
}

// An instruction with its parameters resolved for the current line. Only instructions with a
// per-channel parameter change from line to line.
template <typename Isa>
struct LineInstruction {
  using Raw = typename Isa::Raw;
  const OutputInstruction* instruction;
  bool per_line;
  LineParameter<Isa> first;
  LineParameter<Isa> second;
  Raw offset;
  Raw limit;
  // A kScaleByFixedPoint whose parameters are the same all along the line: its left shift and
  // its rounding, with the constants that takes derived here rather than in every batch (GCC
  // had redone that at every line: about 20 of 75 instructions a line of the QuantizeDown
  // pipeline). Unused otherwise.
  int scale_left_shift = 0;
  fixedpoint::QuantizeDownScale<Raw> scale{fixedpoint::Dup<Raw>(0), 0, fixedpoint::Dup<Raw>(0)};
  // The same scale where a clamp to bytes takes its results next (ClampsToBytes), if the Isa has
  // a faster form for that and the scale's parameters allow it; unusable otherwise.
  bool clamped_to_bytes = false;
  typename ByteScaleOf<Isa>::type byte_scale{0, 0, 0};
  // A kStochasticShiftRight's line: whether it runs along a result row, the coordinate that
  // varies along it at its first entry (the column of a row, the row of a column), and the
  // hash's part from the coordinate that stays (a row's key, or kColStep * column). Its random
  // bits depend on each entry's row and column, so it is set up for every line.
  bool along_cols = true;
  int line_first = 0;
  Raw line_part = fixedpoint::Dup<Raw>(0);
  // A kAlignedSum's line: the residual's entry for the line's first entry, the bytes from one
  // entry to the next along the line, and the line's first row and column (for the alignment's
  // per-channel parameters, read as each batch needs them: six more LineParameters here made
  // every writer's instructions, set up per block, twice as large, and small GEMMs 10% slower).
  const char* residual_line = nullptr;
  std::ptrdiff_t residual_step = 0;
  int line_row = 0;
  int line_col = 0;
  // When no parameter varies along the line (per-tensor plans, and per-axis ones across it), their
  // values for the line, in AlignedSumOperands' order.
  bool aligned_varies = false;
  std::int32_t aligned_values[6] = {};

  // `next`: the program's next instruction, or null. A constructor, not an aggregate: GCC
  // zeroed all of an aggregate (a kilobyte and a half, rep stos) before setting its members, half
  // of building one.
  LineInstruction(const OutputInstruction& instruction, const OutputInstruction* next)
      : instruction(&instruction),
        per_line(instruction.first.per_channel != nullptr ||
                 instruction.second.per_channel != nullptr ||
                 instruction.opcode == OutputOpcode::kStochasticShiftRight ||
                 instruction.opcode == OutputOpcode::kAlignedSum),
        first(LineParameter<Isa>::For(instruction.first, 0, 0, true)),
        second(LineParameter<Isa>::For(instruction.second, 0, 0, true)),
        offset(fixedpoint::Dup<Raw>(instruction.offset)),
        limit(fixedpoint::Dup<Raw>(instruction.limit)),
        clamped_to_bytes(ClampsToBytes(next)) {
    PrepareScale();
  }

  __attribute__((always_inline)) void ForLine(int row, int col, bool line_along_cols) {
    if (!per_line) return;
    if (instruction->opcode == OutputOpcode::kStochasticShiftRight) {
      using Hash = StochasticRoundingHash;
      along_cols = line_along_cols;
      line_first = line_along_cols ? col : row;
      const std::uint32_t seed = static_cast<std::uint32_t>(instruction->offset);
      line_part = fixedpoint::Dup<Raw>(static_cast<std::int32_t>(
          line_along_cols ? Hash::RowKey(seed, row)
                          : Hash::kColStep * static_cast<std::uint32_t>(col)));
      return;
    }
    if (instruction->opcode == OutputOpcode::kAlignedSum) {
      const AlignedSumOperands& operands = *instruction->aligned_sum;
      residual_line = static_cast<const char*>(operands.residual) + row * operands.row_step +
                      col * operands.col_step;
      residual_step = line_along_cols ? operands.col_step : operands.row_step;
      along_cols = line_along_cols;
      line_row = row;
      line_col = col;
      const ChannelParameter* parameters[6] = {
          &operands.lhs_zero_point, &operands.rhs_zero_point,     &operands.lhs_multiplier,
          &operands.rhs_multiplier, &operands.lhs_low_multiplier, &operands.rhs_low_multiplier};
      aligned_varies = false;
      for (int i = 0; i < 6; ++i) {
        aligned_varies |= LineParameter<Isa>::VariesAlong(*parameters[i], line_along_cols);
        aligned_values[i] = aligned_varies ? 0 : ValueAt(*parameters[i], row, col);
      }
      return;
    }
    first = LineParameter<Isa>::For(instruction->first, row, col, line_along_cols);
    second = LineParameter<Isa>::For(instruction->second, row, col, line_along_cols);
    PrepareScale();
  }

  __attribute__((always_inline)) void PrepareScale() {
    if (instruction->opcode != OutputOpcode::kScaleByFixedPoint || first.along != nullptr ||
        second.along != nullptr) {
      return;
    }
    const std::int32_t exponent = second.value;
    scale_left_shift = exponent > 0 ? exponent : 0;
    const int right_shift = exponent < 0 ? -exponent : 0;
    scale = fixedpoint::QuantizeDownScale<Raw>(first.broadcast, right_shift, offset);
    // Per line where the parameters are per line: a line may not allow what the last one did.
    if (clamped_to_bytes) {
      byte_scale = typename ByteScaleOf<Isa>::type(first.value, right_shift, instruction->offset);
    }
  }

  // What the stage's scalar Eval computes (lowbit/internal/output/output_program.h), with the same
  // fixedpoint functions on the ISA's raw type: on kBatch vectors of lanes, entries from `entry` of
  // the line, all full but the last, which holds `count` entries. One dispatch per batch.
  template <int kBatch>
  void Run(Raw (&v)[kBatch], int entry, int count) const {
    switch (instruction->opcode) {
      case OutputOpcode::kAdd:
        return Apply<OutputOpcode::kAdd>(v, entry, count);
      case OutputOpcode::kScaleByFixedPoint:
        return Apply<OutputOpcode::kScaleByFixedPoint>(v, entry, count);
      case OutputOpcode::kSaturatingShiftLeft:
        return Apply<OutputOpcode::kSaturatingShiftLeft>(v, entry, count);
      case OutputOpcode::kRoundingShiftRight:
        return Apply<OutputOpcode::kRoundingShiftRight>(v, entry, count);
      case OutputOpcode::kStochasticShiftRight:
        return Apply<OutputOpcode::kStochasticShiftRight>(v, entry, count);
      case OutputOpcode::kClamp:
        return Apply<OutputOpcode::kClamp>(v, entry, count);
      case OutputOpcode::kTruncateToUint8:
        return Apply<OutputOpcode::kTruncateToUint8>(v, entry, count);
      case OutputOpcode::kAlignedSum:
        return Apply<OutputOpcode::kAlignedSum>(v, entry, count);
    }
  }

  // A kAlignedSum parameter's `count` values on the line from `entry`: one value, the line's own
  // channel, or the channels along the line.
  __attribute__((always_inline)) Raw AlignedLanes(const ChannelParameter& parameter, int entry,
                                                  int count) const {
    if (parameter.per_channel == nullptr) return fixedpoint::Dup<Raw>(parameter.value);
    const bool per_row = parameter.axis == ChannelAxis::kRow;
    const std::int32_t* const first = parameter.per_channel + (per_row ? line_row : line_col);
    if (per_row == along_cols) return fixedpoint::Dup<Raw>(*first);
    return LoadPartial<Isa>(first + entry, count);
  }

  // The residual's `count` entries of the line from `entry`, widened to int32 lanes: loaded as
  // bytes where they are contiguous along the line (through a buffer for a partial vector),
  // else gathered.
  __attribute__((always_inline)) Raw ResidualLanes(bool is_signed, int entry, int count) const {
    const char* const at = residual_line + entry * residual_step;
    if (residual_step == 1) {
      if (count == Isa::kLanes) return Isa::LoadBytes(at, is_signed);
      char bytes[Isa::kLanes] = {};
      std::memcpy(bytes, at, static_cast<std::size_t>(count));
      return Isa::LoadBytes(bytes, is_signed);
    }
    std::int32_t buffer[Isa::kLanes] = {};
    for (int i = 0; i < count; ++i) {
      const char byte = at[i * residual_step];
      buffer[i] = is_signed ? std::int32_t{static_cast<std::int8_t>(byte)}
                            : std::int32_t{static_cast<std::uint8_t>(byte)};
    }
    return Isa::Load(buffer);
  }

  // Whether ForLine gives each line (row if `along_cols`) of a block something of its own:
  // a parameter per channel across the lines, or a stochastic shift's or aligned sum's line
  // state. A parameter per channel along the lines is the same for all of them.
  bool ChangesAcrossLines(bool along_cols) const {
    if (!per_line) return false;
    if (instruction->opcode == OutputOpcode::kStochasticShiftRight ||
        instruction->opcode == OutputOpcode::kAlignedSum) {
      return true;
    }
    const auto across = [&](const ChannelParameter& parameter) {
      return parameter.per_channel != nullptr &&
             !LineParameter<Isa>::VariesAlong(parameter, along_cols);
    };
    return across(instruction->first) || across(instruction->second);
  }

  // Whether `instruction` is a scale whose parameters change along a line (row if `along_cols`).
  static bool ScaleVariesAlong(const OutputInstruction& instruction, bool along_cols) {
    return instruction.opcode == OutputOpcode::kScaleByFixedPoint &&
           (LineParameter<Isa>::VariesAlong(instruction.first, along_cols) ||
            LineParameter<Isa>::VariesAlong(instruction.second, along_cols));
  }

  // Run for an instruction known to be kOpcode; a kScaleByFixedPoint known to be uniform along
  // the line when kUniformScale (then the prepared scale is used without a test).
  template <OutputOpcode kOpcode, bool kUniformScale = false, int kBatch>
  __attribute__((always_inline)) void Apply(Raw (&v)[kBatch], int entry, int count) const {
    const auto lanes = [&](const LineParameter<Isa>& parameter, int j) {
      return parameter.Lanes(entry + j * Isa::kLanes, j + 1 < kBatch ? Isa::kLanes : count);
    };
    if constexpr (kOpcode == OutputOpcode::kAdd) {
      for (int j = 0; j < kBatch; ++j) v[j] = fixedpoint::Add(v[j], lanes(first, j));
    } else if constexpr (kOpcode == OutputOpcode::kScaleByFixedPoint) {
      if (kUniformScale || (first.along == nullptr && second.along == nullptr)) {
        if constexpr (!std::is_same_v<typename ByteScaleOf<Isa>::type, NoByteScale>) {
          if (byte_scale.usable()) {
            byte_scale(v, scale);
            return;
          }
        }
        // Most scales have no left shift; skipping it spares the shift port, which the scale's
        // own shifts keep busy.
        if (scale_left_shift != 0) {
          for (int j = 0; j < kBatch; ++j) v[j] = fixedpoint::ShiftLeft(v[j], scale_left_shift);
        }
        for (int j = 0; j < kBatch; ++j) v[j] = scale(v[j]);
        return;
      }
      if (second.along == nullptr) {
        // One exponent for the line: shifts by a scalar amount, cheaper than per lane.
        const std::int32_t exponent = second.value;
        const int left = exponent > 0 ? exponent : 0, right = exponent < 0 ? -exponent : 0;
        for (int j = 0; j < kBatch; ++j) {
          v[j] = fixedpoint::QuantizeDownByFixedPoint(fixedpoint::ShiftLeft(v[j], left),
                                                      lanes(first, j), right, offset);
        }
        return;
      }
      for (int j = 0; j < kBatch; ++j) {
        const Raw exponent = lanes(second, j);
        const Raw zero = fixedpoint::Dup<Raw>(0);
        const Raw scaled = fixedpoint::SaturatingRoundingDoublingHighMul(
            fixedpoint::ShiftLeft(v[j], Isa::Max(exponent, zero)), lanes(first, j));
        v[j] = fixedpoint::Add(
            fixedpoint::RoundingDivideByPOT(scaled, Isa::Max(fixedpoint::Neg(exponent), zero)),
            offset);
      }
    } else if constexpr (kOpcode == OutputOpcode::kSaturatingShiftLeft) {
      for (int j = 0; j < kBatch; ++j) {
        v[j] = fixedpoint::SaturatingRoundingMultiplyByPOT(v[j], instruction->limit);
      }
    } else if constexpr (kOpcode == OutputOpcode::kRoundingShiftRight) {
      for (int j = 0; j < kBatch; ++j) {
        v[j] = fixedpoint::RoundingDivideByPOT(v[j], instruction->limit);
      }
    } else if constexpr (kOpcode == OutputOpcode::kStochasticShiftRight) {
      // floor((v + U) / 2^shift) for U = random >> (32 - shift) in [0, 2^shift), without the
      // 64 bits of the scalar Eval: (v >> shift) plus a carry where v's low bits and U reach
      // 2^shift, i.e. where (v & mask) > mask - U.
      using Hash = StochasticRoundingHash;
      const int shift = instruction->limit;
      const Raw mask =
          fixedpoint::Dup<Raw>(static_cast<std::int32_t>((std::uint32_t{1} << shift) - 1));
      for (int j = 0; j < kBatch; ++j) {
        const Raw positions = fixedpoint::Add(
            fixedpoint::Dup<Raw>(line_first + entry + j * Isa::kLanes), LaneIndices<Isa>());
        Raw random;
        if (along_cols) {
          random = HashLanes(fixedpoint::BitXor(
              line_part, fixedpoint::Mul(positions, fixedpoint::Dup<Raw>(static_cast<std::int32_t>(
                                                        Hash::kColStep)))));
        } else {
          const Raw row_keys = HashLanes(fixedpoint::Add(
              offset, fixedpoint::Mul(positions, fixedpoint::Dup<Raw>(
                                                     static_cast<std::int32_t>(Hash::kRowStep)))));
          random = HashLanes(fixedpoint::BitXor(row_keys, line_part));
        }
        const Raw up = LogicalShiftRight(random, 32 - shift);
        const Raw carry = fixedpoint::MaskIfGreaterThan(fixedpoint::BitAnd(v[j], mask),
                                                        fixedpoint::Sub(mask, up));
        v[j] = fixedpoint::Sub(fixedpoint::ShiftRight(v[j], shift), carry);
      }
    } else if constexpr (kOpcode == OutputOpcode::kClamp) {
      for (int j = 0; j < kBatch; ++j) v[j] = Isa::Min(Isa::Max(v[j], offset), limit);
    } else if constexpr (kOpcode == OutputOpcode::kAlignedSum) {
      // AlignedSumParameters::Sum on lanes.
      const AlignedSumOperands& operands = *instruction->aligned_sum;
      for (int j = 0; j < kBatch; ++j) {
        const int first_entry = entry + j * Isa::kLanes;
        const int lane_count = j + 1 < kBatch ? Isa::kLanes : count;
        const auto parameter = [&](int index, const ChannelParameter& values) {
          if (!aligned_varies) return fixedpoint::Dup<Raw>(aligned_values[index]);
          return AlignedLanes(values, first_entry, lane_count);
        };
        const Raw residual = ResidualLanes(operands.residual_signed, first_entry, lane_count);
        const Raw lhs_difference = fixedpoint::Sub(v[j], parameter(0, operands.lhs_zero_point));
        const Raw rhs_difference = fixedpoint::Sub(residual, parameter(1, operands.rhs_zero_point));
        Raw sum =
            fixedpoint::Add(fixedpoint::Mul(lhs_difference, parameter(2, operands.lhs_multiplier)),
                            fixedpoint::Mul(rhs_difference, parameter(3, operands.rhs_multiplier)));
        if (operands.split) {
          using Parameters = AlignedSumParameters;
          sum = Isa::Min(Isa::Max(sum, fixedpoint::Dup<Raw>(-Parameters::kHighLimit)),
                         fixedpoint::Dup<Raw>(Parameters::kHighLimit));
          const Raw low = fixedpoint::Add(
              fixedpoint::Mul(lhs_difference, parameter(4, operands.lhs_low_multiplier)),
              fixedpoint::Mul(rhs_difference, parameter(5, operands.rhs_low_multiplier)));
          sum = fixedpoint::Add(fixedpoint::ShiftLeft(sum, Parameters::kLowBits), low);
        }
        v[j] = sum;
      }
    } else {
      static_assert(kOpcode == OutputOpcode::kTruncateToUint8, "every opcode has a case");
      for (int j = 0; j < kBatch; ++j) {
        v[j] = fixedpoint::BitAnd(v[j], fixedpoint::Dup<Raw>(0xff));
      }
    }
  }
};

// The offset terms (lowbit/internal/output/unpack.h) of the current line: the line's own values
// broadcast, the other side's loaded along the line. Separable terms are first +
// first_along[entry], owed by the sums times `factor` where `scaled`.
template <typename Isa>
struct LineTerms {
  using Raw = typename Isa::Raw;
  Raw first;
  Raw second;
  const std::int32_t* first_along = nullptr;   // null: no terms owed
  const std::int32_t* second_along = nullptr;  // null: separable terms
  Raw factor = fixedpoint::Dup<Raw>(1);
  bool scaled = false;

  // `along_cols`: the line is a result row; `line` and `offset` count from the block's first row
  // and column.
  __attribute__((always_inline)) static LineTerms For(const OffsetTerms& terms, int line,
                                                      bool along_cols) {
    if (terms.row_part != nullptr) {
      return {fixedpoint::Dup<Raw>((along_cols ? terms.row_part : terms.col_part)[line]),
              fixedpoint::Dup<Raw>(0),
              along_cols ? terms.col_part : terms.row_part,
              nullptr,
              fixedpoint::Dup<Raw>(terms.sum_factor),
              terms.sum_factor != 1};
    }
    if (terms.row_first == nullptr) return {fixedpoint::Dup<Raw>(0), fixedpoint::Dup<Raw>(0)};
    const std::int32_t* line_first = along_cols ? terms.row_first : terms.col_first;
    const std::int32_t* line_second = along_cols ? terms.row_second : terms.col_second;
    return {fixedpoint::Dup<Raw>(line_first[line]), fixedpoint::Dup<Raw>(line_second[line]),
            along_cols ? terms.col_first : terms.row_first,
            along_cols ? terms.col_second : terms.row_second};
  }

  __attribute__((always_inline)) Raw AddTo(Raw v, int entry, int count) const {
    if (first_along == nullptr) return v;
    if (second_along == nullptr) {
      return scaled ? AddScaledSeparableTo(v, entry, count) : AddSeparableTo(v, entry, count);
    }
    const Raw products =
        fixedpoint::Add(fixedpoint::Mul(first, LoadPartial<Isa>(first_along + entry, count)),
                        fixedpoint::Mul(second, LoadPartial<Isa>(second_along + entry, count)));
    return fixedpoint::Add(v, products);
  }

  // AddTo for terms known to be separable, and not scaled.
  __attribute__((always_inline)) Raw AddSeparableTo(Raw v, int entry, int count) const {
    return fixedpoint::Add(fixedpoint::Add(v, first), LoadPartial<Isa>(first_along + entry, count));
  }

  // AddTo for terms known to be separable and scaled.
  __attribute__((always_inline)) Raw AddScaledSeparableTo(Raw v, int entry, int count) const {
    return AddSeparableTo(fixedpoint::Mul(v, factor), entry, count);
  }
};

// The rescale of requantized operands' sums (lowbit/internal/driver/driver.h) for the current line:
// the line's own terms as scalars, the other side's loaded along the line. It follows the offset
// terms and precedes the program. RescaleBlock (lowbit/internal/output/unpack.cc) computes the same
// for the scalar path: every product and sum is an exact integer in double, the quotient is never a
// tie, and both round to nearest.
template <typename Isa>
struct LineRescale {
  using Raw = typename Isa::Raw;
  double line_a = 0;
  double line_b = 0;
  const double* along_a = nullptr;  // null: no rescale owed
  const double* along_b = nullptr;
  double reciprocal = 0;
  const float* along_a_float = nullptr;  // null where the rescale has no float terms
  const float* along_b_float = nullptr;

  // `along_cols`: the line is result row `row`; else result column `col`. `reciprocal` is
  // 1 / rescale->divisor, divided out once per block rather than per line.
  static LineRescale For(const Rescale* rescale, double reciprocal, int row, int col,
                         bool along_cols) {
    if (rescale == nullptr) return {};
    const RescaleLineTerms& line = along_cols ? rescale->lhs : rescale->rhs;
    const RescaleLineTerms& along = along_cols ? rescale->rhs : rescale->lhs;
    const int line_index = along_cols ? row : col;
    const int first = along_cols ? col : row;
    const bool with_floats = along.a_float != nullptr && along.b_float != nullptr;
    return {line.a[line_index],
            line.b[line_index],
            along.a + first,
            along.b + first,
            reciprocal,
            with_floats ? along.a_float + first : nullptr,
            with_floats ? along.b_float + first : nullptr};
  }

  __attribute__((always_inline)) Raw Apply(Raw sums, int entry, int count) const {
    return along_a == nullptr ? sums : ApplyOwed(sums, entry, count);
  }

  // Apply for a rescale known to be owed.
  __attribute__((always_inline)) Raw ApplyOwed(Raw sums, int entry, int count) const {
    if (count == Isa::kLanes) {
      return Isa::RescaleLanes(sums, line_a, line_b, along_a + entry, along_b + entry, reciprocal);
    }
    double a[Isa::kLanes] = {}, b[Isa::kLanes] = {};
    std::memcpy(a, along_a + entry, sizeof(double) * count);
    std::memcpy(b, along_b + entry, sizeof(double) * count);
    return Isa::RescaleLanes(sums, line_a, line_b, a, b, reciprocal);
  }
};

}  // namespace output_writer
}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_OUTPUT_LINE_H_
