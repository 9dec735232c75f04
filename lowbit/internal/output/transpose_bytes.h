// A 16 x 16 transpose of bytes in 128-bit registers (SSE2 or NEON), for the writers' 8-bit
// results across the accumulators (lowbit/internal/output/output_writer.h, WriteAcross).
#ifndef LOWBIT_INTERNAL_OUTPUT_TRANSPOSE_BYTES_H_
#define LOWBIT_INTERNAL_OUTPUT_TRANSPOSE_BYTES_H_

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace lowbit {
namespace internal {

// Row i's byte j to row j's byte i: four rounds of interleaving the bytes of rows i and i + 8 into
// rows 2i and 2i + 1, each a perfect shuffle of the four bits of the row index.
template <typename Bytes, typename Interleave>
inline void TransposeByteRows(Bytes (&rows)[16], Interleave interleave_low,
                              Interleave interleave_high) {
  for (int round = 0; round < 4; ++round) {
    Bytes next[16];
    for (int i = 0; i < 8; ++i) {
      next[2 * i] = interleave_low(rows[i], rows[i + 8]);
      next[2 * i + 1] = interleave_high(rows[i], rows[i + 8]);
    }
    for (int i = 0; i < 16; ++i) rows[i] = next[i];
  }
}

// kRows (8 or 16) rows of 16 bytes at `in` (in_stride apart) to the 16 rows of kRows bytes of
// their transpose at `out` (out_stride apart): the 16 x 16 transpose with the rows from kRows on
// zero, of which each row's first kRows bytes are stored. (With AVX-512, four squares side by side
// in zmm registers, stored by 128-bit extracts 16 result lines apart, made 1024^3 with prepacked
// weights 4% slower: the extracts take the shuffle port, and 64 lines of a column-major result
// 1 KiB apart fall into 4 sets of L1.)
template <int kRows>
inline void TransposeBytes16(const std::uint8_t* in, std::ptrdiff_t in_stride, char* out,
                             std::ptrdiff_t out_stride) {
  static_assert(kRows == 8 || kRows == 16, "whole or half squares");
#if defined(__SSE2__)
  using Bytes = __m128i;
  Bytes rows[16];
  for (int i = 0; i < 16; ++i) {
    rows[i] = i < kRows ? _mm_loadu_si128(reinterpret_cast<const Bytes*>(in + i * in_stride))
                        : _mm_setzero_si128();
  }
  TransposeByteRows(
      rows, +[](Bytes a, Bytes b) { return _mm_unpacklo_epi8(a, b); },
      +[](Bytes a, Bytes b) { return _mm_unpackhi_epi8(a, b); });
  for (int i = 0; i < 16; ++i) {
    auto* const row = reinterpret_cast<Bytes*>(out + i * out_stride);
    if constexpr (kRows == 16) {
      _mm_storeu_si128(row, rows[i]);
    } else {
      _mm_storel_epi64(row, rows[i]);
    }
  }
#elif defined(__ARM_NEON)
  using Bytes = uint8x16_t;
  Bytes rows[16];
  for (int i = 0; i < 16; ++i) rows[i] = i < kRows ? vld1q_u8(in + i * in_stride) : vdupq_n_u8(0);
  TransposeByteRows(
      rows, +[](Bytes a, Bytes b) { return vzip1q_u8(a, b); },
      +[](Bytes a, Bytes b) { return vzip2q_u8(a, b); });
  for (int i = 0; i < 16; ++i) {
    auto* const row = reinterpret_cast<std::uint8_t*>(out + i * out_stride);
    if constexpr (kRows == 16) {
      vst1q_u8(row, rows[i]);
    } else {
      vst1_u8(row, vget_low_u8(rows[i]));
    }
  }
#else
#error "the writers' byte transpose needs SSE2 or NEON"
#endif
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_TRANSPOSE_BYTES_H_
