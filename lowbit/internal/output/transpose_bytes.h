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

// 16 rows of 16 bytes at `in` (in_stride apart) to the 16 rows of their transpose at `out`
// (out_stride apart). (With AVX-512, four squares side by side in zmm registers, stored by
// 128-bit extracts 16 result lines apart, made 1024^3 with prepacked weights 4% slower: the
// extracts take the shuffle port, and 64 lines of a column-major result 1 KiB apart fall into 4
// sets of L1.)
inline void TransposeBytes16x16(const std::uint8_t* in, std::ptrdiff_t in_stride, char* out,
                                std::ptrdiff_t out_stride) {
#if defined(__SSE2__)
  using Bytes = __m128i;
  Bytes rows[16];
  for (int i = 0; i < 16; ++i) {
    rows[i] = _mm_loadu_si128(reinterpret_cast<const Bytes*>(in + i * in_stride));
  }
  TransposeByteRows(
      rows, +[](Bytes a, Bytes b) { return _mm_unpacklo_epi8(a, b); },
      +[](Bytes a, Bytes b) { return _mm_unpackhi_epi8(a, b); });
  for (int i = 0; i < 16; ++i)
    _mm_storeu_si128(reinterpret_cast<Bytes*>(out + i * out_stride), rows[i]);
#elif defined(__ARM_NEON)
  using Bytes = uint8x16_t;
  Bytes rows[16];
  for (int i = 0; i < 16; ++i) rows[i] = vld1q_u8(in + i * in_stride);
  TransposeByteRows(
      rows, +[](Bytes a, Bytes b) { return vzip1q_u8(a, b); },
      +[](Bytes a, Bytes b) { return vzip2q_u8(a, b); });
  for (int i = 0; i < 16; ++i)
    vst1q_u8(reinterpret_cast<std::uint8_t*>(out + i * out_stride), rows[i]);
#else
#error "the writers' byte transpose needs SSE2 or NEON"
#endif
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_TRANSPOSE_BYTES_H_
