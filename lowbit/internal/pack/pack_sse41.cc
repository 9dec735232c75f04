// SSE4.1 packing (see pack_x86.h), compiled with -msse4.1: int16 depth pairs, which widen 8-bit
// sources to int16 and transpose them so that each row's (d, d + 1) pair is one int32 lane; from
// them, int16 groups of 4; and byte groups, from them nibbles.
#include <smmintrin.h>

#include <cstdint>
#include <cstring>

#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

constexpr int kMaxPanelWidth = 16;

// Local rather than std::min / std::clamp: an inline function from a header, compiled here with
// -msse4.1, could be the copy the linker keeps for code that runs on any x86-64.
constexpr int Min(int a, int b) { return a < b ? a : b; }
constexpr int Clamp(int value, int low, int high) { return value < low ? low : Min(value, high); }

template <bool kSigned>
__m128i WidenLow8(__m128i bytes) {
  return kSigned ? _mm_cvtepi8_epi16(bytes) : _mm_cvtepu8_epi16(bytes);
}

// `available` (at most 8) bytes from `source` in the low lanes, zeros above: a full 8-byte
// load where possible, never a read past the data.
inline __m128i LoadUpTo8Bytes(const std::uint8_t* source, int available) {
  if (available >= 8) return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(source));
  std::uint64_t bytes = 0;
  int loaded = 0;
  if (available >= 4) {
    std::uint32_t low;
    std::memcpy(&low, source, sizeof(low));
    bytes = low;
    loaded = 4;
  }
  for (; loaded < available; ++loaded) bytes |= std::uint64_t{source[loaded]} << (8 * loaded);
  return _mm_cvtsi64_si128(static_cast<long long>(bytes));
}

inline void StoreLow64(std::int16_t* out, __m128i value) {
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), value);
}
inline void StoreHigh64(std::int16_t* out, __m128i value) {
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_unpackhi_epi64(value, value));
}

// Adds lane i of `row_sums` to sums[i] for the first `rows` (at most 4) lanes.
inline void AddLanes(__m128i row_sums, int rows, std::int32_t* sums) {
  alignas(16) std::int32_t lanes[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), row_sums);
  for (int i = 0; i < rows; ++i) sums[i] += lanes[i];
}

// The (d, d + 1) pairs of depth d .. d + 7 of `row`, widened to int16; zeros past the depth and
// for a missing row (null). kFull: the row is there and all 8 values are within the depth.
template <bool kSigned, bool kFull>
inline __m128i RowPairs(const std::uint8_t* row, int d, int depth) {
  if (kFull) {
    return WidenLow8<kSigned>(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d)));
  }
  return row == nullptr ? _mm_setzero_si128()
                        : WidenLow8<kSigned>(LoadUpTo8Bytes(row + d, depth - d));
}

// Four rows x four pairs transposed into four groups of the four rows' pairs; stores the first
// `groups` of them and adds each row's values to its lane of row_sums.
template <bool kSigned, bool kFull>
inline void Pack4Rows(const std::uint8_t* const row[4], int d, int depth, int groups,
                      int group_stride, std::int16_t* out, __m128i* row_sums) {
  const __m128i row0 = RowPairs<kSigned, kFull>(row[0], d, depth);
  const __m128i row1 = RowPairs<kSigned, kFull>(row[1], d, depth);
  const __m128i row2 = RowPairs<kSigned, kFull>(row[2], d, depth);
  const __m128i row3 = RowPairs<kSigned, kFull>(row[3], d, depth);
  const __m128i rows01_lo = _mm_unpacklo_epi32(row0, row1);
  const __m128i rows23_lo = _mm_unpacklo_epi32(row2, row3);
  const __m128i rows01_hi = _mm_unpackhi_epi32(row0, row1);
  const __m128i rows23_hi = _mm_unpackhi_epi32(row2, row3);
  const __m128i group0 = _mm_unpacklo_epi64(rows01_lo, rows23_lo);
  const __m128i group1 = _mm_unpackhi_epi64(rows01_lo, rows23_lo);
  const __m128i group2 = _mm_unpacklo_epi64(rows01_hi, rows23_hi);
  const __m128i group3 = _mm_unpackhi_epi64(rows01_hi, rows23_hi);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), group0);
  if (kFull || groups > 1) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + group_stride), group1);
  if (kFull || groups > 2) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * group_stride), group2);
  }
  if (kFull || groups > 3) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * group_stride), group3);
  }
  // Each int16 lane sums 4 values of at most 255 in magnitude: no overflow.
  const __m128i sum4 = _mm_add_epi16(_mm_add_epi16(group0, group1), _mm_add_epi16(group2, group3));
  *row_sums = _mm_add_epi32(*row_sums, _mm_madd_epi16(sum4, _mm_set1_epi16(1)));
}

// The same for two rows (the last two of a 6-row panel): a group is 8 bytes.
template <bool kSigned, bool kFull>
inline void Pack2Rows(const std::uint8_t* const row[4], int d, int depth, int groups,
                      int group_stride, std::int16_t* out, __m128i* row_sums) {
  const __m128i row0 = RowPairs<kSigned, kFull>(row[0], d, depth);
  const __m128i row1 = RowPairs<kSigned, kFull>(row[1], d, depth);
  const __m128i groups01 = _mm_unpacklo_epi32(row0, row1);
  const __m128i groups23 = _mm_unpackhi_epi32(row0, row1);
  StoreLow64(out, groups01);
  if (kFull || groups > 1) StoreHigh64(out + group_stride, groups01);
  if (kFull || groups > 2) StoreLow64(out + 2 * group_stride, groups23);
  if (kFull || groups > 3) StoreHigh64(out + 3 * group_stride, groups23);
  // Lanes hold rows 0, 1, 0, 1: fold the upper half onto the lower.
  const __m128i sum2 = _mm_madd_epi16(_mm_add_epi16(groups01, groups23), _mm_set1_epi16(1));
  *row_sums = _mm_add_epi32(*row_sums, _mm_add_epi32(sum2, _mm_srli_si128(sum2, 8)));
}

// One panel of a source whose rows run along the depth (row-major view): 8 depth values of 4
// (or 2) rows at a time, widened to 4 pairs per row, then transposed pair-wise. Whole rows and
// whole steps of 8 take the branch-free path; the depth tail and missing rows the careful one.
template <bool kSigned>
void PackPanelDepthContiguous(const std::uint8_t* rows_base, std::ptrdiff_t stride, int width,
                              int rows, int depth, std::int16_t* out, std::int32_t* sums) {
  const int groups = (depth + 1) / 2;
  const int group_stride = width * 2;
  for (int chunk = 0; chunk < width; chunk += 4) {
    const bool four_rows = width - chunk >= 4;
    const int valid_rows = Clamp(rows - chunk, 0, four_rows ? 4 : 2);
    const std::uint8_t* row[4] = {};
    for (int r = 0; r < valid_rows; ++r) row[r] = rows_base + (chunk + r) * stride;
    __m128i row_sums = _mm_setzero_si128();
    std::int16_t* chunk_out = out + chunk * 2;
    int d = 0;
    if (valid_rows == (four_rows ? 4 : 2)) {
      for (; d + 8 <= depth; d += 8) {
        std::int16_t* step_out = chunk_out + (d / 2) * group_stride;
        if (four_rows) {
          Pack4Rows<kSigned, true>(row, d, depth, 4, group_stride, step_out, &row_sums);
        } else {
          Pack2Rows<kSigned, true>(row, d, depth, 4, group_stride, step_out, &row_sums);
        }
      }
    }
    for (; d < depth; d += 8) {
      std::int16_t* step_out = chunk_out + (d / 2) * group_stride;
      const int step_groups = Min(4, groups - d / 2);
      if (four_rows) {
        Pack4Rows<kSigned, false>(row, d, depth, step_groups, group_stride, step_out, &row_sums);
      } else {
        Pack2Rows<kSigned, false>(row, d, depth, step_groups, group_stride, step_out, &row_sums);
      }
    }
    AddLanes(row_sums, valid_rows, sums + chunk);
  }
}

// One panel of a source whose rows are adjacent in memory for a fixed depth (column-major
// view): the bytes of depth d and d + 1 interleave into pairs, which then widen to int16.
template <bool kSigned>
void PackPanelRowsContiguous(const std::uint8_t* depth_base, std::ptrdiff_t stride, int width,
                             int rows, int depth, std::int16_t* out, std::int32_t* sums) {
  const int group_stride = width * 2;
  const __m128i ones = _mm_set1_epi16(1);
  __m128i row_sums[kMaxPanelWidth / 4];
  for (__m128i& sum : row_sums) sum = _mm_setzero_si128();
  for (int d = 0; d < depth; d += 2) {
    const std::uint8_t* first = depth_base + d * stride;
    std::int16_t* group_out = out + (d / 2) * group_stride;
    for (int chunk = 0; chunk < width; chunk += 8) {
      const int available = rows - chunk;
      const __m128i first_bytes = LoadUpTo8Bytes(first + chunk, available);
      const __m128i second_bytes =
          d + 1 < depth ? LoadUpTo8Bytes(first + stride + chunk, available) : _mm_setzero_si128();
      const __m128i interleaved = _mm_unpacklo_epi8(first_bytes, second_bytes);
      const __m128i low = WidenLow8<kSigned>(interleaved);
      const __m128i high = WidenLow8<kSigned>(_mm_srli_si128(interleaved, 8));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(group_out + chunk * 2), low);
      row_sums[chunk / 4] = _mm_add_epi32(row_sums[chunk / 4], _mm_madd_epi16(low, ones));
      if (width - chunk >= 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(group_out + chunk * 2 + 8), high);
      } else if (width - chunk > 4) {
        StoreLow64(group_out + chunk * 2 + 8, high);
      }
      if (width - chunk > 4) {
        row_sums[chunk / 4 + 1] =
            _mm_add_epi32(row_sums[chunk / 4 + 1], _mm_madd_epi16(high, ones));
      }
    }
  }
  for (int chunk = 0; chunk < width; chunk += 4) {
    AddLanes(row_sums[chunk / 4], Clamp(rows - chunk, 0, Min(4, width - chunk)), sums + chunk);
  }
}

template <bool kSigned>
void PackAll(const MatrixView& source, int width, int start, int count, int depth_start, int depth,
             std::int16_t* out, std::int32_t* sums) {
  const auto* data = static_cast<const std::uint8_t*>(source.data);
  const std::ptrdiff_t stride = source.stride;
  const int padded_depth = (depth + 1) / 2 * 2;
  for (int panel_start = 0; panel_start < count; panel_start += width) {
    const int rows = Min(width, count - panel_start);
    const int first_row = start + panel_start;
    if (source.order == Order::kRowMajor) {
      PackPanelDepthContiguous<kSigned>(data + first_row * stride + depth_start, stride, width,
                                        rows, depth, out, sums + panel_start);
    } else {
      PackPanelRowsContiguous<kSigned>(data + depth_start * stride + first_row, stride, width, rows,
                                       depth, out, sums + panel_start);
    }
    out += static_cast<std::ptrdiff_t>(width) * padded_depth;
  }
}

// Byte packing for the narrow kernels (kernel_narrow_x86.h): groups of 4 depth values per row.

// 16 bytes from `source`, of which the first `available` (possibly none) are wanted: one load
// when 16 bytes up to `end`, the end of the source matrix, may be read (the bytes past
// `available` are then other entries, which ByteShift::Apply clears), otherwise the wanted bytes
// with zeros above. A panel narrower than 16 rows reads its rows in whole vectors this way.
inline __m128i LoadUpTo16Bytes(const std::uint8_t* source, int available, const std::uint8_t* end) {
  if (available >= 16 || end - source >= 16) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(source));
  }
  alignas(16) std::uint8_t buffer[16] = {};
  if (available > 0) std::memcpy(buffer, source, static_cast<std::size_t>(available));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(buffer));
}

// Turns loaded source bytes into packed values: adds `delta` (minus PackedValueShift, modulo
// 256) to the first `available` bytes and leaves the others zero, as padding must be.
struct ByteShift {
  __m128i delta;
  __m128i Apply(__m128i bytes, int available) const {
    const __m128i shifted = _mm_add_epi8(bytes, delta);
    if (available >= 16) return shifted;
    const __m128i lane = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm_and_si128(
        shifted,
        _mm_cmpgt_epi8(_mm_set1_epi8(static_cast<char>(available < 0 ? 0 : available)), lane));
  }
};

// Adds each 4-byte group of `groups` (four rows' groups, as packed) to its row's int32 lane.
template <PackedType kType>
inline __m128i AddRowSums(__m128i sums, __m128i groups) {
  const __m128i ones = _mm_set1_epi8(1);
  const __m128i pairs = kType == PackedType::kUint8 ? _mm_maddubs_epi16(groups, ones)
                                                    : _mm_maddubs_epi16(ones, groups);
  return _mm_add_epi32(sums, _mm_madd_epi16(pairs, _mm_set1_epi16(1)));
}

// Stores the groups of the first `rows` (at most 4) rows of a four-row group vector.
inline void StoreGroups(std::uint8_t* out, __m128i groups, int rows) {
  if (rows >= 4) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), groups);
    return;
  }
  if (rows >= 2) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), groups);
    out += 8;
    rows -= 2;
    groups = _mm_srli_si128(groups, 8);
  }
  if (rows == 1) {
    const std::int32_t group = _mm_cvtsi128_si32(groups);
    std::memcpy(out, &group, sizeof(group));
  }
}

// One panel of a source whose rows run along the depth: 16 depth values of four rows at a
// time, transposed in 4-byte units into four groups of the four rows.
template <PackedType kType>
void PackBytePanelDepthContiguous(const std::uint8_t* rows_base, std::ptrdiff_t stride, int width,
                                  int rows, int depth, const ByteShift& shift,
                                  const std::uint8_t* end, std::uint8_t* out, std::int32_t* sums) {
  const int group_stride = width * 4;
  for (int chunk = 0; chunk < width; chunk += 4) {
    const int chunk_rows = Min(4, width - chunk);
    const int valid_rows = Clamp(rows - chunk, 0, chunk_rows);
    __m128i row_sums = _mm_setzero_si128();
    for (int d = 0; d < depth; d += 16) {
      const int available = depth - d;
      __m128i row[4];
      for (int r = 0; r < 4; ++r) {
        row[r] =
            r < valid_rows
                ? shift.Apply(LoadUpTo16Bytes(rows_base + (chunk + r) * stride + d, available, end),
                              available)
                : _mm_setzero_si128();
      }
      const __m128i rows01_lo = _mm_unpacklo_epi32(row[0], row[1]);
      const __m128i rows23_lo = _mm_unpacklo_epi32(row[2], row[3]);
      const __m128i rows01_hi = _mm_unpackhi_epi32(row[0], row[1]);
      const __m128i rows23_hi = _mm_unpackhi_epi32(row[2], row[3]);
      const __m128i group[4] = {
          _mm_unpacklo_epi64(rows01_lo, rows23_lo), _mm_unpackhi_epi64(rows01_lo, rows23_lo),
          _mm_unpacklo_epi64(rows01_hi, rows23_hi), _mm_unpackhi_epi64(rows01_hi, rows23_hi)};
      const int groups = Min(4, (available + 3) / 4);
      std::uint8_t* step_out = out + (d / 4) * group_stride + chunk * 4;
      for (int g = 0; g < groups; ++g) {
        StoreGroups(step_out + g * group_stride, group[g], chunk_rows);
        row_sums = AddRowSums<kType>(row_sums, group[g]);
      }
    }
    AddLanes(row_sums, valid_rows, sums + chunk);
  }
}

// One panel of a source whose rows are adjacent for a fixed depth: the bytes of depth
// d .. d + 3 of 16 rows interleave into four vectors of four rows' groups.
template <PackedType kType>
void PackBytePanelRowsContiguous(const std::uint8_t* depth_base, std::ptrdiff_t stride, int width,
                                 int rows, int depth, const ByteShift& shift,
                                 const std::uint8_t* end, std::uint8_t* out, std::int32_t* sums) {
  const int group_stride = width * 4;
  for (int chunk = 0; chunk < width; chunk += 16) {
    const int available = rows - chunk;
    __m128i row_sums[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(),
                           _mm_setzero_si128()};
    for (int d = 0; d < depth; d += 4) {
      __m128i line[4];
      for (int j = 0; j < 4; ++j) {
        line[j] = d + j < depth ? shift.Apply(LoadUpTo16Bytes(depth_base + (d + j) * stride + chunk,
                                                              available, end),
                                              available)
                                : _mm_setzero_si128();
      }
      const __m128i low01 = _mm_unpacklo_epi8(line[0], line[1]);
      const __m128i low23 = _mm_unpacklo_epi8(line[2], line[3]);
      const __m128i high01 = _mm_unpackhi_epi8(line[0], line[1]);
      const __m128i high23 = _mm_unpackhi_epi8(line[2], line[3]);
      const __m128i quad[4] = {_mm_unpacklo_epi16(low01, low23), _mm_unpackhi_epi16(low01, low23),
                               _mm_unpacklo_epi16(high01, high23),
                               _mm_unpackhi_epi16(high01, high23)};
      std::uint8_t* group_out = out + (d / 4) * group_stride + chunk * 4;
      for (int q = 0; q < 4 && chunk + 4 * q < width; ++q) {
        StoreGroups(group_out + 16 * q, quad[q], Min(4, width - chunk - 4 * q));
        row_sums[q] = AddRowSums<kType>(row_sums[q], quad[q]);
      }
    }
    for (int q = 0; q < 4 && chunk + 4 * q < width; ++q) {
      AddLanes(row_sums[q], Clamp(rows - chunk - 4 * q, 0, Min(4, width - chunk - 4 * q)),
               sums + chunk + 4 * q);
    }
  }
}

template <PackedType kType>
void PackAllBytes(const MatrixView& source, int width, int start, int count, int depth_start,
                  int depth, std::uint8_t* out, std::int32_t* sums) {
  const auto* data = static_cast<const std::uint8_t*>(source.data);
  const std::ptrdiff_t stride = source.stride;
  const ByteShift shift{_mm_set1_epi8(static_cast<char>(-PackedValueShift(kType, source)))};
  // The end of the source matrix: its last line's last byte, plus one (an empty matrix, as a
  // zero-depth operand is, has no bytes to read, and no line before its first to point at).
  const bool row_major = source.order == Order::kRowMajor;
  const std::ptrdiff_t lines = row_major ? source.rows : source.cols;
  const std::uint8_t* end =
      lines > 0 ? data + (lines - 1) * stride + (row_major ? source.cols : source.rows) : data;
  const int padded_depth = (depth + 3) / 4 * 4;
  for (int panel_start = 0; panel_start < count; panel_start += width) {
    const int rows = Min(width, count - panel_start);
    const int first_row = start + panel_start;
    if (row_major) {
      PackBytePanelDepthContiguous<kType>(data + first_row * stride + depth_start, stride, width,
                                          rows, depth, shift, end, out, sums + panel_start);
    } else {
      PackBytePanelRowsContiguous<kType>(data + depth_start * stride + first_row, stride, width,
                                         rows, depth, shift, end, out, sums + panel_start);
    }
    out += static_cast<std::ptrdiff_t>(width) * padded_depth;
  }
}

}  // namespace

void PackInt16PairsSse41(const MatrixView& source, int panel_width, int start, int count,
                         int depth_start, int depth, void* packed, std::int32_t* sums) {
  auto* out = static_cast<std::int16_t*>(packed);
  if (source.type == ElementType::kInt8) {
    PackAll<true>(source, panel_width, start, count, depth_start, depth, out, sums);
  } else {
    PackAll<false>(source, panel_width, start, count, depth_start, depth, out, sums);
  }
}

void PackInt16QuadsSse41(const MatrixView& source, int panel_width, int start, int count,
                         int depth_start, int depth, void* packed, std::int32_t* sums) {
  // Panel by panel: int16 pairs first, then each two consecutive groups of pairs (every row's
  // depth values 4g, 4g + 1, then 4g + 2, 4g + 3) interleaved in place into one group of 4.
  const int padded_depth = (depth + 3) / 4 * 4;
  const int pair_groups = (depth + 1) / 2;
  auto* out = static_cast<std::int32_t*>(packed);  // one int32 per row's pair
  for (int panel_start = 0; panel_start < count; panel_start += panel_width) {
    const int rows = Min(panel_width, count - panel_start);
    std::int32_t* panel = out + static_cast<std::ptrdiff_t>(panel_start) * padded_depth / 2;
    PackInt16PairsSse41(source, panel_width, start + panel_start, rows, depth_start, depth, panel,
                        sums + panel_start);
    // The pairs stop at depth rounded up to 2; groups of 4 need one more group of zero pairs.
    if (pair_groups % 2 != 0) {
      std::memset(panel + pair_groups * panel_width, 0, sizeof(std::int32_t) * panel_width);
    }
    std::int32_t pairs[2 * kMaxPanelWidth];
    for (int group = 0; group < padded_depth / 4; ++group) {
      std::int32_t* group_pairs = panel + group * 2 * panel_width;
      std::memcpy(pairs, group_pairs, sizeof(std::int32_t) * 2 * panel_width);
      for (int row = 0; row < panel_width; ++row) {
        group_pairs[2 * row] = pairs[row];
        group_pairs[2 * row + 1] = pairs[panel_width + row];
      }
    }
  }
}

void PackNibbleGroupsSse41(const MatrixView& source, int panel_width, int start, int count,
                           int depth_start, int depth, void* packed, std::int32_t* sums) {
  // The uint8 byte groups of the block go to its second half, and are split from there into the
  // first: 16 bytes read make 32 written, which end where the bytes not yet read begin. The
  // sums of the byte groups are those of the values.
  const std::size_t bytes = static_cast<std::size_t>((count + panel_width - 1) / panel_width) *
                            panel_width * ((depth + 3) / 4 * 4);
  auto* out = static_cast<std::uint8_t*>(packed);
  const std::uint8_t* groups = out + bytes;
  PackByteGroupsSse41(source, PackedType::kUint8, panel_width, start, count, depth_start, depth,
                      out + bytes, sums);
  const __m128i low_bits = _mm_set1_epi8(0x0f);
  // Every panel's bytes are a multiple of 4 x 2 (its width is even), so the last step may have 8.
  for (std::size_t i = 0; i < bytes; i += 16) {
    const __m128i values = bytes - i >= 16
                               ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(groups + i))
                               : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(groups + i));
    const __m128i low = _mm_and_si128(values, low_bits);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(values, 4), low_bits);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), _mm_unpacklo_epi32(low, high));
    if (bytes - i >= 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i + 16), _mm_unpackhi_epi32(low, high));
    }
  }
}

void PackByteGroupsSse41(const MatrixView& source, PackedType type, int panel_width, int start,
                         int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  auto* out = static_cast<std::uint8_t*>(packed);
  if (type == PackedType::kUint8) {
    PackAllBytes<PackedType::kUint8>(source, panel_width, start, count, depth_start, depth, out,
                                     sums);
  } else {
    PackAllBytes<PackedType::kInt8>(source, panel_width, start, count, depth_start, depth, out,
                                    sums);
  }
}

}  // namespace internal
}  // namespace lowbit
