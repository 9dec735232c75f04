// AVX2 packing (see pack_x86.h), compiled with -mavx2: int16 depth pairs and, for panels of 3
// rows or an even number, byte groups, for the whole panels of a source whose rows run along the
// depth, twice the depth a step that the SSE4.1 packers take; int16 groups of 4 and nibbles, two
// rows of such a source at a time. Everything else (a last partial panel where noted, the depth
// tail, a source whose rows are adjacent) goes to the SSE4.1 packers, which write the same
// layout.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

constexpr int kStep = 16;       // depth values per row and step: 8 pairs, one register
constexpr int kGroupDepth = 4;  // depth values per group of the byte, nibble and quad layouts
// The widest panel packed in steps (PackPanelInSteps keeps a register of row sums per 4 rows):
// the AVX-512 VNNI kernel's 32-column rhs panels.
constexpr int kMaxSteppedWidth = 32;

// The 8 pairs of depth d .. d + 15 of a row, widened to int16: pairs 0-3 in the low half,
// 4-7 in the high half.
template <bool kSigned>
__m256i RowPairs(const std::uint8_t* row) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row));
  return kSigned ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes);
}

template <int kBytes>
void StoreBytes(void* out, __m128i value) {
  if (kBytes == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), value);
  } else {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), value);
  }
}

// Stores group g of the low half and group g + 4 of the high half of `groups`, each kBytes;
// `group_stride` counts Packed elements.
template <int kBytes, typename Packed>
void StoreGroupPair(__m256i groups, int g, int group_stride, Packed* out) {
  StoreBytes<kBytes>(out + g * group_stride, _mm256_castsi256_si128(groups));
  StoreBytes<kBytes>(out + (g + 4) * group_stride, _mm256_extracti128_si256(groups, 1));
}

// Four rows' dwords transposed per 128-bit half: groups[g] holds dword g of rows 0-3 in its low
// half and dword g + 4 of rows 0-3 in its high half.
void TransposeFourRows(const __m256i (&rows)[4], __m256i (&groups)[4]) {
  const __m256i rows01_lo = _mm256_unpacklo_epi32(rows[0], rows[1]);
  const __m256i rows23_lo = _mm256_unpacklo_epi32(rows[2], rows[3]);
  const __m256i rows01_hi = _mm256_unpackhi_epi32(rows[0], rows[1]);
  const __m256i rows23_hi = _mm256_unpackhi_epi32(rows[2], rows[3]);
  groups[0] = _mm256_unpacklo_epi64(rows01_lo, rows23_lo);
  groups[1] = _mm256_unpackhi_epi64(rows01_lo, rows23_lo);
  groups[2] = _mm256_unpacklo_epi64(rows01_hi, rows23_hi);
  groups[3] = _mm256_unpackhi_epi64(rows01_hi, rows23_hi);
}

// Adds the per-row totals in `row_sums` to sums[0 .. rows): 4 rows in lanes 0-3 of both halves,
// or 2 rows in lanes 0-1 and again in lanes 2-3.
void AddRowTotals(__m256i row_sums, int rows, std::int32_t* sums) {
  __m128i lanes =
      _mm_add_epi32(_mm256_castsi256_si128(row_sums), _mm256_extracti128_si256(row_sums, 1));
  if (rows == 2) lanes = _mm_add_epi32(lanes, _mm_srli_si128(lanes, 8));
  alignas(16) std::int32_t row_totals[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(row_totals), lanes);
  for (int r = 0; r < rows; ++r) sums[r] += row_totals[r];
}

// Four rows from `row` on, `stride` apart: pairs transposed into groups of the four rows' pairs
// (one int32 lane per row). `row_sums` gathers each row's values in its lane of both halves.
template <bool kSigned>
__attribute__((always_inline)) inline void Pack4RowsStep(const std::uint8_t* row,
                                                         std::ptrdiff_t stride, int group_stride,
                                                         std::int16_t* out, __m256i* row_sums) {
  const __m256i rows[4] = {RowPairs<kSigned>(row), RowPairs<kSigned>(row + stride),
                           RowPairs<kSigned>(row + 2 * stride),
                           RowPairs<kSigned>(row + 3 * stride)};
  __m256i groups[4];
  TransposeFourRows(rows, groups);
  for (int g = 0; g < 4; ++g) StoreGroupPair<16>(groups[g], g, group_stride, out);
  // Each int16 lane sums 4 values of at most 255 in magnitude: no overflow.
  const __m256i sum4 = _mm256_add_epi16(_mm256_add_epi16(groups[0], groups[1]),
                                        _mm256_add_epi16(groups[2], groups[3]));
  *row_sums = _mm256_add_epi32(*row_sums, _mm256_madd_epi16(sum4, _mm256_set1_epi16(1)));
}

// Two rows' dwords interleaved into groups of 8 bytes, dword g of each row into group g, and
// stored as groups 0-7 `group_stride` elements apart. Returns groups 0, 1 | 4, 5 in `groups01`
// and groups 2, 3 | 6, 7 in `groups23`, for the row sums.
template <typename Packed>
__attribute__((always_inline)) inline void StoreTwoRowGroups(__m256i row0, __m256i row1,
                                                             int group_stride, Packed* out,
                                                             __m256i* groups01, __m256i* groups23) {
  *groups01 = _mm256_unpacklo_epi32(row0, row1);
  *groups23 = _mm256_unpackhi_epi32(row0, row1);
  StoreGroupPair<8>(*groups01, 0, group_stride, out);
  StoreGroupPair<8>(_mm256_srli_si256(*groups01, 8), 1, group_stride, out);
  StoreGroupPair<8>(*groups23, 2, group_stride, out);
  StoreGroupPair<8>(_mm256_srli_si256(*groups23, 8), 3, group_stride, out);
}

// Two rows (the last two of a 6-row panel): a group is 8 bytes; lanes of `row_sums` hold rows
// 0, 1, 0, 1 in each half.
template <bool kSigned>
__attribute__((always_inline)) inline void Pack2RowsStep(const std::uint8_t* row,
                                                         std::ptrdiff_t stride, int group_stride,
                                                         std::int16_t* out, __m256i* row_sums) {
  __m256i groups01, groups23;
  StoreTwoRowGroups(RowPairs<kSigned>(row), RowPairs<kSigned>(row + stride), group_stride, out,
                    &groups01, &groups23);
  *row_sums = _mm256_add_epi32(
      *row_sums, _mm256_madd_epi16(_mm256_add_epi16(groups01, groups23), _mm256_set1_epi16(1)));
}

// Byte groups (the narrow kernels' layout, depth_group 4): four rows x 32 depth values a step,
// each row's 4-byte groups transposed into groups g and g + 4 of the four rows at once. `delta`
// turns source bytes into packed values (minus PackedValueShift, modulo 256). Each row's sum
// gathers in its int32 lane of both halves of `row_sums`.
template <PackedType kType>
__attribute__((always_inline)) inline void PackByteGroups4RowsStep(
    const std::uint8_t* row, std::ptrdiff_t stride, int group_stride, std::uint8_t* out,
    __m256i* row_sums, __m256i delta) {
  __m256i rows[4];
  for (int r = 0; r < 4; ++r) {
    rows[r] = _mm256_add_epi8(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + r * stride)), delta);
  }
  __m256i groups[4];
  TransposeFourRows(rows, groups);
  __m256i pair_sums = _mm256_setzero_si256();
  for (int g = 0; g < 4; ++g) {
    StoreGroupPair<16>(groups[g], g, group_stride, out);
    // Adjacent bytes summed into int16 (at most 2 x 255 in magnitude), four groups' worth.
    const __m256i ones = _mm256_set1_epi8(1);
    pair_sums = _mm256_add_epi16(pair_sums, kType == PackedType::kUint8
                                                ? _mm256_maddubs_epi16(groups[g], ones)
                                                : _mm256_maddubs_epi16(ones, groups[g]));
  }
  *row_sums = _mm256_add_epi32(*row_sums, _mm256_madd_epi16(pair_sums, _mm256_set1_epi16(1)));
}

// Two rows (the last two of a 6-row panel): a group is 8 bytes; lanes of `row_sums` hold rows
// 0, 1, 0, 1 in each half.
template <PackedType kType>
__attribute__((always_inline)) inline void PackByteGroups2RowsStep(
    const std::uint8_t* row, std::ptrdiff_t stride, int group_stride, std::uint8_t* out,
    __m256i* row_sums, __m256i delta) {
  const auto load = [&](const std::uint8_t* bytes) {
    return _mm256_add_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes)), delta);
  };
  __m256i groups01, groups23;
  StoreTwoRowGroups(load(row), load(row + stride), group_stride, out, &groups01, &groups23);
  const __m256i ones = _mm256_set1_epi8(1);
  const auto pair_sums = [&](__m256i groups) {
    return kType == PackedType::kUint8 ? _mm256_maddubs_epi16(groups, ones)
                                       : _mm256_maddubs_epi16(ones, groups);
  };
  *row_sums = _mm256_add_epi32(
      *row_sums, _mm256_madd_epi16(_mm256_add_epi16(pair_sums(groups01), pair_sums(groups23)),
                                   _mm256_set1_epi16(1)));
}

// The steps of `depth` (a multiple of `step`) of one whole panel of `width` rows, an even number
// up to 32, each step 8 groups of `row_group` elements per row: at each step the panel's rows
// four at a time, then two (`four_rows` and `two_rows`, which take the first row, the source
// stride, the panel's group stride, where the rows' first group goes and their sums). Step by
// step across the panel rather than four rows through the whole depth: short depths then loop
// once per panel, not once per four rows, and a constant width (the callers' panels) makes every
// store offset a constant.
template <typename Packed, typename FourRows, typename TwoRows>
__attribute__((always_inline)) inline void PackPanelInSteps(const std::uint8_t* rows_base,
                                                            std::ptrdiff_t stride, int width,
                                                            int depth, int step, int row_group,
                                                            Packed* out, std::int32_t* sums,
                                                            FourRows four_rows, TwoRows two_rows) {
  const int group_stride = width * row_group;
  __m256i row_sums[kMaxSteppedWidth / 4];
  for (int chunk = 0; chunk < width; chunk += 4) row_sums[chunk / 4] = _mm256_setzero_si256();
  for (int d = 0; d < depth; d += step, out += 8 * group_stride) {
    for (int chunk = 0; chunk < width; chunk += 4) {
      const std::uint8_t* row = rows_base + chunk * stride + d;
      Packed* chunk_out = out + chunk * row_group;
      if (width - chunk >= 4) {
        four_rows(row, stride, group_stride, chunk_out, &row_sums[chunk / 4]);
      } else {
        two_rows(row, stride, group_stride, chunk_out, &row_sums[chunk / 4]);
      }
    }
  }
  for (int chunk = 0; chunk < width; chunk += 4) {
    AddRowTotals(row_sums[chunk / 4], width - chunk >= 4 ? 4 : 2, sums + chunk);
  }
}

// PackPanelInSteps with the width a constant for the kernels' panel widths.
template <typename Packed, typename FourRows, typename TwoRows>
void PackPanelOfWidth(const std::uint8_t* rows_base, std::ptrdiff_t stride, int width, int depth,
                      int step, int row_group, Packed* out, std::int32_t* sums, FourRows four_rows,
                      TwoRows two_rows) {
  const auto pack = [&](int constant_width) {
    PackPanelInSteps(rows_base, stride, constant_width, depth, step, row_group, out, sums,
                     four_rows, two_rows);
  };
  switch (width) {
    case 6:
      return pack(6);
    case 16:
      return pack(16);
    case 32:
      return pack(32);
    default:
      return pack(width);
  }
}

// One whole byte-group panel of `width` rows, an even number, in steps of 32 depth values.
template <PackedType kType>
void PackBytePanel(const std::uint8_t* rows_base, std::ptrdiff_t stride, int width, int depth,
                   __m256i delta, std::uint8_t* out, std::int32_t* sums) {
  PackPanelOfWidth(
      rows_base, stride, width, depth, 32, 4, out, sums,
      [delta](auto... step) { PackByteGroups4RowsStep<kType>(step..., delta); },
      [delta](auto... step) { PackByteGroups2RowsStep<kType>(step..., delta); });
}

// Three rows (the narrow kernels' lhs panel): the groups of a step are 8 x 12 contiguous bytes,
// row 0's, 1's and 2's group 0, then group 1, ...: 24 dwords, dword i from row i % 3's group
// i / 3. Each of the three output registers permutes every row into place and blends them.
template <PackedType kType>
void PackByteThreeRowPanelSteps(const std::uint8_t* rows_base, std::ptrdiff_t stride, int depth,
                                __m256i delta, std::uint8_t* out, std::int32_t* sums) {
  const std::uint8_t* row[3] = {rows_base, rows_base + stride, rows_base + 2 * stride};
  const __m256i groups_for[3] = {_mm256_setr_epi32(0, 0, 0, 1, 1, 1, 2, 2),
                                 _mm256_setr_epi32(2, 3, 3, 3, 4, 4, 4, 5),
                                 _mm256_setr_epi32(5, 5, 6, 6, 6, 7, 7, 7)};
  const __m256i ones = _mm256_set1_epi8(1);
  __m256i row_sums[3] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int d = 0; d < depth; d += 32) {
    __m256i rows[3];
    for (int r = 0; r < 3; ++r) {
      rows[r] =
          _mm256_add_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[r] + d)), delta);
      const __m256i pairs = kType == PackedType::kUint8 ? _mm256_maddubs_epi16(rows[r], ones)
                                                        : _mm256_maddubs_epi16(ones, rows[r]);
      row_sums[r] = _mm256_add_epi32(row_sums[r], _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    __m256i in_order[3];
    for (int v = 0; v < 3; ++v) {
      const __m256i from0 = _mm256_permutevar8x32_epi32(rows[0], groups_for[v]);
      const __m256i from1 = _mm256_permutevar8x32_epi32(rows[1], groups_for[v]);
      const __m256i from2 = _mm256_permutevar8x32_epi32(rows[2], groups_for[v]);
      // Dword p of register v comes from row (8v + p) % 3: rows 1 and 2 take these bits.
      in_order[v] = v == 0 ? _mm256_blend_epi32(_mm256_blend_epi32(from0, from1, 0x92), from2, 0x24)
                    : v == 1
                        ? _mm256_blend_epi32(_mm256_blend_epi32(from0, from1, 0x24), from2, 0x49)
                        : _mm256_blend_epi32(_mm256_blend_epi32(from0, from1, 0x49), from2, 0x92);
    }
    for (int v = 0; v < 3; ++v) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + d * 3 + 32 * v), in_order[v]);
    }
  }
  for (int r = 0; r < 3; ++r) {
    alignas(32) std::int32_t partial[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(partial), row_sums[r]);
    for (std::int32_t value : partial) sums[r] += value;
  }
}

// The whole 32-value steps of `depth` of a 2-row panel from a row-major source (row1 null for a
// last panel of one row): each row's 8 byte groups a step, split into their low and high 4 bits,
// interleaved into the panel's groups. `delta` makes the values uint8 (PackedValueShift).
void PackTwoRowNibbleSteps(const std::uint8_t* row0, const std::uint8_t* row1, int depth,
                           __m256i delta, std::uint8_t* out, std::int32_t* sums) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i low_bits = _mm256_set1_epi8(0x0f);
  const std::uint8_t* const rows[2] = {row0, row1};
  __m256i totals[2] = {zero, zero};
  for (int d = 0; d < depth; d += 32) {
    __m256i groups0145[2], groups2367[2];
    for (int r = 0; r < 2; ++r) {
      const __m256i values =
          rows[r] == nullptr
              ? zero
              : _mm256_add_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + d)),
                                delta);
      totals[r] = _mm256_add_epi64(totals[r], _mm256_sad_epu8(values, zero));
      const __m256i low = _mm256_and_si256(values, low_bits);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(values, 4), low_bits);
      // Groups 0, 1 | 4, 5 and 2, 3 | 6, 7, each as its low then its high halves.
      groups0145[r] = _mm256_unpacklo_epi32(low, high);
      groups2367[r] = _mm256_unpackhi_epi32(low, high);
    }
    // Group g of both rows in the half of g04 (g = 0 or 4), g15, g26 or g37.
    const __m256i g04 = _mm256_unpacklo_epi64(groups0145[0], groups0145[1]);
    const __m256i g15 = _mm256_unpackhi_epi64(groups0145[0], groups0145[1]);
    const __m256i g26 = _mm256_unpacklo_epi64(groups2367[0], groups2367[1]);
    const __m256i g37 = _mm256_unpackhi_epi64(groups2367[0], groups2367[1]);
    auto* step_out = reinterpret_cast<__m256i*>(out + 4 * d);
    _mm256_storeu_si256(step_out, _mm256_permute2x128_si256(g04, g15, 0x20));
    _mm256_storeu_si256(step_out + 1, _mm256_permute2x128_si256(g26, g37, 0x20));
    _mm256_storeu_si256(step_out + 2, _mm256_permute2x128_si256(g04, g15, 0x31));
    _mm256_storeu_si256(step_out + 3, _mm256_permute2x128_si256(g26, g37, 0x31));
  }
  for (int r = 0; r < 2 && rows[r] != nullptr; ++r) {
    alignas(32) std::int64_t partial[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(partial), totals[r]);
    sums[r] += static_cast<std::int32_t>(partial[0] + partial[1] + partial[2] + partial[3]);
  }
}

// The whole 16-value steps of `depth` of two rows of a panel of `width` rows from a row-major
// source, as int16 groups of 4 (row1 null past the last row): each row's step widened into one
// register of four groups, and the two rows' groups interleaved into the panel's.
template <bool kSigned>
void PackTwoRowQuadSteps(const std::uint8_t* row0, const std::uint8_t* row1, int depth, int width,
                         std::int16_t* out, std::int32_t* sums) {
  const std::uint8_t* const rows[2] = {row0, row1};
  const int group_stride = width * 4;
  __m256i totals[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int d = 0; d < depth; d += kStep) {
    __m256i values[2];
    for (int r = 0; r < 2; ++r) {
      values[r] = rows[r] == nullptr ? _mm256_setzero_si256() : RowPairs<kSigned>(rows[r] + d);
      totals[r] = _mm256_add_epi32(totals[r], _mm256_madd_epi16(values[r], _mm256_set1_epi16(1)));
    }
    // Groups 0 | 2 and 1 | 3 of both rows.
    const __m256i groups02 = _mm256_unpacklo_epi64(values[0], values[1]);
    const __m256i groups13 = _mm256_unpackhi_epi64(values[0], values[1]);
    std::int16_t* step_out = out + (d / 4) * group_stride;
    StoreBytes<16>(step_out, _mm256_castsi256_si128(groups02));
    StoreBytes<16>(step_out + group_stride, _mm256_castsi256_si128(groups13));
    StoreBytes<16>(step_out + 2 * group_stride, _mm256_extracti128_si256(groups02, 1));
    StoreBytes<16>(step_out + 3 * group_stride, _mm256_extracti128_si256(groups13, 1));
  }
  for (int r = 0; r < 2 && rows[r] != nullptr; ++r) {
    alignas(32) std::int32_t partial[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(partial), totals[r]);
    for (std::int32_t value : partial) sums[r] += value;
  }
}

}  // namespace

void PackByteGroupsAvx2(const MatrixView& source, PackedType type, int panel_width, int start,
                        int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  const __m256i delta = _mm256_set1_epi8(static_cast<char>(-PackedValueShift(type, source)));
  const auto steps = [&](const std::uint8_t* rows_base, int stepped_depth, std::uint8_t* out,
                         std::int32_t* panel_sums) {
    if (panel_width == 3) {
      if (type == PackedType::kUint8) {
        PackByteThreeRowPanelSteps<PackedType::kUint8>(rows_base, source.stride, stepped_depth,
                                                       delta, out, panel_sums);
      } else {
        PackByteThreeRowPanelSteps<PackedType::kInt8>(rows_base, source.stride, stepped_depth,
                                                      delta, out, panel_sums);
      }
    } else if (type == PackedType::kUint8) {
      PackBytePanel<PackedType::kUint8>(rows_base, source.stride, panel_width, stepped_depth, delta,
                                        out, panel_sums);
    } else {
      PackBytePanel<PackedType::kInt8>(rows_base, source.stride, panel_width, stepped_depth, delta,
                                       out, panel_sums);
    }
  };
  const auto rest = [&](int first_row, int rows, int rest_depth_start, int rest_depth,
                        std::uint8_t* out, std::int32_t* rest_sums) {
    PackByteGroupsSse41(source, type, panel_width, first_row, rows, rest_depth_start, rest_depth,
                        out, rest_sums);
  };
  const bool stepped =
      (panel_width % 2 == 0 && panel_width <= kMaxSteppedWidth) || panel_width == 3;
  PackWholePanelsInSteps(source, stepped, panel_width, start, count, depth_start, depth, 32, 4,
                         static_cast<std::uint8_t*>(packed), sums, steps, rest);
}

void PackNibbleGroupsAvx2(const MatrixView& source, int panel_width, int start, int count,
                          int depth_start, int depth, void* packed, std::int32_t* sums) {
  auto* out = static_cast<std::uint8_t*>(packed);
  if (panel_width != 2 || source.order != Order::kRowMajor) {
    PackNibbleGroupsSse41(source, panel_width, start, count, depth_start, depth, out, sums);
    return;
  }
  const __m256i delta =
      _mm256_set1_epi8(static_cast<char>(-PackedValueShift(PackedType::kNibbles, source)));
  const int padded_depth = RoundUp(depth, kGroupDepth);
  const int stepped_depth = depth / 32 * 32;
  const auto* data = static_cast<const std::uint8_t*>(source.data);
  for (int first = 0; first < count; first += 2) {
    const int rows = count - first < 2 ? count - first : 2;
    const std::uint8_t* row0 =
        data + static_cast<std::ptrdiff_t>(start + first) * source.stride + depth_start;
    std::uint8_t* panel_out = out + static_cast<std::ptrdiff_t>(first) * padded_depth * 2;
    PackTwoRowNibbleSteps(row0, rows == 2 ? row0 + source.stride : nullptr, stepped_depth, delta,
                          panel_out, sums + first);
    if (stepped_depth < depth) {
      PackNibbleGroupsSse41(source, 2, start + first, rows, depth_start + stepped_depth,
                            depth - stepped_depth, panel_out + 4 * stepped_depth, sums + first);
    }
  }
}

void PackInt16QuadsAvx2(const MatrixView& source, int panel_width, int start, int count,
                        int depth_start, int depth, void* packed, std::int32_t* sums) {
  auto* out = static_cast<std::int16_t*>(packed);
  if (source.order != Order::kRowMajor) {
    PackInt16QuadsSse41(source, panel_width, start, count, depth_start, depth, packed, sums);
    return;
  }
  const int padded_depth = RoundUp(depth, kGroupDepth);
  const int stepped_depth = depth / kStep * kStep;
  const auto* data = static_cast<const std::uint8_t*>(source.data);
  for (int panel_start = 0; panel_start < count; panel_start += panel_width) {
    const int rows = count - panel_start < panel_width ? count - panel_start : panel_width;
    std::int16_t* panel_out = out + static_cast<std::ptrdiff_t>(panel_start) * padded_depth;
    for (int pair = 0; pair < panel_width; pair += 2) {
      const std::uint8_t* row[2] = {};
      for (int r = 0; r < 2; ++r) {
        if (pair + r < rows) {
          row[r] = data +
                   static_cast<std::ptrdiff_t>(start + panel_start + pair + r) * source.stride +
                   depth_start;
        }
      }
      std::int32_t* pair_sums = sums + panel_start + pair;
      if (source.type == ElementType::kInt8) {
        PackTwoRowQuadSteps<true>(row[0], row[1], stepped_depth, panel_width, panel_out + pair * 4,
                                  pair_sums);
      } else {
        PackTwoRowQuadSteps<false>(row[0], row[1], stepped_depth, panel_width, panel_out + pair * 4,
                                   pair_sums);
      }
    }
    // The depth tail's groups follow the steps' in the panel, as a panel of their own.
    if (stepped_depth < depth) {
      PackInt16QuadsSse41(source, panel_width, start + panel_start, rows,
                          depth_start + stepped_depth, depth - stepped_depth,
                          panel_out + stepped_depth * panel_width, sums + panel_start);
    }
  }
}

void PackInt16PairsAvx2(const MatrixView& source, int panel_width, int start, int count,
                        int depth_start, int depth, void* packed, std::int32_t* sums) {
  const auto steps = [&](const std::uint8_t* rows_base, int stepped_depth, std::int16_t* out,
                         std::int32_t* panel_sums) {
    if (source.type == ElementType::kInt8) {
      PackPanelOfWidth(
          rows_base, source.stride, panel_width, stepped_depth, kStep, 2, out, panel_sums,
          [](auto... step) { Pack4RowsStep<true>(step...); },
          [](auto... step) { Pack2RowsStep<true>(step...); });
    } else {
      PackPanelOfWidth(
          rows_base, source.stride, panel_width, stepped_depth, kStep, 2, out, panel_sums,
          [](auto... step) { Pack4RowsStep<false>(step...); },
          [](auto... step) { Pack2RowsStep<false>(step...); });
    }
  };
  const auto rest = [&](int first_row, int rows, int rest_depth_start, int rest_depth,
                        std::int16_t* out, std::int32_t* rest_sums) {
    PackInt16PairsSse41(source, panel_width, first_row, rows, rest_depth_start, rest_depth, out,
                        rest_sums);
  };
  PackWholePanelsInSteps(source, panel_width <= kMaxSteppedWidth, panel_width, start, count,
                         depth_start, depth, kStep, 2, static_cast<std::int16_t*>(packed), sums,
                         steps, rest);
}

}  // namespace internal
}  // namespace lowbit
