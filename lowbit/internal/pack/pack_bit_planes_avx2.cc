// The x86 bit-plane packer (kBitPlaneGroup's layout, compiled with -mavx2), for the bit-serial
// kernels: vpmovmskb gathers one bit of 32 bytes into a word.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

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

// Transposes the 32 x 32 bit matrix `words` (bit i of word k is entry (k, i)) in place, by
// swapping off-diagonal blocks of 16, 8, 4, 2 and 1 bits.
void TransposeBits(std::uint32_t (&words)[32]) {
  std::uint32_t mask = 0x0000FFFFu;
  for (int j = 16; j != 0; j >>= 1, mask ^= mask << j) {
    for (int k = 0; k < 32; k = (k + j + 1) & ~j) {
      const std::uint32_t swapped = ((words[k] >> j) ^ words[k + j]) & mask;
      words[k] ^= swapped << j;
      words[k + j] ^= swapped;
    }
  }
}

// Where the words of packed row `row` go: word (group, plane) of it is at
// out[group * planes * panel_width + plane * panel_width].
struct PanelWords {
  std::uint32_t* out;
  int planes;
  int panel_width;
  int padded_depth;
  std::uint32_t* Row(int row) const {
    const int panel = row / panel_width;
    return out + static_cast<std::ptrdiff_t>(panel) * panel_width * planes * (padded_depth / 32) +
           row % panel_width;
  }
};

}  // namespace

void PackBitPlanesAvx2(const MatrixView& source, PackedType type, int panel_width, int start,
                       int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  const int planes = BitPlanes(type);
  const int padded_depth = RoundUp(depth, kBitPlaneGroup);
  const int groups = padded_depth / kBitPlaneGroup;
  const PanelWords words{static_cast<std::uint32_t*>(packed), planes, panel_width, padded_depth};
  // Rows past `count` in the last panel, and depth past `depth`, stay zero.
  std::memset(
      packed, 0,
      PackedBytes(type, static_cast<std::int64_t>(RoundUp(count, panel_width)) * padded_depth));
  const __m256i shift = _mm256_set1_epi8(static_cast<char>(PackedValueShift(type, source)));
  const auto* data = static_cast<const std::uint8_t*>(source.data);
  const std::ptrdiff_t stride = source.stride;
  const int group_stride = planes * panel_width;
  if (source.order == Order::kRowMajor) {
    // Each row's depth values are adjacent: 32 of them make a word of each plane.
    for (int row = 0; row < count; ++row) {
      const std::uint8_t* values = data + (start + row) * stride + depth_start;
      std::uint32_t* out = words.Row(row);
      std::int32_t sum = 0;
      for (int group = 0; group < groups; ++group) {
        const int valid = std::min(kBitPlaneGroup, depth - group * kBitPlaneGroup);
        const __m256i packed_values = LoadValues(values + group * kBitPlaneGroup, valid, shift);
        const std::uint32_t valid_bits = valid == 32 ? ~0u : (1u << valid) - 1;
        for (int plane = 0; plane < planes; ++plane) {
          const std::uint32_t word = PlaneWord(packed_values, plane) & valid_bits;
          out[group * group_stride + plane * panel_width] = word;
          sum += __builtin_popcount(word) << plane;
        }
      }
      sums[row] += sum;
    }
    return;
  }
  // Rows are adjacent: a load takes one depth value of 32 rows, which makes a word across rows;
  // 32 of those, transposed, are the 32 rows' words.
  for (int first_row = 0; first_row < count; first_row += 32) {
    const int rows = std::min(32, count - first_row);
    const std::uint32_t valid_rows = rows == 32 ? ~0u : (1u << rows) - 1;
    std::int32_t row_sums[32] = {};
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
          words.Row(first_row + i)[group * group_stride + plane * panel_width] = word;
          row_sums[i] += __builtin_popcount(word) << plane;
        }
      }
    }
    for (int i = 0; i < rows; ++i) sums[first_row + i] += row_sums[i];
  }
}

}  // namespace internal
}  // namespace lowbit
