// GEMMs with narrow operands (doc/less-than-8-bit.md): the checks of BitDepthParams and of
// declared ranges, and the requantize -> multiply -> rescale path.
#include "lowbit/internal/driver/bit_depth.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "lowbit/internal/driver/avx2_clones.h"
#include "lowbit/internal/driver/context_state.h"
#include "lowbit/internal/driver/scratch.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/public/checks.h"
#include "lowbit/public/error.h"
#include "lowbit/public/prepacked.h"

namespace lowbit {

const char* BitDepthRoundingName(BitDepthRounding rounding) {
  switch (rounding) {
    case BitDepthRounding::kNearest:
      return "nearest";
    case BitDepthRounding::kXorshift:
      return "xorshift";
    case BitDepthRounding::kAddMod97:
      return "addmod";
    case BitDepthRounding::kAuto:
      return "auto";
  }
  return "unknown";
}

namespace internal {
namespace {

std::string Describe(const BitDepthParams& params) {
  std::string text = std::to_string(params.lhs_bits) + "-bit lhs, " +
                     std::to_string(params.rhs_bits) + "-bit rhs, ";
  if (params.mode == BitDepthMode::kDeclaredRange) return text + "declared range";
  return text + "requantized with " + BitDepthRoundingName(params.rounding) + " rounding, seed " +
         std::to_string(params.seed);
}

void CheckPrepackedBitDepth(const PrepackedRhs& rhs, const BitDepthParams* params) {
  const BitDepthParams* packed = rhs.bit_depth();
  if (packed == nullptr && params == nullptr) return;
  if (packed == nullptr) {
    throw Error("rhs",
                "was prepacked without BitDepthParams; a GEMM with BitDepthParams needs "
                "an rhs prepacked with the same ones");
  }
  if (params == nullptr) {
    throw Error("rhs", "was prepacked with BitDepthParams (" + Describe(*packed) +
                           "); pass the same BitDepthParams to the GEMM");
  }
  const auto check_field = [&](const char* field, std::int64_t packed_value,
                               std::int64_t call_value) {
    if (packed_value != call_value) {
      throw Error(std::string("bit_depth.") + field,
                  "must equal the prepacked rhs's (" + std::to_string(packed_value) + ", " +
                      Describe(*packed) + "), got " + std::to_string(call_value));
    }
  };
  check_field("mode", static_cast<int>(packed->mode), static_cast<int>(params->mode));
  check_field("rhs_bits", packed->rhs_bits, params->rhs_bits);
  // The lhs bit depth may change as long as the kernel it selects reads the same rhs layout
  // (on every ISA, one lhs of 8 bits against an 8-bit rhs is not narrow, the others are).
  const KernelFormat& packed_format =
      GetPrepackedRhsKernelImplementation(rhs.kernel(), packed->lhs_bits, packed->rhs_bits).format;
  const KernelFormat& call_format =
      GetPrepackedRhsKernelImplementation(rhs.kernel(), params->lhs_bits, params->rhs_bits).format;
  if (!SameRhsLayout(packed_format, call_format)) {
    throw Error("bit_depth.lhs_bits",
                "selects a kernel with another rhs layout than the prepacked rhs's (" +
                    Describe(*packed) + "), got " + std::to_string(params->lhs_bits) +
                    "; prepack the rhs for this lhs bit depth");
  }
  if (params->mode == BitDepthMode::kRequantize) {
    check_field("rounding", static_cast<int>(packed->rounding), static_cast<int>(params->rounding));
    check_field("seed", packed->seed, params->seed);
  }
}

// The value (r, c) of a uint8 or int8 matrix.
int ValueAt(const MatrixView& view, int row, int col) {
  const std::ptrdiff_t index = view.order == Order::kRowMajor
                                   ? static_cast<std::ptrdiff_t>(row) * view.stride + col
                                   : row + static_cast<std::ptrdiff_t>(col) * view.stride;
  return view.type == ElementType::kInt8 ? static_cast<const std::int8_t*>(view.data)[index]
                                         : static_cast<const std::uint8_t*>(view.data)[index];
}

// The bits set in any of the `count` bytes at `data`, each plus `bias` (wrapping): an OR of
// each vector of bytes, where a minimum and a maximum took two instructions, and an AVX2 clone.
// CheckDeclaredRange took 8% of a 256^3 GEMM on declared 2-bit operands line by line through the
// baseline's minimum and maximum; 4% line by line through this, less over whole matrices at
// once. Four chains of ORs, so that each waits on its own last OR only: with one, this took
// 5.5% of an AMX GEMM of declared 2-bit operands at 256^3 (perf), with four 3.3%. Then single
// vectors, so that only the last 31 bytes go one by one.
LOWBIT_AVX2_CLONES std::uint8_t BitsOfBiased(const std::uint8_t* data, std::ptrdiff_t count,
                                             std::uint8_t bias) {
  typedef std::uint8_t Bytes __attribute__((vector_size(32)));
  constexpr int kChains = 4;
  Bytes chains[kChains] = {};
  std::ptrdiff_t i = 0;
  for (; i + kChains * 32 <= count; i += kChains * 32) {
    for (int j = 0; j < kChains; ++j) {
      Bytes values;
      std::memcpy(&values, data + i + 32 * j, 32);
      chains[j] |= values + bias;
    }
  }
  for (; i + 32 <= count; i += 32) {
    Bytes values;
    std::memcpy(&values, data + i, 32);
    chains[0] |= values + bias;
  }
  std::uint8_t bits = 0;
  for (const Bytes& chain : chains) {
    for (int j = 0; j < 32; ++j) bits |= chain[j];
  }
  for (; i < count; ++i) bits |= static_cast<std::uint8_t>(data[i] + bias);
  return bits;
}

}  // namespace

MatrixView RequantizedView(const MatrixView& lines, std::uint8_t* out) {
  return {out,         ElementType::kUint8,
          lines.rows,  lines.cols,
          lines.order, lines.order == Order::kRowMajor ? lines.cols : lines.rows};
}

void ValidateBitDepthParams(const BitDepthParams& params) {
  checks::CheckInRange("bit_depth", "lhs_bits", params.lhs_bits, 1, 8);
  checks::CheckInRange("bit_depth", "rhs_bits", params.rhs_bits, 1, 8);
  const int rounding = static_cast<int>(params.rounding);
  if (rounding < static_cast<int>(BitDepthRounding::kNearest) ||
      rounding > static_cast<int>(BitDepthRounding::kAuto)) {
    throw Error("bit_depth.rounding",
                "must be BitDepthRounding::kNearest, kXorshift, kAddMod97 or kAuto, got " +
                    std::to_string(rounding));
  }
  const int mode = static_cast<int>(params.mode);
  if (mode != static_cast<int>(BitDepthMode::kRequantize) &&
      mode != static_cast<int>(BitDepthMode::kDeclaredRange)) {
    throw Error("bit_depth.mode",
                "must be BitDepthMode::kRequantize or kDeclaredRange, got " + std::to_string(mode));
  }
}

namespace {

// The smallest and largest values a declared range allows.
struct Limits {
  int min_allowed;
  int max_allowed;
};
Limits LimitsOf(const DeclaredRange& range) {
  if (range.view.type == ElementType::kInt8) {
    return {-(1 << (range.bits - 1)), (1 << (range.bits - 1)) - 1};
  }
  return {0, (1 << range.bits) - 1};
}

}  // namespace

// A value is in range when, biased by -min_allowed, it fits `bits` unsigned bits.
RangeBits RangeBitsOf(const DeclaredRange& range) {
  const Limits limits = LimitsOf(range);
  return {static_cast<std::uint8_t>(-limits.min_allowed),
          static_cast<std::uint8_t>(~limits.max_allowed + limits.min_allowed)};
}

void OrBitsOfLines(const MatrixView& lines, int first, int count, RangeBits* range) {
  // Runs of contiguous bytes: each line, or across the lines at each of their positions.
  const bool row_major = lines.order == Order::kRowMajor;
  const int runs = row_major ? count : lines.cols;
  const int length = row_major ? lines.cols : count;
  if (runs == 0 || length == 0) return;
  const auto* values = static_cast<const std::uint8_t*>(lines.data);
  // Runs stored one after another are one: short lines one by one took half of a declared
  // 64 x 64 x 64 GEMM, in BitsOfBiased's byte-by-byte tail.
  if (lines.stride == length) {
    const std::ptrdiff_t first_byte =
        row_major ? static_cast<std::ptrdiff_t>(first) * length : first;
    range->bits |=
        BitsOfBiased(values + first_byte, static_cast<std::ptrdiff_t>(runs) * length, range->bias);
    return;
  }
  for (int run = 0; run < runs; ++run) {
    const std::uint8_t* start =
        row_major ? values + static_cast<std::ptrdiff_t>(first + run) * lines.stride
                  : values + first + static_cast<std::ptrdiff_t>(run) * lines.stride;
    range->bits |= BitsOfBiased(start, length, range->bias);
  }
}

void CheckDeclaredRange(const DeclaredRange& range) {
  const MatrixView& view = range.view;
  const bool row_major = view.order == Order::kRowMajor;
  const int lines = row_major ? view.rows : view.cols;
  const int length = row_major ? view.cols : view.rows;
  // An empty matrix may have null data, which no line address may be computed from. Every byte is
  // an 8-bit value: declared L7R8 GEMMs at 256^3 spent 3% of their time scanning the rhs.
  if (length == 0 || range.bits >= 8) return;
  // The bits of the biased values above the range's are OR'ed together over the whole matrix
  // (OrBitsOfLines: at once where its lines are stored one after another), and the offending
  // entry is searched for only if there is one, in the first line found to hold it.
  RangeBits scan = RangeBitsOf(range);
  OrBitsOfLines(view, 0, view.rows, &scan);
  if (scan.InRange()) return;
  const auto* values = static_cast<const std::uint8_t*>(view.data);
  const Limits limits = LimitsOf(range);
  for (int line = 0; line < lines; ++line) {
    scan.bits =
        BitsOfBiased(values + static_cast<std::ptrdiff_t>(line) * view.stride, length, scan.bias);
    if (scan.InRange()) continue;
    for (int i = 0; i < length; ++i) {
      const int row = row_major ? line : i, col = row_major ? i : line;
      const int value = ValueAt(view, row, col);
      if (value < limits.min_allowed || value > limits.max_allowed) {
        throw Error(range.name,
                    "holds " + std::to_string(value) + " at (" + std::to_string(row) + ", " +
                        std::to_string(col) + "), outside [" + std::to_string(limits.min_allowed) +
                        ", " + std::to_string(limits.max_allowed) +
                        "]: BitDepthMode::kDeclaredRange promises " + std::to_string(range.bits) +
                        "-bit values (bit_depth." + range.bits_field + ")");
      }
    }
  }
}

void ValidateBitDepthArguments(const BitDepthParams* params, const MatrixView& lhs,
                               const MatrixView& rhs, const PrepackedRhs* prepacked_rhs) {
  if (params != nullptr) ValidateBitDepthParams(*params);
  if (prepacked_rhs != nullptr) CheckPrepackedBitDepth(*prepacked_rhs, params);
  if (params == nullptr || params->mode != BitDepthMode::kDeclaredRange) return;
  // A GEMM with an empty result runs nothing; any other checks its operands itself.
  if (lhs.rows != 0 && rhs.cols != 0) return;
  CheckDeclaredRange(LhsDeclaredRange(lhs, *params));
  // A prepacked rhs was checked when it was packed.
  if (prepacked_rhs == nullptr) CheckDeclaredRange(RhsDeclaredRange(rhs, *params));
}

void RunBitDepthGemm(Context& context, const MatrixView& lhs, const MatrixView& rhs,
                     const PrepackedRhs* prepacked_rhs, const Offsets& lhs_offset,
                     const Offsets& rhs_offset, const BitDepthParams& params,
                     const ResultTarget& target) {
  const PackedOperand* packed_rhs = prepacked_rhs != nullptr ? &prepacked_rhs->packed() : nullptr;
  const MatrixView gemm_rhs = packed_rhs != nullptr ? ViewOf(*packed_rhs) : rhs;
  if (params.mode == BitDepthMode::kDeclaredRange) {
    // A prepacked rhs was checked when it was packed; every byte is an 8-bit value, which the
    // GEMM need not check nor pack otherwise.
    const DeclaredRange lhs_range = LhsDeclaredRange(lhs, params);
    const DeclaredRange rhs_range = RhsDeclaredRange(rhs, params);
    NarrowOperands narrow{params.lhs_bits, params.rhs_bits, nullptr};
    if (params.lhs_bits < 8) narrow.lhs_range = &lhs_range;
    if (prepacked_rhs == nullptr && params.rhs_bits < 8) narrow.rhs_range = &rhs_range;
    RunGemm(context, lhs, gemm_rhs, packed_rhs, lhs_offset, rhs_offset, target, &narrow);
    return;
  }
  const int rows = lhs.rows, depth = lhs.cols, cols = rhs.cols;
  const BitDepthRounding rounding = ResolveRounding(params.rounding, depth);

  // Scratch: the rescale terms of every lhs row and rhs column, and the rhs columns' terms
  // before their sums are known (the driver sets the sum-dependent ones as it requantizes each
  // line while packing it, lowbit/internal/driver/driver.h); then the terms rounded to float.
  const std::size_t terms_bytes = sizeof(double) * (2 * AlignUp(rows) + 3 * AlignUp(cols)) +
                                  sizeof(float) * (2 * AlignUp(rows) + 2 * AlignUp(cols));
  auto* lhs_a = static_cast<double*>(context.state().RequantizeScratch(terms_bytes));
  double* lhs_b = lhs_a + AlignUp(rows);
  double* rhs_a = lhs_b + AlignUp(rows);
  double* rhs_b = rhs_a + AlignUp(cols);
  double* rhs_a_base = rhs_b + AlignUp(cols);
  auto* lhs_a_float = reinterpret_cast<float*>(rhs_a_base + AlignUp(cols));
  float* lhs_b_float = lhs_a_float + AlignUp(rows);
  float* rhs_a_float = lhs_b_float + AlignUp(rows);
  float* rhs_b_float = rhs_a_float + AlignUp(cols);
  ElementType rhs_source_type = rhs.type;
  if (prepacked_rhs != nullptr) rhs_source_type = prepacked_rhs->view().type;

  // With a ~ 255 a' / PL and b ~ 255 b' / PR (PL = 2^L - 1, PR = 2^R - 1), the 8-bit result
  // sum_k (a + oa)(b + ob) times PL * PR is approximately
  //   sum_k (255 a' + oa PL)(255 b' + ob PR).
  // The GEMM below multiplies the centred values alpha = a' - ca, beta = b' - cb (ca = 2^(L-1),
  // cb = 2^(R-1)), so that its int32 sums T stay within the depth guard of the 8-bit GEMM
  // (|alpha| <= ca <= 128). With ga = 255 ca + oa PL and gb = 255 cb + ob PR, the sum is
  //   65025 T + ga (255 sum(beta) + K gb) + (255 gb) sum(alpha),
  // a rank-1 correction per term: lhs row r gives a = ga, b = sum(alpha); rhs column c gives
  // a = 255 sum(beta) + K gb, b = 255 gb. oa and ob are the offsets of the values as uint8
  // (int8 offsets minus 128). Under the 8-bit depth guard (K |oa| |ob| and K * 128 |oa| at most
  // about 2^31), every term is an integer below 2^52 in magnitude: exact as a double.
  const std::int64_t lhs_scale = (1 << params.lhs_bits) - 1;
  const std::int64_t rhs_scale = (1 << params.rhs_bits) - 1;
  const std::int64_t lhs_centre = 1 << (params.lhs_bits - 1);
  const std::int64_t rhs_centre = 1 << (params.rhs_bits - 1);
  const std::int64_t lhs_shift = lhs.type == ElementType::kInt8 ? 128 : 0;
  const std::int64_t rhs_shift = rhs_source_type == ElementType::kInt8 ? 128 : 0;
  // The lhs rows' b terms, sum(alpha), and the sum-dependent part of the rhs columns' a terms
  // come from the requantized lines' sums: the driver sets them (LineRequantization). The rest
  // only where the driver rescales through them (Rescale::fill_terms): a GEMM of bit depths
  // whose rescale folds into offset terms spent 3% of its time at 256^3 (7% at 64^3) on them.
  auto fill_terms = [&] {
    for (int r = 0; r < rows; ++r) {
      lhs_a[r] = static_cast<double>(255 * lhs_centre + (lhs_offset(r) - lhs_shift) * lhs_scale);
      lhs_a_float[r] = static_cast<float>(lhs_a[r]);
    }
    for (int c = 0; c < cols; ++c) {
      const std::int64_t gb = 255 * rhs_centre + (rhs_offset(c) - rhs_shift) * rhs_scale;
      rhs_a_base[c] = static_cast<double>(depth * gb);
      rhs_b[c] = static_cast<double>(255 * gb);
      rhs_b_float[c] = static_cast<float>(rhs_b[c]);
    }
    if (prepacked_rhs == nullptr) return;
    // Requantized and packed once, with its requantized columns' sums.
    const std::int32_t* col_sums = prepacked_rhs->requantized_col_sums();
    for (int c = 0; c < cols; ++c) {
      rhs_a[c] = 255.0 * static_cast<double>(col_sums[c] - depth * rhs_centre) + rhs_a_base[c];
      rhs_a_float[c] = static_cast<float>(rhs_a[c]);
    }
  };
  Rescale rescale{{lhs_a, lhs_b}, {rhs_a, rhs_b}, static_cast<int>(lhs_scale * rhs_scale)};
  rescale.fill_terms = [](void* closure) { (*static_cast<decltype(fill_terms)*>(closure))(); };
  rescale.fill_closure = &fill_terms;
  rescale.lhs.a_float = lhs_a_float;
  rescale.lhs.b_float = lhs_b_float;
  rescale.rhs.a_float = rhs_a_float;
  rescale.rhs.b_float = rhs_b_float;
  // With PL and PR dividing 255, 255 a' / PL = f a' (f = 255 / PL) is an integer and the sum above
  // over PL * PR is sum_k (f alpha + f ca + oa)(g beta + g cb + ob): the terms fold into offsets.
  if (255 % lhs_scale == 0 && 255 % rhs_scale == 0 && !lhs_offset.is_per_channel() &&
      !rhs_offset.is_per_channel()) {
    const std::int64_t f = 255 / lhs_scale, g = 255 / rhs_scale;
    rescale.lhs.exact_factor = static_cast<std::int32_t>(f);
    rescale.lhs.exact_offset =
        static_cast<std::int32_t>(f * lhs_centre + lhs_offset(0) - lhs_shift);
    rescale.rhs.exact_factor = static_cast<std::int32_t>(g);
    rescale.rhs.exact_offset =
        static_cast<std::int32_t>(g * rhs_centre + rhs_offset(0) - rhs_shift);
  }
  const LineRequantization lhs_requantization{
      lhs, params.lhs_bits, rounding, params.seed, Operand::kLhs, static_cast<int>(lhs_centre),
      1.0, nullptr,         lhs_b,    lhs_b_float};
  const LineRequantization rhs_requantization{Transposed(rhs), params.rhs_bits,
                                              rounding,        params.seed,
                                              Operand::kRhs,   static_cast<int>(rhs_centre),
                                              255.0,           rhs_a_base,
                                              rhs_a,           rhs_a_float};
  NarrowOperands narrow{params.lhs_bits, params.rhs_bits, &rescale, &lhs_requantization, nullptr};
  // The GEMM's views of the operands have the requantized values' type; the driver reads the
  // operands through their requantizations.
  const auto as_requantized = [](MatrixView view) {
    view.type = ElementType::kUint8;
    return view;
  };
  const MatrixView requantized_lhs_view = as_requantized(lhs);
  MatrixView requantized_rhs_view = gemm_rhs;
  if (prepacked_rhs == nullptr) {
    narrow.rhs_requantization = &rhs_requantization;
    requantized_rhs_view = as_requantized(rhs);
  }
  RunGemm(context, requantized_lhs_view, requantized_rhs_view, packed_rhs,
          static_cast<std::int32_t>(-lhs_centre), static_cast<std::int32_t>(-rhs_centre), target,
          &narrow);
}

}  // namespace internal
}  // namespace lowbit
