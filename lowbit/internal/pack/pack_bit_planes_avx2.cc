// The x86 bit-plane packer (kBitPlaneGroup's layout, compiled with -mavx2), for the bit-serial
// kernels: vpmovmskb gathers one bit of 32 bytes into a word.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lowbit/internal/pack/pack_bit_planes.h"
#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// 32 packed values, with the bytes of `source` from `count` on (count <= 32) taken as 0.
__m256i LoadValues(const std::uint8_t* source, int count, __m256i shift) {
  __m256i bytes;
  if (count == 32) {
    bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source));
  } else {
    alignas(32) std::uint8_t buffer[32] = {};
    std::memcpy(buffer, source, count);
    bytes = _mm256_load_si256(reinterpret_cast<const __m256i*>(buffer));
  }
  return _mm256_sub_epi8(bytes, shift);
}

// Bit `plane` of each of the 32 bytes: shifting the 16-bit lanes left by 7 - plane moves it to
// each byte's top bit (what a byte takes from its neighbour stays below it), which vpmovmskb reads.
std::uint32_t PlaneWord(__m256i values, int plane) {
  return static_cast<std::uint32_t>(
      _mm256_movemask_epi8(_mm256_sll_epi16(values, _mm_cvtsi32_si128(7 - plane))));
}

// One step of TransposeBits for words k (in `low`) and k + j (in `high`): bits i + j of word k
// and bits i of word k + j trade places, for the bits i that `mask` selects.
template <int kDistance>
void SwapBlocks(__m256i& low, __m256i& high, __m256i mask) {
  const __m256i swapped =
      _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi32(low, kDistance), high), mask);
  low = _mm256_xor_si256(low, _mm256_slli_epi32(swapped, kDistance));
  high = _mm256_xor_si256(high, swapped);
}

// The same step where words k and k + j share a vector: `Partner` brings each lane its pair's
// word, and kHighLanes (a vpblendd mask) marks the lanes of words k + j.
template <int kDistance, int kHighLanes, typename Partner>
__m256i SwapBlocksWithin(__m256i words, __m256i mask, Partner partner) {
  const __m256i swapped =
      _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi32(words, kDistance), partner(words)), mask);
  return _mm256_blend_epi32(_mm256_xor_si256(words, _mm256_slli_epi32(swapped, kDistance)),
                            _mm256_xor_si256(words, partner(swapped)), kHighLanes);
}

// Transposes the 32 x 32 bit matrix `words` (bit i of word k is entry (k, i)) in place, by
// swapping off-diagonal blocks of 16, 8, 4, 2 and 1 bits: words 8 to a vector, the blocks of 16
// and 8 between vectors, those of 4, 2 and 1 between lanes of one.
void TransposeBits(std::uint32_t (&words)[32]) {
  __m256i v[4];
  for (int r = 0; r < 4; ++r)
    v[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * r));
  const __m256i mask16 = _mm256_set1_epi32(0x0000FFFF);
  SwapBlocks<16>(v[0], v[2], mask16);
  SwapBlocks<16>(v[1], v[3], mask16);
  const __m256i mask8 = _mm256_set1_epi32(0x00FF00FF);
  SwapBlocks<8>(v[0], v[1], mask8);
  SwapBlocks<8>(v[2], v[3], mask8);
  const auto halves = [](__m256i x) { return _mm256_permute2x128_si256(x, x, 0x01); };
  const auto pairs = [](__m256i x) { return _mm256_shuffle_epi32(x, _MM_SHUFFLE(1, 0, 3, 2)); };
  const auto neighbours = [](__m256i x) {
    return _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1));
  };
  for (__m256i& vector : v) {
    vector = SwapBlocksWithin<4, 0xF0>(vector, _mm256_set1_epi32(0x0F0F0F0F), halves);
    vector = SwapBlocksWithin<2, 0xCC>(vector, _mm256_set1_epi32(0x33333333), pairs);
    vector = SwapBlocksWithin<1, 0xAA>(vector, _mm256_set1_epi32(0x55555555), neighbours);
  }
  for (int r = 0; r < 4; ++r) _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + 8 * r), v[r]);
}

// Values and plane words for PackBitPlanesAlongDepth.
struct Avx2Planes {
  __m256i shift;
  __m256i Load(const std::uint8_t* values) const { return LoadValues(values, 32, shift); }
  std::uint32_t Word(__m256i values, int plane) const { return PlaneWord(values, plane); }
};

}  // namespace

void PackBitPlanesAvx2(const MatrixView& source, PackedType type, int panel_width, int start,
                       int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  const BitPlaneRows words = BitPlaneRows::Cleared(type, panel_width, count, depth, packed);
  const __m256i shift = _mm256_set1_epi8(static_cast<char>(PackedValueShift(type, source)));
  if (source.order == Order::kRowMajor) {
    PackBitPlanesAlongDepth(source, words, Avx2Planes{shift}, start, count, depth_start, depth,
                            sums);
    return;
  }
  const int planes = words.planes;
  const int groups = words.padded_depth / kBitPlaneGroup;
  const auto* data = static_cast<const std::uint8_t*>(source.data);
  const std::ptrdiff_t stride = source.stride;
  const int group_stride = planes * panel_width;
  // Rows are adjacent: a load takes one depth value of 32 rows, which makes a word across rows;
  // 32 of those, transposed, are the 32 rows' words.
  for (int first_row = 0; first_row < count; first_row += 32) {
    const int rows = std::min(32, count - first_row);
    const std::uint32_t valid_rows = rows == 32 ? ~0u : (1u << rows) - 1;
    std::int32_t row_sums[32] = {};
    // Where each row's words go, worked out once: a division per word cost more than the rest.
    std::uint32_t* row_words[32];
    for (int i = 0; i < rows; ++i) row_words[i] = words.Row(first_row + i);
    for (int group = 0; group < groups; ++group) {
      std::uint32_t across_rows[2][32] = {};
      const int valid = std::min(kBitPlaneGroup, depth - group * kBitPlaneGroup);
      for (int b = 0; b < valid; ++b) {
        const int d = depth_start + group * kBitPlaneGroup + b;
        const __m256i packed_values =
            LoadValues(data + d * stride + start + first_row, rows, shift);
        for (int plane = 0; plane < planes; ++plane) {
          across_rows[plane][b] = PlaneWord(packed_values, plane) & valid_rows;
        }
      }
      for (int plane = 0; plane < planes; ++plane) {
        TransposeBits(across_rows[plane]);
        for (int i = 0; i < rows; ++i) {
          const std::uint32_t word = across_rows[plane][i];
          row_words[i][group * group_stride + plane * panel_width] = word;
          row_sums[i] += __builtin_popcount(word) << plane;
        }
      }
    }
    for (int i = 0; i < rows; ++i) sums[first_row + i] += row_sums[i];
  }
}

}  // namespace internal
}  // namespace lowbit
