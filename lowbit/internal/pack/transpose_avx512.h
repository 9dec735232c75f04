// A 16 x 16 transpose of int32 lanes in zmm registers, for the AVX-512 writer and packer. Include
// it only from a file compiled with -mavx512f.
#ifndef LOWBIT_INTERNAL_PACK_TRANSPOSE_AVX512_H_
#define LOWBIT_INTERNAL_PACK_TRANSPOSE_AVX512_H_

#include "lowbit/fixedpoint/fixedpoint_avx512.h"  // <immintrin.h>, without GCC 12's false warnings

namespace lowbit {
namespace internal {

// Within each 128-bit lane L, the 4 x 4 squares of every four rows (unpacks, as in
// output_avx2.cc); then row 4L + c of the result gathers lane L of column c's vector of each of
// the four squares (vshufi32x4 twice).
inline void TransposeInt32x16x16(__m512i (&rows)[16]) {
  __m512i pairs[16];
  for (int i = 0; i < 16; i += 2) {
    pairs[i] = _mm512_unpacklo_epi32(rows[i], rows[i + 1]);
    pairs[i + 1] = _mm512_unpackhi_epi32(rows[i], rows[i + 1]);
  }
  __m512i squares[4][4];  // squares[k][c]: column 4L + c of rows 4k .. 4k + 3, in lane L
  for (int k = 0; k < 4; ++k) {
    squares[k][0] = _mm512_unpacklo_epi64(pairs[4 * k], pairs[4 * k + 2]);
    squares[k][1] = _mm512_unpackhi_epi64(pairs[4 * k], pairs[4 * k + 2]);
    squares[k][2] = _mm512_unpacklo_epi64(pairs[4 * k + 1], pairs[4 * k + 3]);
    squares[k][3] = _mm512_unpackhi_epi64(pairs[4 * k + 1], pairs[4 * k + 3]);
  }
  constexpr int kEvenLanes = _MM_SHUFFLE(2, 0, 2, 0);
  constexpr int kOddLanes = _MM_SHUFFLE(3, 1, 3, 1);
  for (int c = 0; c < 4; ++c) {
    // Lanes 0, 2 | 0, 2 and 1, 3 | 1, 3 of squares 0 and 1, and of squares 2 and 3.
    const __m512i even01 = _mm512_shuffle_i32x4(squares[0][c], squares[1][c], kEvenLanes);
    const __m512i odd01 = _mm512_shuffle_i32x4(squares[0][c], squares[1][c], kOddLanes);
    const __m512i even23 = _mm512_shuffle_i32x4(squares[2][c], squares[3][c], kEvenLanes);
    const __m512i odd23 = _mm512_shuffle_i32x4(squares[2][c], squares[3][c], kOddLanes);
    rows[c] = _mm512_shuffle_i32x4(even01, even23, kEvenLanes);
    rows[4 + c] = _mm512_shuffle_i32x4(odd01, odd23, kEvenLanes);
    rows[8 + c] = _mm512_shuffle_i32x4(even01, even23, kOddLanes);
    rows[12 + c] = _mm512_shuffle_i32x4(odd01, odd23, kOddLanes);
  }
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_PACK_TRANSPOSE_AVX512_H_
