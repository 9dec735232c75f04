// The SSE4.1 output writer: the common writer (lowbit/internal/output/output_writer.h) four lanes
// at a time, on the SSE4.1 fixedpoint back end. Compiled with -msse4.1 only.
#include <smmintrin.h>

#include <cstdint>
#include <cstring>

#include "lowbit/fixedpoint/fixedpoint_sse41.h"
#include "lowbit/internal/output/output.h"
#include "lowbit/internal/output/output_writer.h"

namespace lowbit {
namespace internal {
namespace {

struct Sse41 {
  using Raw = fixedpoint::Sse41Int32x4;
  static constexpr int kLanes = 4;

  static Raw Load(const std::int32_t* values) {
    return {_mm_loadu_si128(reinterpret_cast<const __m128i*>(values))};
  }
  static Raw LoadBytes(const void* bytes, bool is_signed) {
    std::int32_t four;
    std::memcpy(&four, bytes, sizeof(four));
    const __m128i packed = _mm_cvtsi32_si128(four);
    return {is_signed ? _mm_cvtepi8_epi32(packed) : _mm_cvtepu8_epi32(packed)};
  }
  static Raw Min(Raw a, Raw b) { return {_mm_min_epi32(a.v, b.v)}; }
  static Raw Max(Raw a, Raw b) { return {_mm_max_epi32(a.v, b.v)}; }

  static void Transpose(Raw (&rows)[kLanes]) {
    const __m128i low01 = _mm_unpacklo_epi32(rows[0].v, rows[1].v);
    const __m128i low23 = _mm_unpacklo_epi32(rows[2].v, rows[3].v);
    const __m128i high01 = _mm_unpackhi_epi32(rows[0].v, rows[1].v);
    const __m128i high23 = _mm_unpackhi_epi32(rows[2].v, rows[3].v);
    rows[0].v = _mm_unpacklo_epi64(low01, low23);
    rows[1].v = _mm_unpackhi_epi64(low01, low23);
    rows[2].v = _mm_unpacklo_epi64(high01, high23);
    rows[3].v = _mm_unpackhi_epi64(high01, high23);
  }

  static Raw RescaleLanes(Raw sums, double line_a, double line_b, const double* along_a,
                          const double* along_b, double reciprocal) {
    // The two low lanes of two_sums, entries first and first + 1, in the two low lanes.
    const auto two = [&](__m128i two_sums, int first) {
      const __m128d n =
          _mm_add_pd(_mm_add_pd(_mm_mul_pd(_mm_set1_pd(65025.0), _mm_cvtepi32_pd(two_sums)),
                                _mm_mul_pd(_mm_set1_pd(line_a), _mm_loadu_pd(along_a + first))),
                     _mm_mul_pd(_mm_set1_pd(line_b), _mm_loadu_pd(along_b + first)));
      const __m128d quotient = _mm_mul_pd(n, _mm_set1_pd(reciprocal));
      // cvtpd2dq turns any quotient below INT32_MIN - 0.5 into INT32_MIN, the saturated value:
      // only the upper bound needs a clamp.
      return _mm_cvtpd_epi32(_mm_min_pd(quotient, _mm_set1_pd(2147483647.0)));
    };
    return {_mm_unpacklo_epi64(two(sums.v, 0), two(_mm_unpackhi_epi64(sums.v, sums.v), 2))};
  }

  template <ElementType kType>
  static void StoreSaturated(Raw a, Raw b, void* out) {
    const __m128i halves = _mm_packs_epi32(a.v, b.v);
    if (kType == ElementType::kInt16) {
      _mm_storeu_si128(static_cast<__m128i*>(out), halves);
      return;
    }
    const __m128i bytes = kType == ElementType::kInt8 ? _mm_packs_epi16(halves, halves)
                                                      : _mm_packus_epi16(halves, halves);
    _mm_storel_epi64(static_cast<__m128i*>(out), bytes);
  }

  static void Store(Raw v, int size, void* out) {
    if (size == 4) {
      _mm_storeu_si128(static_cast<__m128i*>(out), v.v);
      return;
    }
    const __m128i low_bytes =
        size == 2 ? _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1)
                  : _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i packed = _mm_shuffle_epi8(v.v, low_bytes);
    if (size == 2) {
      _mm_storel_epi64(static_cast<__m128i*>(out), packed);
    } else {
      const std::int32_t bytes = _mm_cvtsi128_si32(packed);
      std::memcpy(out, &bytes, sizeof(bytes));
    }
  }
};

}  // namespace

void WriteOutputSse41(const OutputProgram& program, const AccumulatorBlock& block,
                      const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result) {
  output_writer::WriteOutput<Sse41>(program, block, terms, rescale, result);
}

}  // namespace internal
}  // namespace lowbit
