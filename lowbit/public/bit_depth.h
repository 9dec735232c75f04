// Operands narrower than 8 bits (doc/less-than-8-bit.md; doc/design.md, "Narrow operands"): the
// bit depth of each operand, how 8-bit inputs are rounded to it, and whether the data already fits.
#ifndef LOWBIT_PUBLIC_BIT_DEPTH_H_
#define LOWBIT_PUBLIC_BIT_DEPTH_H_

#include <cstdint>

namespace lowbit {

/// How requantization rounds a uint8 value s to N bits: (s * (2^N - 1) + offset) / 255. (Not
/// lowbit::Rounding, which is OutputStageShiftByPOT's.)
enum class BitDepthRounding {
  /// offset = 127: the nearest N-bit value. Its error depends only on s, so on data clumped
  /// around a few values it does not average out along the depth sum.
  kNearest,
  /// offset from gemmlowp's 8-bit xorshift generator: unbiased, pseudo-random.
  kXorshift,
  /// offset from x = (x + 97) % 255: unbiased and low-discrepancy, so that the errors of
  /// consecutive depth values cancel; the default probabilistic rounding.
  kAddMod97,
  /// kNearest below a depth of kAutoRoundingMinDepth, kAddMod97 from there on.
  kAuto,
};

enum class BitDepthMode {
  /// Operands are ordinary uint8 / int8 data, rounded to the bit depths before multiplying; the
  /// result approximates the 8-bit result.
  kRequantize,
  /// The caller promises that every value already fits its bit depth (uint8 in [0, 2^N - 1],
  /// int8 in [-2^(N-1), 2^(N-1) - 1]); lowbit checks it, and the result is exact.
  kDeclaredRange,
};

/// The bit depth (1..8) of each operand, and for kRequantize the rounding and its seed. The same
/// arguments give the same bits on every kernel, thread count and blocking, prepacked or not.
struct BitDepthParams {
  int lhs_bits = 8;
  int rhs_bits = 8;
  BitDepthRounding rounding = BitDepthRounding::kAuto;
  std::uint32_t seed = 0;
  BitDepthMode mode = BitDepthMode::kRequantize;
};

/// The depth from which BitDepthRounding::kAuto rounds probabilistically (doc/less-than-8-bit.md,
/// "Auto": where add-mod-97 rounding becomes more accurate than round-to-nearest on clumped data).
constexpr int kAutoRoundingMinDepth = 256;

/// kAuto resolved for a GEMM of this depth; any other strategy is returned as is.
constexpr BitDepthRounding ResolveRounding(BitDepthRounding rounding, int depth) {
  if (rounding != BitDepthRounding::kAuto) return rounding;
  return depth >= kAutoRoundingMinDepth ? BitDepthRounding::kAddMod97 : BitDepthRounding::kNearest;
}

const char* BitDepthRoundingName(BitDepthRounding rounding);

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_BIT_DEPTH_H_
