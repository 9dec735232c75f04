// The AVX2 output writer: the common writer (lowbit/internal/output/output_writer.h) eight lanes at
// a time, on the AVX2 fixedpoint back end. Compiled with -mavx2 only.
#include <immintrin.h>

#include <cstdint>

#include "lowbit/fixedpoint/fixedpoint_avx2.h"
#include "lowbit/internal/output/output.h"
#include "lowbit/internal/output/output_writer.h"

namespace lowbit {
namespace internal {
namespace {

struct Avx2 {
  using Raw = fixedpoint::Avx2Int32x8;
  static constexpr int kLanes = 8;

  static Raw Load(const std::int32_t* values) {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(values))};
  }
  static Raw LoadBytes(const void* bytes, bool is_signed) {
    const __m128i packed = _mm_loadl_epi64(static_cast<const __m128i*>(bytes));
    return {is_signed ? _mm256_cvtepi8_epi32(packed) : _mm256_cvtepu8_epi32(packed)};
  }
  static Raw Min(Raw a, Raw b) { return {_mm256_min_epi32(a.v, b.v)}; }
  static Raw Max(Raw a, Raw b) { return {_mm256_max_epi32(a.v, b.v)}; }

  // The result of a float form's value t (ByteScaleConstants, RescaledByteScaleConstants) for
  // vector j of a batch, v: floor(t), or exact(v, j) where a lane's t is in the window (u = t +
  // magic with none of the window's bits). The batches' vectors go through the forms one after
  // another, each tested on its own: a test for the batch (the compares ORed, one vptest), with
  // both vectors' values computed first, ran the AVX2 L7R5 GEMM 5% slower at 256^3.
  template <typename Exact>
  __attribute__((always_inline)) static Raw FloorOutsideWindow(__m256 t, __m256 magic,
                                                               __m256i window, Raw v, int j,
                                                               const Exact& exact) {
    const __m256i u = _mm256_castps_si256(_mm256_add_ps(t, magic));
    const __m256i in_window =
        _mm256_cmpeq_epi32(_mm256_and_si256(u, window), _mm256_setzero_si256());
    if (__builtin_expect(!_mm256_testz_si256(in_window, in_window), 0)) return exact(v, j);
    return {_mm256_cvttps_epi32(_mm256_floor_ps(t))};
  }

  // ByteScaleConstants' scale (output_line.h) on 8 lanes. AVX2 rounds as MXCSR says: usable only
  // while it says to nearest, as it does unless the caller changed it (the writer runs on the
  // thread it checks this on).
  class ByteScale {
   public:
    ByteScale(std::int32_t multiplier, int right_shift, std::int32_t offset)
        : ByteScale(output_writer::ByteScaleConstants(multiplier, right_shift, offset)) {}
    explicit ByteScale(const output_writer::ByteScaleConstants& constants)
        : usable_(constants.usable && (_mm_getcsr() & _MM_ROUND_MASK) == _MM_ROUND_NEAREST),
          multiplier_(_mm256_set1_ps(constants.multiplier)),
          addend_(_mm256_set1_ps(constants.addend)),
          magic_(_mm256_set1_ps(constants.magic)),
          window_(_mm256_set1_epi32(constants.window)) {}
    bool usable() const { return usable_; }

    Raw operator()(Raw x, const fixedpoint::QuantizeDownScale<Raw>& exact) const {
      const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(x.v), multiplier_, addend_);
      return FloorOutsideWindow(t, magic_, window_, x, 0, [&](Raw v, int) { return exact(v); });
    }
    // The scale of a batch of vectors, one after another.
    template <int kBatch>
    __attribute__((always_inline)) void operator()(
        Raw (&v)[kBatch], const fixedpoint::QuantizeDownScale<Raw>& exact) const {
      for (int j = 0; j < kBatch; ++j) v[j] = (*this)(v[j], exact);
    }

   private:
    bool usable_;
    __m256 multiplier_;
    __m256 addend_;
    __m256 magic_;
    __m256i window_;
  };

  // RescaledByteScaleConstants' rescale and scale (output_line.h) on 8 lanes, built only where a
  // usable ByteScale says MXCSR rounds to nearest.
  class RescaledByteScale {
   public:
    explicit RescaledByteScale(const output_writer::RescaledByteScaleConstants& constants)
        : sum_factor_(_mm256_set1_ps(constants.sum_factor)),
          magic_(_mm256_set1_ps(constants.magic)),
          window_(_mm256_set1_epi32(constants.window)) {}

    // As the AVX-512 writer's.
    void ForLine(float line_a, float line_b, float addend) {
      line_a_ = _mm256_set1_ps(line_a);
      line_b_ = _mm256_set1_ps(line_b);
      addend_ = _mm256_set1_ps(addend);
    }

    // As the AVX-512 writer's, on vectors of 8 lanes, one after another.
    template <int kBatch, typename Exact>
    __attribute__((always_inline)) void operator()(Raw (&sums)[kBatch], const float* along_a,
                                                   const float* along_b, const Exact& exact) const {
      for (int j = 0; j < kBatch; ++j) {
        const __m256 terms = _mm256_fmadd_ps(
            line_a_, _mm256_loadu_ps(along_a + j * kLanes),
            _mm256_fmadd_ps(line_b_, _mm256_loadu_ps(along_b + j * kLanes), addend_));
        sums[j] = Scaled(sums[j], terms, j, exact);
      }
    }
    template <int kBatch, typename Exact>
    __attribute__((always_inline)) void operator()(Raw (&sums)[kBatch], const float* along,
                                                   const Exact& exact) const {
      for (int j = 0; j < kBatch; ++j) {
        const __m256 terms = _mm256_fmadd_ps(line_a_, _mm256_loadu_ps(along + j * kLanes), addend_);
        sums[j] = Scaled(sums[j], terms, j, exact);
      }
    }

   private:
    template <typename Exact>
    __attribute__((always_inline)) Raw Scaled(Raw sums, __m256 terms, int j,
                                              const Exact& exact) const {
      const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums.v), sum_factor_, terms);
      return FloorOutsideWindow(t, magic_, window_, sums, j, exact);
    }

    __m256 sum_factor_;
    __m256 magic_;
    __m256i window_;
    __m256 line_a_ = _mm256_setzero_ps();
    __m256 line_b_ = _mm256_setzero_ps();
    __m256 addend_ = _mm256_setzero_ps();
  };

  static void Transpose(Raw (&rows)[kLanes]) {
    __m256i pairs[8];  // pairs of rows interleaved, per 128-bit half
    for (int i = 0; i < 8; i += 2) {
      pairs[i] = _mm256_unpacklo_epi32(rows[i].v, rows[i + 1].v);
      pairs[i + 1] = _mm256_unpackhi_epi32(rows[i].v, rows[i + 1].v);
    }
    __m256i quads[8];  // quads[4 * h + c]: column c (and c + 4) of rows 4h .. 4h + 3
    for (int h = 0; h < 2; ++h) {
      quads[4 * h] = _mm256_unpacklo_epi64(pairs[4 * h], pairs[4 * h + 2]);
      quads[4 * h + 1] = _mm256_unpackhi_epi64(pairs[4 * h], pairs[4 * h + 2]);
      quads[4 * h + 2] = _mm256_unpacklo_epi64(pairs[4 * h + 1], pairs[4 * h + 3]);
      quads[4 * h + 3] = _mm256_unpackhi_epi64(pairs[4 * h + 1], pairs[4 * h + 3]);
    }
    for (int c = 0; c < 4; ++c) {
      rows[c].v = _mm256_permute2x128_si256(quads[c], quads[4 + c], 0x20);
      rows[c + 4].v = _mm256_permute2x128_si256(quads[c], quads[4 + c], 0x31);
    }
  }

  // Every product and sum is an exact integer in double (lowbit/internal/output/unpack.cc,
  // RescaleBlock), so fused multiply-adds give the same bits as separate products and sums, in
  // fewer instructions. vcvtpd2dq turns any quotient below INT32_MIN - 0.5 into INT32_MIN, the
  // saturated value: only the upper bound needs a clamp. (The AVX2 path is only chosen with FMA3 as
  // well.)
  static Raw RescaleLanes(Raw sums, double line_a, double line_b, const double* along_a,
                          const double* along_b, double reciprocal) {
    const auto four = [&](__m128i four_sums, int first) {
      const __m256d n = _mm256_fmadd_pd(
          _mm256_set1_pd(65025.0), _mm256_cvtepi32_pd(four_sums),
          _mm256_fmadd_pd(_mm256_set1_pd(line_a), _mm256_loadu_pd(along_a + first),
                          _mm256_mul_pd(_mm256_set1_pd(line_b), _mm256_loadu_pd(along_b + first))));
      const __m256d quotient = _mm256_mul_pd(n, _mm256_set1_pd(reciprocal));
      return _mm256_cvtpd_epi32(_mm256_min_pd(quotient, _mm256_set1_pd(2147483647.0)));
    };
    return {_mm256_setr_m128i(four(_mm256_castsi256_si128(sums.v), 0),
                              four(_mm256_extracti128_si256(sums.v, 1), 4))};
  }

  template <ElementType kType>
  static void StoreSaturated(Raw a, Raw b, void* out) {
    // Per 128-bit half: a's four lanes, then b's.
    const __m256i halves = _mm256_packs_epi32(a.v, b.v);
    if (kType == ElementType::kInt16) {
      _mm256_storeu_si256(static_cast<__m256i*>(out), _mm256_permute4x64_epi64(halves, 0xd8));
      return;
    }
    // The same as bytes, twice over.
    const __m256i bytes = kType == ElementType::kInt8 ? _mm256_packs_epi16(halves, halves)
                                                      : _mm256_packus_epi16(halves, halves);
    const __m256i in_order =
        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    _mm_storeu_si128(static_cast<__m128i*>(out), _mm256_castsi256_si128(in_order));
  }

  static void Store(Raw v, int size, void* out) {
    if (size == 4) {
      _mm256_storeu_si256(static_cast<__m256i*>(out), v.v);
      return;
    }
    const __m256i low_bytes =
        size == 2 ? _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1,
                                     4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1)
                  : _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                     4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i packed = _mm256_shuffle_epi8(v.v, low_bytes);
    // Each 128-bit half holds its four lanes in its low dword (bytes) or two dwords (int16).
    const __m256i gather = size == 2 ? _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5)
                                     : _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
    const __m128i joined = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(packed, gather));
    if (size == 2) {
      _mm_storeu_si128(static_cast<__m128i*>(out), joined);
    } else {
      _mm_storel_epi64(static_cast<__m128i*>(out), joined);
    }
  }
};

}  // namespace

void WriteOutputAvx2(const OutputProgram& program, const AccumulatorBlock& block,
                     const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result) {
  output_writer::WriteOutput<Avx2>(program, block, terms, rescale, result);
}

}  // namespace internal
}  // namespace lowbit
