// The AVX-512 VNNI kernel (compiled with -mavx512f -mavx512bw -mavx512vnni): an 8-row register
// tile, 8 rows by 32 columns, where one vpdpbusd multiplies 4 depth values of unsigned rhs bytes by
// a signed lhs group and adds them to an int32 lane; and the direct product of a short lhs with an
// rhs whose columns are adjacent, read unpacked.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

// <immintrin.h> through this header first: without GCC 12's false -Wuninitialized reports.
#include "lowbit/fixedpoint/fixedpoint_avx512.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// vpdpbusd adds the 4 products of a lane's unsigned and signed bytes to its int32 sum in one
// instruction, without the int16 saturation of vpmaddubsw: every 8-bit value is exact once
// packing centres the lhs as int8 and the rhs as uint8 (kernel.h's PackedType), which the driver
// adds back through the offsets. That is 64 products an instruction where the AVX2 tile's
// vpmaddwd does 16 and needs a vpaddd besides, at the same issue rate on the CPUs that have it.
// The signed operand is the broadcast one, the one vpdpbusd can take from memory as an embedded
// broadcast.
struct ByteDotProducts {
  using Vector = __m512i;
  static constexpr int kDepth = 4;
  static constexpr PackedType kLhsType = PackedType::kInt8;
  static constexpr PackedType kRhsType = PackedType::kUint8;
  static Vector Add(Vector sums, Vector group, Vector rhs) {
    return _mm512_dpbusd_epi32(sums, rhs, group);
  }
};

// How the tile reads a step of its rhs panel: 4 depth values of 32 columns, two vectors of 64
// bytes, stored as they are.
struct ByteRhsSteps {
  static constexpr int kStepBytes = 128;
  // How far ahead the tile's loop for more than 4 rows prefetches the rhs stream (0: not at all).
  // 1 KiB ahead made no measurable difference to 8 x 4096 x 4096 prepacked 8-bit weights.
  static constexpr int kPrefetchBytes = 0;
  static void Load(const std::uint8_t* rhs, __m512i& low, __m512i& high) {
    low = _mm512_loadu_si512(rhs);
    high = _mm512_loadu_si512(rhs + 64);
  }
};

// The tile: each step, every row's 4-byte lhs group is broadcast against the two rhs vectors that
// RhsSteps reads, and Products adds each pair to the int32 sums: 16 accumulators of the 32 zmm
// registers. The 6-row tile of the 16-register ISAs (kernel_pairs_x86.h) ran 8 to 11% slower at
// 1024^3 and 2048^3, 6 to 8% at 256^3, and 30% on 8 rows of prepacked weights (two tiles, 6 rows
// and 2): with 12 accumulators, vpdpbusd's latency leaves its two ports little slack. 6 rows by 64
// columns gained less and lost on 8 rows, 8 rows by 48 columns lost at 64^3 (interleaved runs of
// gemm_bench). The lhs panel holds a row's group after another's, 4 x 8 bytes a step.
template <typename Products, typename RhsSteps>
struct EightRowTile {
  static constexpr int kRows = 8;
  static constexpr int kCols = 32;  // two vectors of 16 int32 lanes
  static constexpr int kGroupBytes = 4;
  static constexpr int kLhsStepBytes = kGroupBytes * kRows;
  static constexpr KernelFormat kFormat{kRows, kCols, Products::kDepth, Products::kLhsType,
                                        Products::kRhsType};

  // Adds one step of the first kUsedRows rows to sums.
  template <int kUsedRows>
  __attribute__((always_inline)) static void MultiplyStep(const std::uint8_t* lhs,
                                                          const std::uint8_t* rhs,
                                                          __m512i (&sums)[kUsedRows][2]) {
    __m512i low, high;
    RhsSteps::Load(rhs, low, high);
#pragma GCC unroll 8
    for (int i = 0; i < kUsedRows; ++i) {
      std::int32_t bits;
      std::memcpy(&bits, lhs + i * kGroupBytes, sizeof(bits));
      const __m512i group = _mm512_set1_epi32(bits);
      sums[i][0] = Products::Add(sums[i][0], group, low);
      sums[i][1] = Products::Add(sums[i][1], group, high);
    }
  }

  // Prefetches the `bytes` of rhs steps that lie RhsSteps::kPrefetchBytes after `rhs`, if any.
  __attribute__((always_inline)) static void PrefetchRhs(const std::uint8_t* rhs, int bytes) {
    if constexpr (RhsSteps::kPrefetchBytes > 0) {
      for (int line = 0; line < bytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(rhs + RhsSteps::kPrefetchBytes + line),
                     _MM_HINT_T0);
      }
    }
  }

  // The first kUsedRows rows of the tile. The accumulators are arrays indexed only in loops that
  // GCC unrolls completely, so they live in registers (checked in the disassembly).
  template <int kUsedRows>
  __attribute__((noinline)) static void Rows(const std::uint8_t* lhs, const std::uint8_t* rhs,
                                             int padded_depth, std::int32_t* acc, int acc_stride,
                                             bool accumulate) {
    PrefetchAccumulatorRows(acc, acc_stride, kUsedRows, kCols);
    __m512i sums[kUsedRows][2];
    // Up to 4 rows (a short lhs: a matrix-vector product has one row) leave registers to spare:
    // odd steps go to a second set of accumulators, which halves the chains of dependent
    // additions, and two steps at a time need one prefetch of the lhs stream. On 1 row of
    // prepacked 1024 x 1024 weights, 147 GOPS without, 208 with.
    constexpr bool kSplit = kUsedRows <= 4;
    __m512i odd[kSplit ? kUsedRows : 1][2];
#pragma GCC unroll 8
    for (int i = 0; i < kUsedRows; ++i) {
      sums[i][0] = sums[i][1] = _mm512_setzero_si512();
      if (kSplit) odd[i][0] = odd[i][1] = _mm512_setzero_si512();
    }
    constexpr int kDepth = Products::kDepth;
    int d = 0;
    if constexpr (kSplit) {
      for (; d + 2 * kDepth <= padded_depth; d += 2 * kDepth) {
        _mm_prefetch(reinterpret_cast<const char*>(lhs + 8 * kLhsStepBytes), _MM_HINT_T0);
        MultiplyStep<kUsedRows>(lhs, rhs, sums);
        MultiplyStep<kUsedRows>(lhs + kLhsStepBytes, rhs + RhsSteps::kStepBytes, odd);
        lhs += 2 * kLhsStepBytes;
        rhs += 2 * RhsSteps::kStepBytes;
      }
#pragma GCC unroll 8
      for (int i = 0; i < kUsedRows; ++i) {
        sums[i][0] = _mm512_add_epi32(sums[i][0], odd[i][0]);
        sums[i][1] = _mm512_add_epi32(sums[i][1], odd[i][1]);
      }
    }
    for (; d < padded_depth; d += kDepth) {
      PrefetchRhs(rhs, RhsSteps::kStepBytes);
      MultiplyStep<kUsedRows>(lhs, rhs, sums);
      lhs += kLhsStepBytes;
      rhs += RhsSteps::kStepBytes;
    }
#pragma GCC unroll 8
    for (int i = 0; i < kUsedRows; ++i) {
      std::int32_t* const row = acc + i * acc_stride;
      __m512i low = sums[i][0], high = sums[i][1];
      if (accumulate) {
        low = _mm512_add_epi32(low, _mm512_loadu_si512(row));
        high = _mm512_add_epi32(high, _mm512_loadu_si512(row + 16));
      }
      _mm512_storeu_si512(row, low);
      _mm512_storeu_si512(row + 16, high);
    }
  }

  // A MicroKernelFunction: a short last panel multiplies only its real rows.
  static void MicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
    const auto* lhs = static_cast<const std::uint8_t*>(lhs_panel);
    const auto* rhs = static_cast<const std::uint8_t*>(rhs_panel);
    ForRowCount<kRows>(rows, [&](auto used_rows) {
      Rows<decltype(used_rows)::value>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    });
  }
};

using Tile = EightRowTile<ByteDotProducts, ByteRhsSteps>;
constexpr KernelFormat kFormat = Tile::kFormat;

void PackLhsAvx512Vnni(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackByteGroupsAvx512(source, kFormat.lhs_type, kFormat.lhs_rows, start, count, depth_start, depth,
                       packed, sums);
}

void PackRhsAvx512Vnni(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackByteGroupsAvx512(source, kFormat.rhs_type, kFormat.rhs_cols, start, count, depth_start, depth,
                       packed, sums);
}

// Prepacked weights of at most 4 bits (PackedType::kUint4Pairs): a step of the tile's rhs panel,
// 4 depth values of 32 columns (two vectors of 64 bytes in kUint8's layout), is stored in 64
// bytes, byte j holding byte j of the first vector in its low nibble and byte j of the second in
// its high one. A step then costs three instructions more and reads half the bytes, which is what
// a product bound by reading its weights from memory gains.
struct Uint4PairSteps {
  static constexpr int kStepBytes = 64;
  // 8 x 4096 x 4096 weights, streamed from memory: 470-490 GOPS without a prefetch, 505-528 with
  // it 512 bytes or 2 KiB ahead. On 1 row (the split loop) prefetching cost 2 to 3%.
  static constexpr int kPrefetchBytes = 512;
  static void Load(const std::uint8_t* rhs, __m512i& low, __m512i& high) {
    const __m512i pairs = _mm512_loadu_si512(rhs);
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    low = _mm512_and_si512(pairs, nibble);
    high = _mm512_and_si512(_mm512_srli_epi16(pairs, 4), nibble);
  }
};

struct Uint4PairProducts : ByteDotProducts {
  static constexpr PackedType kRhsType = PackedType::kUint4Pairs;
};

using Uint4PairTile = EightRowTile<Uint4PairProducts, Uint4PairSteps>;

// The kUint8 panels back from kUint4Pairs ones: each step's 64 bytes into two vectors.
void UnfoldUint4Pairs(const void* packed, int panels, int padded_depth, void* out) {
  const auto* in = static_cast<const std::uint8_t*>(packed);
  auto* bytes = static_cast<std::uint8_t*>(out);
  const std::int64_t steps = static_cast<std::int64_t>(panels) * padded_depth / kFormat.depth_group;
  for (std::int64_t step = 0; step < steps; ++step) {
    __m512i low, high;
    Uint4PairSteps::Load(in + step * Uint4PairSteps::kStepBytes, low, high);
    _mm512_storeu_si512(bytes + 2 * step * Uint4PairSteps::kStepBytes, low);
    _mm512_storeu_si512(bytes + (2 * step + 1) * Uint4PairSteps::kStepBytes, high);
  }
}

// Packs kUint8 byte groups a panel at a time, then folds each step's two vectors into one. Only
// prepacking calls it, once per set of weights: the panel buffer is allocated here.
void PackRhsUint4Pairs(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  constexpr int kWidth = kFormat.rhs_cols;
  constexpr int kStep = 2 * Uint4PairSteps::kStepBytes;
  std::vector<std::uint8_t> panel(static_cast<std::size_t>(kWidth) *
                                  RoundUp(depth, kFormat.depth_group));
  auto* out = static_cast<std::uint8_t*>(packed);
  for (int first = 0; first < count; first += kWidth) {
    PackByteGroupsAvx512(source, PackedType::kUint8, kWidth, start + first,
                         std::min(kWidth, count - first), depth_start, depth, panel.data(),
                         sums + first);
    for (std::size_t step = 0; step < panel.size(); step += kStep) {
      for (int j = 0; j < Uint4PairSteps::kStepBytes; ++j) {
        *out++ = static_cast<std::uint8_t>(panel[step + j] |
                                           panel[step + Uint4PairSteps::kStepBytes + j] << 4);
      }
    }
  }
}

// The sum of the 16 lanes, wrapping. In vector lanes throughout: GCC's _mm512_reduce_add_epi32
// adds the last lanes as scalar ints, whose overflow is undefined behaviour.
std::int32_t SumOfLanes(__m512i v) {
  v = _mm512_add_epi32(v, _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m256i half = _mm512_castsi512_si256(v);
  __m128i quarter = _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
  quarter = _mm_add_epi32(quarter, _mm_shuffle_epi32(quarter, _MM_SHUFFLE(1, 0, 3, 2)));
  quarter = _mm_add_epi32(quarter, _mm_shuffle_epi32(quarter, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(quarter);
}

// The sums of the 16 lanes of a, b, c and d, wrapping, in the lanes of one vector, in that order:
// 14 instructions where SumOfLanes takes 9 for each. The 128-bit lanes of a and b, then of c and
// d, are added in halves; then the lanes of the two, so that lane k holds the four dwords whose
// sum is the k-th's; then the dwords within each lane.
inline __m128i SumsOfLanes(__m512i a, __m512i b, __m512i c, __m512i d) {
  const auto halves = [](__m512i x, __m512i y) {
    // [x0 + x2, x1 + x3, y0 + y2, y1 + y3] of 128-bit lanes.
    return _mm512_add_epi32(_mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_i64x2(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
  };
  const __m512i ab = halves(a, b), cd = halves(c, d);
  __m512i lanes = _mm512_add_epi32(_mm512_shuffle_i64x2(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_i64x2(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  lanes = _mm512_add_epi32(lanes, _mm512_shuffle_epi32(lanes, _MM_PERM_CDAB));
  lanes = _mm512_add_epi32(lanes, _mm512_shuffle_epi32(lanes, _MM_PERM_BADC));
  return _mm512_castsi512_si128(_mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), lanes));
}

// One step of DirectColumns: 64 depth values from `d` on, those outside `mask` read as zeros
// (`ones` masked the same, for the column sums).
template <int kRows, int kCols, bool kSumColumns, bool kShifted>
__attribute__((always_inline)) inline void DirectStep(
    const std::int8_t* lhs, std::ptrdiff_t lhs_stride, const std::uint8_t* rhs,
    std::ptrdiff_t stride, std::ptrdiff_t d, __mmask64 mask, __m512i delta, __m512i ones,
    __m512i (&sums)[kRows][kCols], __m512i (&col)[kCols]) {
  __m512i values[kCols];
#pragma GCC unroll 4
  for (int j = 0; j < kCols; ++j) {
    values[j] = _mm512_maskz_loadu_epi8(mask, rhs + j * stride + d);
    if (kShifted) values[j] = _mm512_add_epi8(values[j], delta);
    if (kSumColumns) col[j] = _mm512_dpbusd_epi32(col[j], values[j], ones);
  }
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    const __m512i row = _mm512_maskz_loadu_epi8(mask, lhs + i * lhs_stride + d);
#pragma GCC unroll 4
    for (int j = 0; j < kCols; ++j) sums[i][j] = _mm512_dpbusd_epi32(sums[i][j], values[j], row);
  }
}

// `bytes` before `p`, as an address: only masked loads, which leave the bytes before `p` alone,
// read there.
template <typename T>
const T* LineStart(const T* p, std::uintptr_t bytes) {
  return reinterpret_cast<const T*>(reinterpret_cast<std::uintptr_t>(p) - bytes);
}

// kCols rhs columns of the direct product (DirectRhsFunction) against kRows lhs rows: 64 depth
// values of each column a step, one vpdpbusd per row and column and one by ones for the column's
// sum where kSumColumns, reduced to single sums after the last step. Values are shifted by
// `delta` only where kShifted: for uint8 rhs values, as the benchmarks' are, the vpaddb of each
// value vector cost 1 x 1024 x 1024 15% (185 -> 217 GOPS without), 8 rows 9% (376 -> 413). The
// steps follow the first column's 64-byte lines: a load across two lines costs the streamed rhs
// both (1 x 1024 x 1024 with columns 16 bytes into their lines: 110 GOPS across lines, 185 along
// them). Masked loads read the partial first and last steps: the bytes outside the depth load as
// zeros.
template <int kRows, int kCols, bool kSumColumns, bool kShifted>
void DirectColumns(const std::int8_t* lhs, std::ptrdiff_t lhs_stride, int depth,
                   const std::uint8_t* rhs, std::ptrdiff_t stride, __m512i delta, std::int32_t* acc,
                   int acc_stride, std::int32_t* col_sums) {
  constexpr int kStep = 64;
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i sums[kRows][kCols];
  __m512i col[kCols];
#pragma GCC unroll 4
  for (int j = 0; j < kCols; ++j) {
    col[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) sums[i][j] = _mm512_setzero_si512();
  }
  // Depth value d is at line offset lead + d.
  const int lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(rhs) % kStep);
  lhs = LineStart(lhs, lead);
  rhs = LineStart(rhs, lead);
  const std::ptrdiff_t end = lead + static_cast<std::ptrdiff_t>(depth);
  const std::ptrdiff_t whole_end = end / kStep * kStep;
  const __mmask64 all = ~__mmask64{0};
  // The first line's step, from lead to the end of the depth or of the line (nothing for an empty
  // depth), and the last line's, where the depth ends inside a later line (else nothing).
  const __mmask64 head = (all << lead) & (end < kStep ? ~(all << end) : all);
  const __mmask64 tail = end > kStep && end > whole_end ? ~(all << (end - whole_end)) : 0;
  // The partial steps first and unconditionally, then whole steps with a constant mask, so that
  // the lhs loads fold into vpdpbusd and the accumulators stay where they are. With a partial step
  // after the loop, or steps under conditions, GCC kept copies of the accumulators: a register
  // move or a store to the stack for most vpdpbusd in the loop (8 x 1024 x 1024 at 295 GOPS
  // against 327). So did reducing all the accumulators at once by a transposing tree (45
  // instructions for 16 sums): 8 x 1024 x 1024 358 -> 320 GOPS. Four at a time, a row's or two
  // rows' (SumsOfLanes), they stay put: 340 -> 379, and 1 x 1024 x 1024 178 -> 185.
  DirectStep<kRows, kCols, kSumColumns, kShifted>(lhs, lhs_stride, rhs, stride, 0, head, delta,
                                                  _mm512_maskz_mov_epi8(head, ones), sums, col);
  DirectStep<kRows, kCols, kSumColumns, kShifted>(lhs, lhs_stride, rhs, stride, whole_end, tail,
                                                  delta, _mm512_maskz_mov_epi8(tail, ones), sums,
                                                  col);
  for (std::ptrdiff_t d = kStep; d < whole_end; d += kStep) {
    DirectStep<kRows, kCols, kSumColumns, kShifted>(lhs, lhs_stride, rhs, stride, d, all, delta,
                                                    ones, sums, col);
  }
  // Four sums at a time where they go to whole rows of 4 or pairs of rows of 2.
  int reduced_rows = 0;
  if constexpr (kCols == 4) {
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + i * acc_stride),
                       SumsOfLanes(sums[i][0], sums[i][1], sums[i][2], sums[i][3]));
    }
    if constexpr (kSumColumns) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(col_sums),
                       SumsOfLanes(col[0], col[1], col[2], col[3]));
    }
    return;
  } else if constexpr (kCols == 2) {
#pragma GCC unroll 4
    for (int i = 0; i + 1 < kRows; i += 2) {
      const __m128i four = SumsOfLanes(sums[i][0], sums[i][1], sums[i + 1][0], sums[i + 1][1]);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(acc + i * acc_stride), four);
      _mm_storeh_pd(reinterpret_cast<double*>(acc + (i + 1) * acc_stride), _mm_castsi128_pd(four));
    }
    reduced_rows = kRows / 2 * 2;
  }
#pragma GCC unroll 4
  for (int j = 0; j < kCols; ++j) {
    if (kSumColumns) col_sums[j] = SumOfLanes(col[j]);
#pragma GCC unroll 8
    for (int i = reduced_rows; i < kRows; ++i) acc[i * acc_stride + j] = SumOfLanes(sums[i][j]);
  }
}

// Four columns at a time for up to four rows, three for up to six, two for more: the
// accumulators, a step's rhs values and two constants stay within the 32 zmm registers.
void DirectRhsAvx512Vnni(const void* lhs, std::ptrdiff_t lhs_stride, int rows, int depth,
                         const MatrixView& rhs_columns, int first_column, int cols,
                         std::int32_t* acc, int acc_stride, std::int32_t* col_sums) {
  const auto* lhs_values = static_cast<const std::int8_t*>(lhs);
  const std::ptrdiff_t stride = rhs_columns.stride;
  const auto* rhs = static_cast<const std::uint8_t*>(rhs_columns.data) + first_column * stride;
  // The rhs values as packing to kFormat.rhs_type (kUint8) stores them, unsigned for vpdpbusd:
  // int8 values + 2^(bits - 1).
  const int shift = PackedValueShift(kFormat.rhs_type, rhs_columns);
  const __m512i delta = _mm512_set1_epi8(static_cast<char>(-shift));
  ForRowCount<kMaxDirectRhsRows>(rows, [&](auto row_count) {
    constexpr int kRows = decltype(row_count)::value;
    constexpr int kCols = kRows <= 4 ? 4 : kRows <= 6 ? 3 : 2;
    const auto run = [&](auto sum_columns, auto shifted) {
      constexpr bool kSumColumns = decltype(sum_columns)::value;
      constexpr bool kShifted = decltype(shifted)::value;
      // No offset from a null col_sums.
      const auto column_sums = [&](int j) { return kSumColumns ? col_sums + j : nullptr; };
      int j = 0;
      for (; j + kCols <= cols; j += kCols) {
        DirectColumns<kRows, kCols, kSumColumns, kShifted>(lhs_values, lhs_stride, depth,
                                                           rhs + j * stride, stride, delta, acc + j,
                                                           acc_stride, column_sums(j));
      }
      for (; j < cols; ++j) {
        DirectColumns<kRows, 1, kSumColumns, kShifted>(lhs_values, lhs_stride, depth,
                                                       rhs + j * stride, stride, delta, acc + j,
                                                       acc_stride, column_sums(j));
      }
    };
    const auto with_shift = [&](auto sum_columns) {
      if (shift != 0) {
        run(sum_columns, std::true_type());
      } else {
        run(sum_columns, std::false_type());
      }
    };
    if (col_sums != nullptr) {
      with_shift(std::true_type());
    } else {
      with_shift(std::false_type());
    }
  });
}

}  // namespace

const KernelImplementation& Avx512VnniKernel() {
  static const KernelImplementation implementation{Kernel::kAvx512Vnni, kFormat,
                                                   &PackLhsAvx512Vnni,  &PackRhsAvx512Vnni,
                                                   &Tile::MicroKernel,  &DirectRhsAvx512Vnni};
  return implementation;
}

const KernelImplementation& Avx512VnniUint4PairsKernel() {
  static const KernelImplementation implementation{
      Kernel::kAvx512Vnni,         Uint4PairTile::kFormat,
      &PackLhsAvx512Vnni,          &PackRhsUint4Pairs,
      &Uint4PairTile::MicroKernel, nullptr,
      &Avx512VnniKernel,           &UnfoldUint4Pairs};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
