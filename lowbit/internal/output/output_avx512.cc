// The AVX-512 output writer: the common writer (lowbit/internal/output/output_writer.h) sixteen
// lanes at a time, on the AVX-512 fixedpoint back end, for the AVX-512 VNNI kernel. Compiled with
// -mavx512f -mavx512bw (and the AVX2 flags, which every CPU with AVX-512 has).
#include <cstdint>

#include "lowbit/fixedpoint/fixedpoint_avx512.h"  // and <immintrin.h>, without GCC 12's false warnings
#include "lowbit/internal/output/byte_scale_avx512.h"
#include "lowbit/internal/output/output.h"
#include "lowbit/internal/output/output_writer.h"
#include "lowbit/internal/pack/transpose_avx512.h"

namespace lowbit {
namespace internal {
namespace {

struct Avx512 {
  using Raw = fixedpoint::Avx512Int32x16;
  static constexpr int kLanes = 16;

  static Raw Load(const std::int32_t* values) { return {_mm512_loadu_si512(values)}; }
  static Raw LoadBytes(const void* bytes, bool is_signed) {
    const __m128i packed = _mm_loadu_si128(static_cast<const __m128i*>(bytes));
    return {is_signed ? _mm512_cvtepi8_epi32(packed) : _mm512_cvtepu8_epi32(packed)};
  }
  static Raw Min(Raw a, Raw b) { return {_mm512_min_epi32(a.v, b.v)}; }
  static Raw Max(Raw a, Raw b) { return {_mm512_max_epi32(a.v, b.v)}; }

  static void Transpose(Raw (&rows)[kLanes]) {
    __m512i vectors[kLanes];
    for (int i = 0; i < kLanes; ++i) vectors[i] = rows[i].v;
    TransposeInt32x16x16(vectors);
    for (int i = 0; i < kLanes; ++i) rows[i].v = vectors[i];
  }

  static Raw RescaleLanes(Raw sums, double line_a, double line_b, const double* along_a,
                          const double* along_b, double reciprocal) {
    return {byte_scale_avx512::RescaledSums(sums.v, line_a, line_b, along_a, along_b, reciprocal,
                                            0xFFFF)};
  }

  // The results of the float forms' values t[j] (ByteScaleConstants, RescaledByteScaleConstants)
  // into v: floor(t[j]), or exact(v[j], j) for every vector of a pair where a lane of either has
  // t in the window (u = t + magic with none of the window's bits). A pair's two tests are taken
  // together: the second vector's test is masked by the first one's lanes outside the window, and
  // one test of the mask of all lanes ends them, where a test of each vector's mask took one more
  // instruction on the port the test shares (the 8-bit AMX GEMM at 256^3 ran 3 to 5% faster). A
  // batch of four vectors (kByteBatch) takes two such tests: one test of all four sent twice the
  // vectors to the exact arithmetic on data near the window, and declared 2 x 2 bits at 256^3 ran
  // at 0.80 to 0.81 of the 8-bit GEMM's speed against 0.84 to 0.87 for the build before (two runs
  // of each alternated); a test per pair is level with it.
  template <int kBatch, typename Exact>
  __attribute__((always_inline)) static void FloorOutsideWindow(const __m512 (&t)[kBatch],
                                                                __m512 magic, __m512i window,
                                                                Raw (&v)[kBatch],
                                                                const Exact& exact) {
    constexpr int kPair = kBatch < 2 ? kBatch : 2;
    static_assert(kBatch % kPair == 0, "the window is tested a pair of vectors at a time");
    for (int pair = 0; pair < kBatch; pair += kPair) {
      __mmask16 outside = 0xFFFF;
      for (int j = pair; j < pair + kPair; ++j) {
        outside = byte_scale_avx512::OutsideWindow(outside, t[j], magic, window);
      }
      if (__builtin_expect(!_kortestc_mask16_u8(outside, outside), 0)) {
        for (int j = pair; j < pair + kPair; ++j) v[j] = exact(v[j], j);
        continue;
      }
      for (int j = pair; j < pair + kPair; ++j) v[j] = {byte_scale_avx512::Floor(t[j])};
    }
  }

  // ByteScaleConstants' scale (output_line.h) on 16 lanes, each operation with its own rounding
  // to nearest, whatever the caller set in MXCSR.
  class ByteScale {
   public:
    ByteScale(std::int32_t multiplier, int right_shift, std::int32_t offset)
        : ByteScale(output_writer::ByteScaleConstants(multiplier, right_shift, offset)) {}
    explicit ByteScale(const output_writer::ByteScaleConstants& constants)
        : usable_(constants.usable),
          multiplier_(_mm512_set1_ps(constants.multiplier)),
          addend_(_mm512_set1_ps(constants.addend)),
          magic_(_mm512_set1_ps(constants.magic)),
          window_(_mm512_set1_epi32(constants.window)) {}
    bool usable() const { return usable_; }

    // The scale of a batch of vectors, `exact` for all where a lane of any is in the window.
    template <int kBatch>
    __attribute__((always_inline)) void operator()(
        Raw (&v)[kBatch], const fixedpoint::QuantizeDownScale<Raw>& exact) const {
      __m512 t[kBatch];
      for (int j = 0; j < kBatch; ++j)
        t[j] = byte_scale_avx512::Value(v[j].v, multiplier_, addend_);
      FloorOutsideWindow(t, magic_, window_, v, [&](Raw x, int) { return exact(x); });
    }
    Raw operator()(Raw x, const fixedpoint::QuantizeDownScale<Raw>& exact) const {
      Raw v[1] = {x};
      (*this)(v, exact);
      return v[0];
    }

   private:
    bool usable_;
    __m512 multiplier_;
    __m512 addend_;
    __m512 magic_;
    __m512i window_;
  };

  // RescaledByteScaleConstants' rescale and scale (output_line.h) on 16 lanes, each operation
  // with its own rounding to nearest.
  class RescaledByteScale {
   public:
    explicit RescaledByteScale(const output_writer::RescaledByteScaleConstants& constants)
        : sum_factor_(_mm512_set1_ps(constants.sum_factor)),
          magic_(_mm512_set1_ps(constants.magic)),
          window_(_mm512_set1_epi32(constants.window)) {}

    // A line's factors of its along terms and its addend (RescaledByteScaleConstants: the line's
    // terms times term_factor, and c, with any term that is the same all along the line in it).
    void ForLine(float line_a, float line_b, float addend) {
      line_a_ = _mm512_set1_ps(line_a);
      line_b_ = _mm512_set1_ps(line_b);
      addend_ = _mm512_set1_ps(addend);
    }

    // The results of a batch of vectors of sums in place, vector j's along terms the 16 floats
    // from along_a and along_b + 16 j; exact(sums[j], j) for all where a lane of any is in the
    // window.
    template <int kBatch, typename Exact>
    __attribute__((always_inline)) void operator()(Raw (&sums)[kBatch], const float* along_a,
                                                   const float* along_b, const Exact& exact) const {
      __m512 terms[kBatch];
      for (int j = 0; j < kBatch; ++j) {
        terms[j] =
            byte_scale_avx512::RescaleTerms(line_a_, _mm512_loadu_ps(along_a + j * kLanes), line_b_,
                                            _mm512_loadu_ps(along_b + j * kLanes), addend_);
      }
      Scaled(sums, terms, exact);
    }
    // The same where the line's one varying term is line_a's, along `along`.
    template <int kBatch, typename Exact>
    __attribute__((always_inline)) void operator()(Raw (&sums)[kBatch], const float* along,
                                                   const Exact& exact) const {
      __m512 terms[kBatch];
      for (int j = 0; j < kBatch; ++j) {
        terms[j] =
            byte_scale_avx512::RescaleTerms(line_a_, _mm512_loadu_ps(along + j * kLanes), addend_);
      }
      Scaled(sums, terms, exact);
    }

   private:
    template <int kBatch, typename Exact>
    __attribute__((always_inline)) void Scaled(Raw (&sums)[kBatch], const __m512 (&terms)[kBatch],
                                               const Exact& exact) const {
      __m512 t[kBatch];
      for (int j = 0; j < kBatch; ++j) {
        t[j] = byte_scale_avx512::Value(sums[j].v, sum_factor_, terms[j]);
      }
      FloorOutsideWindow(t, magic_, window_, sums, exact);
    }

    __m512 sum_factor_;
    __m512 magic_;
    __m512i window_;
    __m512 line_a_ = _mm512_setzero_ps();
    __m512 line_b_ = _mm512_setzero_ps();
    __m512 addend_ = _mm512_setzero_ps();
  };

  // The packs saturate as output_avx2.cc's do, per 128-bit lane: lane L ends up with a's lanes
  // 4L .. 4L + 3 and then b's, which one vpermd or vpermq puts in order. Two saturating narrowing
  // moves (vpmovusdb, 2 uops each) and stores instead made 64^3 and 1024^3 GEMMs 1 to 2% slower.
  template <ElementType kType>
  static void StoreSaturated(Raw a, Raw b, void* out) {
    const __m512i halves = _mm512_packs_epi32(a.v, b.v);
    if (kType == ElementType::kInt16) {
      _mm512_storeu_si512(
          out, _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), halves));
      return;
    }
    // The same as bytes, twice over in each lane: dword 0 a's four, dword 1 b's.
    const __m512i bytes = kType == ElementType::kInt8 ? _mm512_packs_epi16(halves, halves)
                                                      : _mm512_packus_epi16(halves, halves);
    const __m512i in_order = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 4, 8, 12, 1, 5, 9, 13), bytes);
    _mm256_storeu_si256(static_cast<__m256i*>(out), _mm512_castsi512_si256(in_order));
  }

  // Four vectors saturated to 64 bytes: lane L of the packs holds dwords a, b, c and d of their
  // lanes 4L .. 4L + 3, which one vpermd puts in order. 4 instructions where two pairs take 6,
  // and a whole cache line a store: the 8-bit AMX GEMM ran 3 to 4% faster at 256^3 than with two
  // vectors a batch (paired rounds against oneDNN, three runs of each build alternated).
  static constexpr int kByteBatch = 4;
  template <ElementType kType>
  static void StoreSaturatedBytes(const Raw (&v)[4], void* out) {
    _mm512_storeu_si512(out, byte_scale_avx512::SaturatedBytes(v[0].v, v[1].v, v[2].v, v[3].v,
                                                               kType == ElementType::kInt8));
  }

  // vpmovdw and vpmovdb keep each lane's low bytes.
  static void Store(Raw v, int size, void* out) {
    if (size == 4) {
      _mm512_storeu_si512(out, v.v);
    } else if (size == 2) {
      _mm256_storeu_si256(static_cast<__m256i*>(out), _mm512_cvtepi32_epi16(v.v));
    } else {
      _mm_storeu_si128(static_cast<__m128i*>(out), _mm512_cvtepi32_epi8(v.v));
    }
  }

  // Masked: nothing past the first `count` lanes is read or written.
  static Raw LoadFirst(const std::int32_t* values, int count) {
    return {_mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << count) - 1), values)};
  }
  static void StoreFirst(Raw v, int size, int count, void* out) {
    const auto lanes = static_cast<__mmask16>((1u << count) - 1);
    if (size == 4) {
      _mm512_mask_storeu_epi32(out, lanes, v.v);
    } else if (size == 2) {
      _mm512_mask_cvtepi32_storeu_epi16(out, lanes, v.v);
    } else {
      _mm512_mask_cvtepi32_storeu_epi8(out, lanes, v.v);
    }
  }
};

}  // namespace

void WriteOutputAvx512(const OutputProgram& program, const AccumulatorBlock& block,
                       const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result) {
  output_writer::WriteOutput<Avx512>(program, block, terms, rescale, result);
}

}  // namespace internal
}  // namespace lowbit
