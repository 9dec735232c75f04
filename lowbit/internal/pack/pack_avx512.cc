// AVX-512 packing (see pack_x86.h), compiled with -mavx2 -mavx512f -mavx512bw -mavx512vnni:
// byte groups for the whole panels of a source whose rows run along the depth, 64 depth values a
// step (a last partial step under a mask): uint8 panels of 16 or 32 rows (the AVX-512 VNNI
// kernel's rhs panels) and pairs of 8-row int8 panels (its lhs panels); and byte groups of either
// type, in panels of any width, of a source whose rows are adjacent (a column-major lhs, a
// row-major rhs), 32 rows and 4 depth values a step. Everything else (a last partial panel or
// pair, other widths) goes to PackByteGroupsAvx2, which writes the same layout. The same packing
// checking a declared range as it loads the values (PackByteGroupsCheckingAvx512; the rows the
// AVX2 packer takes are scanned after it, OrBitsOfLines). And lines along the depth requantized as
// they are read (PackByteGroupsRequantizingAvx512), every row and depth in 64-value steps under
// masks.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/internal/driver/range_bits_avx512.h"
#include "lowbit/internal/pack/pack_x86.h"
#include "lowbit/internal/pack/requantize_avx512.h"  // and <immintrin.h>
#include "lowbit/internal/pack/transpose_avx512.h"

namespace lowbit {
namespace internal {
namespace {

constexpr int kStep = 64;  // depth values per row and step: 16 groups of 4, one register
constexpr int kGroup = 4;

// 16 rows' values at depths [d, d + 64), row i's as `load_row(i)` gives them (packed), as a
// 16 x 16 square of 4-byte groups transposed: register g holds those rows' group g in row order,
// which is where the layout wants it; and each group's 4 values added to its row's lane of
// row_sums (vpdpbusd by ones, the ones on the unsigned side for int8 values). Four partial sums
// (PartialRowSums) so that the additions are four short chains: through one, the 16 vpdpbusd of 5
// cycles' latency each made a step's time.
using PartialRowSums = __m512i[4];

template <PackedType kType, typename LoadRow>
__attribute__((always_inline)) inline void TransposedGroups(LoadRow load_row, __m512i (&groups)[16],
                                                            PartialRowSums& row_sums) {
  const __m512i ones = _mm512_set1_epi8(1);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) groups[i] = load_row(i);
  TransposeInt32x16x16(groups);
  for (int g = 0; g < 16; ++g) {
    __m512i& sums = row_sums[g % 4];
    sums = kType == PackedType::kUint8 ? _mm512_dpbusd_epi32(sums, groups[g], ones)
                                       : _mm512_dpbusd_epi32(sums, ones, groups[g]);
  }
}

// Where kChecked, the bits of the values a packer loads, each plus the declared range's bias, ORed
// together and at the end into the range's bits (RangeBits, driver.h). Lanes loaded as zeros under
// a mask add nothing outside the range: zero lies in every declared range. Otherwise nothing at
// all, and `range` may be null.
template <bool kChecked>
class RangeCheck {
 public:
  explicit RangeCheck(RangeBits* range) : range_(range) {
    if (kChecked) bias_ = _mm512_set1_epi8(static_cast<char>(range->bias));
  }
  void Add(__m512i values) {
    if (kChecked) bits_ = _mm512_or_si512(bits_, _mm512_add_epi8(values, bias_));
  }
  void Finish() const {
    if (kChecked) OrBytesInto(bits_, range_);
  }

 private:
  RangeBits* range_;
  __m512i bias_ = _mm512_setzero_si512();
  __m512i bits_ = _mm512_setzero_si512();
};

// Adds the sums in row_sums of the rows in `present` to theirs at `sums`.
inline void AddRowSums(const PartialRowSums& row_sums, std::int32_t* sums,
                       __mmask16 present = 0xffff) {
  const __m512i total = _mm512_add_epi32(_mm512_add_epi32(row_sums[0], row_sums[1]),
                                         _mm512_add_epi32(row_sums[2], row_sums[3]));
  _mm512_mask_storeu_epi32(sums, present,
                           _mm512_add_epi32(_mm512_maskz_loadu_epi32(present, sums), total));
}

// The last, partial step of 64 depth values from d of the 16 rows from rows_base on, whose rows
// end at `depth`, read under a mask (zero past the depth, as padding must be); their sums added to
// those at `sums`, and `store(d, groups, count)` storing the step's groups up to the padded depth.
// Out of line, with its own sums and a copy of `store`: inlined, or sharing the whole steps'
// sums, it took the whole steps' registers, and packing a 64-deep lhs took twice as long.
template <PackedType kType, bool kChecked, typename Store>
__attribute__((noinline)) void PartialStep(const std::uint8_t* rows_base, std::ptrdiff_t stride,
                                           int d, int depth, std::int8_t delta, Store store,
                                           std::int32_t* sums, RangeBits* range) {
  const __mmask64 in_depth = (__mmask64{1} << (depth - d)) - 1;
  const __m512i delta_bytes = _mm512_set1_epi8(delta);
  PartialRowSums row_sums = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                             _mm512_setzero_si512()};
  RangeCheck<kChecked> check(range);
  __m512i groups[16];
  TransposedGroups<kType>(
      [&](int i) {
        const __m512i values = _mm512_maskz_loadu_epi8(in_depth, rows_base + i * stride + d);
        check.Add(values);
        return _mm512_maskz_add_epi8(in_depth, values, delta_bytes);
      },
      groups, row_sums);
  store(d, groups, (depth - d + kGroup - 1) / kGroup);
  AddRowSums(row_sums, sums);
  check.Finish();
}

// The 16 rows from rows_base on, each of `depth` values shifted by `delta`, 64 depth values a
// step: `store(d, groups, count)` stores the first `count` groups of the step at depth d
// (TransposedGroups), and the rows' sums are added to those at `sums`. Where kChecked, the values
// are checked against `range` as they are loaded.
template <PackedType kType, bool kChecked, typename Store>
__attribute__((always_inline)) inline void PackSixteenRows(const std::uint8_t* rows_base,
                                                           std::ptrdiff_t stride, int depth,
                                                           std::int8_t delta, Store store,
                                                           std::int32_t* sums, RangeBits* range) {
  const __m512i delta_bytes = _mm512_set1_epi8(delta);
  PartialRowSums row_sums = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                             _mm512_setzero_si512()};
  RangeCheck<kChecked> check(range);
  int d = 0;
  for (; d + kStep <= depth; d += kStep) {
    __m512i groups[16];
    TransposedGroups<kType>(
        [&](int i) {
          const __m512i values = _mm512_loadu_si512(rows_base + i * stride + d);
          check.Add(values);
          return _mm512_add_epi8(values, delta_bytes);
        },
        groups, row_sums);
    // A constant count: with a run-time one GCC kept the loop and the groups in memory.
    store(d, groups, std::integral_constant<int, kStep / kGroup>());
  }
  AddRowSums(row_sums, sums);
  check.Finish();
  if (d < depth) {
    PartialStep<kType, kChecked>(rows_base, stride, d, depth, delta, store, sums, range);
  }
}

// One whole panel of `width` rows (a multiple of 16) of kUint8 values, 16 rows at a time. The
// AVX2 packer's 4-row steps took three quarters of a 1 x 1024 x 1024 GEMM's time, and the depth
// tail through them a fifth of a 32 x 32 x 32 one.
template <bool kChecked>
void PackUint8PanelSteps(const std::uint8_t* rows_base, std::ptrdiff_t stride, int width, int depth,
                         std::int8_t delta, std::uint8_t* out, std::int32_t* sums,
                         RangeBits* range) {
  for (int first = 0; first < width; first += 16) {
    PackSixteenRows<PackedType::kUint8, kChecked>(
        rows_base + first * stride, stride, depth, delta,
        [=](int d, const __m512i(&groups)[16], auto count) {
          for (int g = 0; g < count; ++g) {
            const std::ptrdiff_t group = d / kGroup + g;
            _mm512_storeu_si512(out + (group * width + first) * kGroup, groups[g]);
          }
        },
        sums + first, range);
  }
}

// A transposed group of 16 rows (TransposedGroups) to its place in a pair of 8-row panels
// `panel_bytes` apart: rows 0-7 to the first panel, rows 8-15 to the second where there is one.
inline void StoreToEightRowPanelPair(__m512i group, std::uint8_t* out, std::ptrdiff_t panel_bytes,
                                     bool has_second) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_castsi512_si256(group));
  if (has_second) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + panel_bytes),
                        _mm512_extracti64x4_epi64(group, 1));
  }
}

// Two whole 8-row kInt8 panels (the AVX-512 VNNI kernel's lhs panels), panel_bytes apart,
// together: each transposed group holds the first panel's rows in its low half and the second's
// in its high half. Through the AVX2 packer's 4-row steps, packing the lhs took 8% of a
// 64 x 64 x 64 GEMM.
template <bool kChecked>
void PackEightRowPanelPairSteps(const std::uint8_t* rows_base, std::ptrdiff_t stride, int depth,
                                std::ptrdiff_t panel_bytes, std::int8_t delta, std::uint8_t* out,
                                std::int32_t* sums, RangeBits* range) {
  constexpr int kWidth = 8;
  PackSixteenRows<PackedType::kInt8, kChecked>(
      rows_base, stride, depth, delta,
      [=](int d, const __m512i(&groups)[16], auto count) {
        for (int g = 0; g < count; ++g) {
          StoreToEightRowPanelPair(groups[g], out + (d / kGroup + g) * kWidth * kGroup, panel_bytes,
                                   true);
        }
      },
      sums, range);
}

// Rows [0, count) of a source whose rows are adjacent for a fixed depth, in panels of `width`
// rows, the last one padded with zero rows: `rows_base` is row 0 at the first depth. 32 rows at
// a time, for each 4 depth values: the four lines' bytes (masked loads: nothing past the last
// row is read, and its padding stays zero) interleave, bytes then pairs, into the rows' 4-byte
// groups, two 16-row halves per register put in row order by lane permutes, and each panel's
// run of them is stored to its place with masked stores. A depth value past the depth is zero,
// as padding must be. maddubs + madd add each group's values to its row's sum (signed for int8:
// the ones take maddubs' unsigned side).
template <PackedType kType, bool kChecked>
void PackRowsAdjacent(const std::uint8_t* rows_base, std::ptrdiff_t stride, int count, int width,
                      int depth, std::int8_t delta, std::uint8_t* out, std::int32_t* sums,
                      RangeBits* range) {
  RangeCheck<kChecked> check(range);
  const __m512i delta_bytes = _mm512_set1_epi8(delta);
  const int padded_depth = (depth + kGroup - 1) / kGroup * kGroup;
  const int padded_rows = (count + width - 1) / width * width;
  const std::ptrdiff_t panel_size = static_cast<std::ptrdiff_t>(width) * padded_depth;
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  // A chunk of depth at a time for every block of rows, so that its lines stay in cache while
  // the blocks walk down them.
  constexpr int kDepthChunk = 256;
  for (int chunk = 0; chunk < depth; chunk += kDepthChunk) {
    const int chunk_end = depth - chunk < kDepthChunk ? depth : chunk + kDepthChunk;
    for (int first = 0; first < padded_rows; first += 32) {
      const int block = padded_rows - first < 32 ? padded_rows - first : 32;
      const int valid = count - first < block ? (count > first ? count - first : 0) : block;
      const __mmask64 present = valid == 32 ? 0xffffffffULL : (__mmask64{1} << valid) - 1;
      // Where each panel's run of the block's rows goes, in pieces of at most 16 rows: the same
      // for every depth step, so worked out (with its divisions) once per block.
      struct Piece {
        std::ptrdiff_t offset;  // in `out`, at the first depth step
        int first_row;          // in the block
        __mmask16 mask;
      };
      Piece pieces[32];
      int piece_count = 0;
      for (int r = 0; r < block;) {
        const int row = first + r;
        const int in_panel = row % width;
        const int run = width - in_panel < block - r ? width - in_panel : block - r;
        for (int piece = 0; piece < run; piece += 16) {
          const int rows = run - piece < 16 ? run - piece : 16;
          pieces[piece_count++] = {(row / width) * panel_size + (in_panel + piece) * kGroup,
                                   r + piece, static_cast<__mmask16>((1U << rows) - 1)};
        }
        r += run;
      }
      __m256i row_sums[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                             _mm256_setzero_si256()};
      for (int d = chunk; d < chunk_end; d += kGroup) {
        __m256i line[kGroup];
        for (int j = 0; j < kGroup; ++j) {
          if (d + j >= depth) {
            line[j] = _mm256_setzero_si256();
            continue;
          }
          const __m512i values = _mm512_maskz_loadu_epi8(
              present, rows_base + static_cast<std::ptrdiff_t>(d + j) * stride + first);
          check.Add(values);
          line[j] = _mm512_castsi512_si256(_mm512_maskz_add_epi8(present, values, delta_bytes));
        }
        const __m256i low01 = _mm256_unpacklo_epi8(line[0], line[1]);
        const __m256i high01 = _mm256_unpackhi_epi8(line[0], line[1]);
        const __m256i low23 = _mm256_unpacklo_epi8(line[2], line[3]);
        const __m256i high23 = _mm256_unpackhi_epi8(line[2], line[3]);
        // Per 128-bit lane (rows 0-15, then 16-31): rows 0-3, 4-7, 8-11, 12-15 of the lane.
        const __m256i quad0 = _mm256_unpacklo_epi16(low01, low23);
        const __m256i quad1 = _mm256_unpackhi_epi16(low01, low23);
        const __m256i quad2 = _mm256_unpacklo_epi16(high01, high23);
        const __m256i quad3 = _mm256_unpackhi_epi16(high01, high23);
        const __m256i in_order[4] = {_mm256_permute2x128_si256(quad0, quad1, 0x20),
                                     _mm256_permute2x128_si256(quad2, quad3, 0x20),
                                     _mm256_permute2x128_si256(quad0, quad1, 0x31),
                                     _mm256_permute2x128_si256(quad2, quad3, 0x31)};
        for (int k = 0; k < 4; ++k) {
          const __m256i pairs = kType == PackedType::kUint8
                                    ? _mm256_maddubs_epi16(in_order[k], ones8)
                                    : _mm256_maddubs_epi16(ones8, in_order[k]);
          row_sums[k] = _mm256_add_epi32(row_sums[k], _mm256_madd_epi16(pairs, ones16));
        }
        // Rows 0-15 and 16-31, one 4-byte group per int32 lane. A run of a panel's rows is picked
        // from the pair by a two-source permute and stored under a mask: no round trip through
        // memory, whose 64-byte loads of 32-byte stores would stall store forwarding.
        const __m512i low_rows =
            _mm512_inserti64x4(_mm512_castsi256_si512(in_order[0]), in_order[1], 1);
        const __m512i high_rows =
            _mm512_inserti64x4(_mm512_castsi256_si512(in_order[2]), in_order[3], 1);
        const std::ptrdiff_t step_offset = static_cast<std::ptrdiff_t>(d / kGroup) * width * kGroup;
        for (int p = 0; p < piece_count; ++p) {
          const __m512i picked = _mm512_permutex2var_epi32(
              low_rows, _mm512_add_epi32(lanes, _mm512_set1_epi32(pieces[p].first_row)), high_rows);
          _mm512_mask_storeu_epi32(out + pieces[p].offset + step_offset, pieces[p].mask, picked);
        }
      }
      alignas(32) std::int32_t block_sums[32];
      for (int k = 0; k < 4; ++k) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(block_sums + 8 * k), row_sums[k]);
      }
      for (int r = 0; r < valid; ++r) sums[first + r] += block_sums[r];
    }
  }
  check.Finish();
}

// Rows [0, count) of lines along the depth from `rows` on, requantized as they are read, in
// panels of `panel_width` rows (8, or a multiple of 16) to the padding: 16 rows a step of 64 depth
// values, as the two functions above step whole panels, the rows past `count` and the depth past
// `depth` zero. 8-row panels take each transposed group's low half, and the next panel its high
// half (PackEightRowPanelPairSteps).
template <PackedType kType>
void PackRowsRequantizing(const std::uint8_t* rows, std::ptrdiff_t stride,
                          const PackRequantization& requantization, int panel_width, int count,
                          int depth, std::int8_t delta, std::uint8_t* out, std::int32_t* sums) {
  const RequantizingLineReader read(rows, stride, requantization, delta);
  const int padded_depth = RoundUp(depth, kGroup);
  const int padded_rows = RoundUp(count, panel_width);
  const std::ptrdiff_t panel_size = static_cast<std::ptrdiff_t>(panel_width) * padded_depth;
  for (int first = 0; first < padded_rows; first += 16) {
    const int present = count - first < 16 ? (count > first ? count - first : 0) : 16;
    std::uint8_t* panel = out + first / panel_width * panel_size;
    PartialRowSums row_sums = {_mm512_setzero_si512(), _mm512_setzero_si512(),
                               _mm512_setzero_si512(), _mm512_setzero_si512()};
    // The first `count` groups of the step at depth d to their places.
    const auto store = [&](int d, const __m512i(&groups)[16], auto count) {
      for (int g = 0; g < count; ++g) {
        const std::ptrdiff_t group = d / kGroup + g;
        if (panel_width == 8) {
          StoreToEightRowPanelPair(groups[g], panel + group * 8 * kGroup, panel_size,
                                   first + 8 < padded_rows);
        } else {
          _mm512_storeu_si512(panel + (group * panel_width + first % panel_width) * kGroup,
                              groups[g]);
        }
      }
    };
    for (int d = 0; d < padded_depth; d += kStep) {
      const __mmask64 in_depth =
          depth - d >= kStep ? ~__mmask64{0} : (__mmask64{1} << (depth - d)) - 1;
      const SequenceStep step(d, depth);
      __m512i groups[16];
      // 16 lines and a whole step: plain loads, the lines' addresses stepped (LinesFrom), and a
      // constant count of groups to store, so that they stay in registers. Reading each line by
      // its index under masks, packing a 256 x 256 rhs for the AMX kernel took 1.2 times as long.
      if (present == 16 && depth - d >= kStep) {
        auto next_row = read.LinesFrom(first, d, step, AllLanes{});
        TransposedGroups<kType>([&](int) { return next_row(); }, groups, row_sums);
        store(d, groups, std::integral_constant<int, kStep / kGroup>());
        continue;
      }
      TransposedGroups<kType>(
          [&](int i) {
            return i < present ? read(first + i, d, step, in_depth) : _mm512_setzero_si512();
          },
          groups, row_sums);
      store(d, groups, std::min(kStep, padded_depth - d) / kGroup);
    }
    AddRowSums(row_sums, sums + first, static_cast<__mmask16>((1u << present) - 1));
  }
}

}  // namespace

void PackByteGroupsRequantizingAvx512(const MatrixView& source,
                                      const PackRequantization& requantization, PackedType type,
                                      int panel_width, int start, int count, int depth,
                                      void* packed, std::int32_t* sums) {
  const auto delta = static_cast<std::int8_t>(-PackedValueShift(type, source));
  const auto* rows = static_cast<const std::uint8_t*>(source.data) +
                     static_cast<std::ptrdiff_t>(start) * source.stride;
  auto* out = static_cast<std::uint8_t*>(packed);
  if (type == PackedType::kUint8) {
    PackRowsRequantizing<PackedType::kUint8>(rows, source.stride, requantization, panel_width,
                                             count, depth, delta, out, sums);
  } else {
    PackRowsRequantizing<PackedType::kInt8>(rows, source.stride, requantization, panel_width, count,
                                            depth, delta, out, sums);
  }
}

namespace {

// PackByteGroupsAvx512, and where kChecked PackByteGroupsCheckingAvx512 with `range`.
template <bool kChecked>
void PackByteGroups(const MatrixView& source, PackedType type, int panel_width, int start,
                    int count, int depth_start, int depth, void* packed, std::int32_t* sums,
                    RangeBits* range) {
  // A byte, not a vector, to the functions below: GCC leaves the upper halves of the vector
  // registers dirty on returning from a function with vector arguments (no vzeroupper), and
  // the driver's SSE code after it then ran slower: 64 x 64 x 64 GEMMs 4% slower in all.
  const auto delta = static_cast<std::int8_t>(-PackedValueShift(type, source));
  const auto steps = [&](const std::uint8_t* rows_base, int whole_depth, std::uint8_t* out,
                         std::int32_t* panel_sums) {
    PackUint8PanelSteps<kChecked>(rows_base, source.stride, panel_width, whole_depth, delta, out,
                                  panel_sums, range);
  };
  const auto rest = [&](int first_row, int rows, int rest_depth_start, int rest_depth,
                        std::uint8_t* out, std::int32_t* rest_sums) {
    PackByteGroupsAvx2(source, type, panel_width, first_row, rows, rest_depth_start, rest_depth,
                       out, rest_sums);
    if (kChecked) {
      // The values PackByteGroupsAvx2 read: its rows at depths [rest_depth_start, + rest_depth).
      MatrixView packed_part = source;
      packed_part.data = static_cast<const std::uint8_t*>(source.data) + rest_depth_start;
      packed_part.cols = rest_depth;
      OrBitsOfLines(packed_part, first_row, rows, range);
    }
  };
  if (source.order == Order::kColMajor) {
    const auto* rows_base = static_cast<const std::uint8_t*>(source.data) +
                            static_cast<std::ptrdiff_t>(depth_start) * source.stride + start;
    auto* out = static_cast<std::uint8_t*>(packed);
    if (type == PackedType::kUint8) {
      PackRowsAdjacent<PackedType::kUint8, kChecked>(rows_base, source.stride, count, panel_width,
                                                     depth, delta, out, sums, range);
    } else {
      PackRowsAdjacent<PackedType::kInt8, kChecked>(rows_base, source.stride, count, panel_width,
                                                    depth, delta, out, sums, range);
    }
    return;
  }
  if (type == PackedType::kInt8 && panel_width == 8) {
    // Pairs of whole panels, each with its depth tail; then a last single or partial panel.
    const std::ptrdiff_t panel_bytes =
        static_cast<std::ptrdiff_t>(panel_width) * RoundUp(depth, kGroup);
    const auto pair_steps = [&](const std::uint8_t* rows_base, int whole_depth, std::uint8_t* out,
                                std::int32_t* pair_sums) {
      PackEightRowPanelPairSteps<kChecked>(rows_base, source.stride, whole_depth, panel_bytes,
                                           delta, out, pair_sums, range);
    };
    PackWholePanelsInSteps(source, true, panel_width, start, count, depth_start, depth, kStep,
                           kGroup, static_cast<std::uint8_t*>(packed), sums, pair_steps, rest, 2,
                           true);
    return;
  }
  const bool stepped = type == PackedType::kUint8 && panel_width % 16 == 0;
  PackWholePanelsInSteps(source, stepped, panel_width, start, count, depth_start, depth, kStep,
                         kGroup, static_cast<std::uint8_t*>(packed), sums, steps, rest, 1, true);
}

}  // namespace

void PackByteGroupsAvx512(const MatrixView& source, PackedType type, int panel_width, int start,
                          int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  PackByteGroups<false>(source, type, panel_width, start, count, depth_start, depth, packed, sums,
                        nullptr);
}

void PackByteGroupsCheckingAvx512(const MatrixView& source, PackedType type, int panel_width,
                                  int start, int count, int depth_start, int depth, void* packed,
                                  std::int32_t* sums, RangeBits* range) {
  PackByteGroups<true>(source, type, panel_width, start, count, depth_start, depth, packed, sums,
                       range);
}

}  // namespace internal
}  // namespace lowbit
