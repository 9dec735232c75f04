// The NEON output writer: the common writer (lowbit/internal/output/output_writer.h) four lanes at
// a time, on the NEON fixedpoint back end. aarch64 only; NEON is part of its baseline, so no flag.
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "lowbit/fixedpoint/fixedpoint_neon.h"
#include "lowbit/internal/output/output.h"
#include "lowbit/internal/output/output_writer.h"

namespace lowbit {
namespace internal {
namespace {

struct Neon {
  using Raw = int32x4_t;
  static constexpr int kLanes = 4;

  static Raw Load(const std::int32_t* values) { return vld1q_s32(values); }
  static Raw LoadBytes(const void* bytes, bool is_signed) {
    std::uint32_t four;
    std::memcpy(&four, bytes, sizeof(four));
    const uint8x8_t packed = vreinterpret_u8_u32(vdup_n_u32(four));
    if (is_signed) return vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u8(packed))));
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(packed))));
  }
  static Raw Min(Raw a, Raw b) { return vminq_s32(a, b); }
  static Raw Max(Raw a, Raw b) { return vmaxq_s32(a, b); }

  static void Transpose(Raw (&rows)[kLanes]) {
    const int32x4x2_t rows01 = vtrnq_s32(rows[0], rows[1]);
    const int32x4x2_t rows23 = vtrnq_s32(rows[2], rows[3]);
    rows[0] = vcombine_s32(vget_low_s32(rows01.val[0]), vget_low_s32(rows23.val[0]));
    rows[1] = vcombine_s32(vget_low_s32(rows01.val[1]), vget_low_s32(rows23.val[1]));
    rows[2] = vcombine_s32(vget_high_s32(rows01.val[0]), vget_high_s32(rows23.val[0]));
    rows[3] = vcombine_s32(vget_high_s32(rows01.val[1]), vget_high_s32(rows23.val[1]));
  }

  static Raw RescaleLanes(Raw sums, double line_a, double line_b, const double* along_a,
                          const double* along_b, double reciprocal) {
    const auto two = [&](int32x2_t two_sums, int first) {
      const float64x2_t n =
          vaddq_f64(vaddq_f64(vmulq_n_f64(vcvtq_f64_s64(vmovl_s32(two_sums)), 65025.0),
                              vmulq_n_f64(vld1q_f64(along_a + first), line_a)),
                    vmulq_n_f64(vld1q_f64(along_b + first), line_b));
      const float64x2_t quotient = vmulq_n_f64(n, reciprocal);
      // Rounded to int64 (exact: |quotient| < 2^52), then narrowed with saturation.
      return vqmovn_s64(vcvtnq_s64_f64(quotient));
    };
    return vcombine_s32(two(vget_low_s32(sums), 0), two(vget_high_s32(sums), 2));
  }

  template <ElementType kType>
  static void StoreSaturated(Raw a, Raw b, void* out) {
    const int16x8_t halves = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
    if (kType == ElementType::kInt16) {
      vst1q_s16(static_cast<std::int16_t*>(out), halves);
    } else if (kType == ElementType::kInt8) {
      vst1_s8(static_cast<std::int8_t*>(out), vqmovn_s16(halves));
    } else {
      vst1_u8(static_cast<std::uint8_t*>(out), vqmovun_s16(halves));
    }
  }

  static void Store(Raw v, int size, void* out) {
    if (size == 4) {
      vst1q_s32(static_cast<std::int32_t*>(out), v);
      return;
    }
    const int16x4_t halves = vmovn_s32(v);
    if (size == 2) {
      vst1_s16(static_cast<std::int16_t*>(out), halves);
    } else {
      const int8x8_t bytes = vmovn_s16(vcombine_s16(halves, halves));
      const std::int32_t four_bytes = vget_lane_s32(vreinterpret_s32_s8(bytes), 0);
      std::memcpy(out, &four_bytes, sizeof(four_bytes));
    }
  }
};

}  // namespace

void WriteOutputNeon(const OutputProgram& program, const AccumulatorBlock& block,
                     const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result) {
  output_writer::WriteOutput<Neon>(program, block, terms, rescale, result);
}

}  // namespace internal
}  // namespace lowbit
