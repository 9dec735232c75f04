// The direct products of the AVX-512 VNNI kernel (DirectRhsFunction and
// DirectRhsRequantizingFunction, compiled with -mavx512f -mavx512bw -mavx512vnni): a short lhs
// against rhs columns read where they lie, as they are or requantized, with vpdpbusd.
#include <cstddef>
#include <cstdint>
#include <type_traits>

// <immintrin.h> through this header first: without GCC 12's false -Wuninitialized reports.
#include "lowbit/fixedpoint/fixedpoint_avx512.h"
#include "lowbit/internal/driver/range_bits_avx512.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/requantize_avx512.h"

namespace lowbit {
namespace internal {
namespace {

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

// The rhs values of a direct product as they lie, the bytes of column j from rhs + j * stride on,
// shifted by `delta` where kShifted. Where kCheckRange, the bytes plus `range_bias` are OR'ed into
// the range bits: only int8 values are shifted, and only their ranges have a bias (RangeBits).
template <bool kShifted, bool kCheckRange>
class ColumnsAsTheyLie {
 public:
  ColumnsAsTheyLie(const std::uint8_t* rhs, std::ptrdiff_t stride, __m512i delta,
                   __m512i range_bias)
      : rhs_(rhs), stride_(stride), delta_(delta), range_bias_(range_bias) {}

  // Where the steps start: at the first column's 64-byte line, `lead` bytes before it. A load
  // across two lines costs the streamed rhs both (1 x 1024 x 1024 with columns 16 bytes into their
  // lines: 110 GOPS across lines, 185 along them).
  int Lead() const { return static_cast<int>(reinterpret_cast<std::uintptr_t>(rhs_) % 64); }
  void StartAt(int lead) {
    rhs_ = reinterpret_cast<const std::uint8_t*>(reinterpret_cast<std::uintptr_t>(rhs_) - lead);
  }

  std::ptrdiff_t Step(std::ptrdiff_t d) const { return d; }
  template <typename Lanes>
  __m512i Load(int j, std::ptrdiff_t d, Lanes mask) {
    __m512i values = _mm512_maskz_loadu_epi8(mask, rhs_ + j * stride_ + d);
    if (kCheckRange) {
      // An empty asm that GCC must assume changes the vector: without it, GCC 12 loaded the
      // first column's vector twice a step, for the check and for vpdpbusd, and declared 1 x 1
      // bits ran 1 x 1024 x 1024 at 0.88 to 0.93 of the 8-bit product's speed, against 0.94 to
      // 1.01.
      asm("" : "+v"(values));
      range_bits_ =
          _mm512_or_si512(range_bits_, kShifted ? _mm512_add_epi8(values, range_bias_) : values);
    }
    return kShifted ? _mm512_add_epi8(values, delta_) : values;
  }
  __m512i RangeBitsFound() const { return range_bits_; }

 private:
  const std::uint8_t* rhs_;
  std::ptrdiff_t stride_;
  __m512i delta_;
  __m512i range_bias_;
  __m512i range_bits_ = _mm512_setzero_si512();
};

// How a direct product's rhs values are requantized (RequantizedColumns), by the requantization's
// scale and factor.
enum class RequantizedForm {
  kOneBit,   // a scale of 1: a compare
  kScaled,   // a factor above 1: the requantized value indexes a table of factor * q + delta
  kShifted,  // a factor of 1: the requantized value plus delta
};

// The rhs values of a direct product requantized as they are read, column j being line j of the
// requantization: the values the kernel's requantizing packer stores (RequantizingLineReader), in
// fewer instructions where the form allows. The steps start at the first depth value, where the
// rounding sequence's blocks do.
template <RequantizedForm kForm>
class RequantizedColumns {
 public:
  RequantizedColumns(const std::uint8_t* rhs, std::ptrdiff_t stride,
                     const PackRequantization& requantization, std::int8_t delta, int depth)
      : rhs_(rhs),
        stride_(stride),
        table_plus_one_(requantization.table_plus_one),
        phases_(requantization.phases),
        phase_stride_(requantization.phase_stride),
        depth_(depth),
        requantize_(requantization.scale, requantization.flip),
        delta_(_mm512_set1_epi8(delta)),
        scaled_values_(kForm == RequantizedForm::kOneBit
                           ? _mm512_set1_epi8(static_cast<char>(requantization.factor + delta))
                           : RequantizingLineReader::ScaledValues(requantization.factor, delta)) {}

  int Lead() const { return 0; }
  void StartAt(int) {}

  struct StepAt {
    int d;
    SequenceStep sequence;
  };
  StepAt Step(std::ptrdiff_t d) const {
    return {static_cast<int>(d), SequenceStep(static_cast<int>(d), depth_)};
  }
  // Lanes outside `mask` may hold anything: the product's lhs and ones are zero there.
  template <typename Lanes>
  __m512i Load(int j, const StepAt& step, Lanes mask) const {
    // An empty depth's step, whose line has no phases to read.
    if constexpr (!std::is_same_v<Lanes, AllLanes>) {
      if (mask == 0) return _mm512_setzero_si512();
    }
    const __m512i values = requantize_.Load(rhs_ + j * stride_ + step.d, mask);
    const __m512i offsets_plus_one =
        step.sequence.Offsets(table_plus_one_, phases_ + j * phase_stride_, mask);
    if constexpr (kForm == RequantizedForm::kOneBit) {
      // (u + offset) / 255 is 1 where u > ~(offset + 1) (RequantizingLineReader::OneBitMask).
      const __mmask64 ones = _mm512_cmpgt_epu8_mask(
          values,
          _mm512_ternarylogic_epi32(offsets_plus_one, offsets_plus_one, offsets_plus_one, 0x55));
      return _mm512_mask_blend_epi8(ones, delta_, scaled_values_);
    }
    const __m512i requantized = requantize_(values, offsets_plus_one, mask);
    if constexpr (kForm == RequantizedForm::kScaled) {
      return _mm512_shuffle_epi8(scaled_values_, requantized);
    }
    return _mm512_add_epi8(requantized, delta_);
  }
  __m512i RangeBitsFound() const { return _mm512_setzero_si512(); }

 private:
  const std::uint8_t* rhs_;
  std::ptrdiff_t stride_;
  const std::uint8_t* table_plus_one_;
  const std::uint8_t* phases_;
  int phase_stride_;
  int depth_;
  Requantizer requantize_;
  __m512i delta_;
  // kOneBit: the value of a 1; kScaled: the table.
  __m512i scaled_values_;
};

// One step of DirectColumns: 64 depth values from `d` on, those outside `mask` read as zeros
// (`ones` masked the same, for the column sums).
template <int kRows, int kCols, bool kSumColumns, typename Columns, typename Lanes>
__attribute__((always_inline)) inline void DirectStep(const std::int8_t* lhs,
                                                      std::ptrdiff_t lhs_stride, Columns& columns,
                                                      std::ptrdiff_t d, Lanes mask, __m512i ones,
                                                      __m512i (&sums)[kRows][kCols],
                                                      __m512i (&col)[kCols]) {
  __m512i values[kCols];
  const auto step = columns.Step(d);
#pragma GCC unroll 4
  for (int j = 0; j < kCols; ++j) {
    values[j] = columns.Load(j, step, mask);
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

// kCols rhs columns of the direct product (DirectRhsFunction) from `columns` against kRows lhs
// rows: 64 depth values of each column a step, one vpdpbusd per row and column and one by ones for
// the column's sum where kSumColumns, reduced to single sums after the last step. Masked loads
// read the partial first and last steps: the bytes outside the depth load as zeros (within every
// declared range). Returns the range bits `columns` found (by value: through a reference, clang's
// AddressSanitizer builds of this file took a third longer).
template <int kRows, int kCols, bool kSumColumns, typename Columns>
__m512i DirectColumns(const std::int8_t* lhs, std::ptrdiff_t lhs_stride, int depth, Columns columns,
                      std::int32_t* acc, int acc_stride, std::int32_t* col_sums) {
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
  // Depth value d is at step offset lead + d.
  const int lead = columns.Lead();
  lhs = LineStart(lhs, lead);
  columns.StartAt(lead);
  const std::ptrdiff_t end = lead + static_cast<std::ptrdiff_t>(depth);
  const std::ptrdiff_t whole_end = end / kStep * kStep;
  const __mmask64 all = ~__mmask64{0};
  // The first step, from lead to the end of the depth or of the step (nothing for an empty
  // depth), and the last one, where the depth ends inside a later step (else none).
  const __mmask64 head = (all << lead) & (end < kStep ? ~(all << end) : all);
  const __mmask64 tail = end > kStep && end > whole_end ? ~(all << (end - whole_end)) : 0;
  // The partial steps first, then whole steps with a constant mask, so that the lhs loads fold
  // into vpdpbusd and the accumulators stay where they are. With a partial step after the loop,
  // GCC kept copies of the accumulators: a register move or a store to the stack for most
  // vpdpbusd in the loop (8 x 1024 x 1024 at 295 GOPS against 327). So did reducing all the
  // accumulators at once by a transposing tree (45 instructions for 16 sums): 8 x 1024 x 1024
  // 358 -> 320 GOPS. Four at a time, a row's or two rows' (SumsOfLanes), they stay put: 340 ->
  // 379, and 1 x 1024 x 1024 178 -> 185.
  DirectStep<kRows, kCols, kSumColumns>(lhs, lhs_stride, columns, 0, head,
                                        _mm512_maskz_mov_epi8(head, ones), sums, col);
  // No tail where the depth ends with a whole step: its loads, all lanes masked off, would address
  // the bytes past the lhs row, and a masked load touching a page never written (the scratch's
  // next rows) takes a slow assist however few of its lanes it reads. A requantized 1 x 1024 x
  // 1024 product spent 40% of its time in those loads, about 90 ns a group of four columns.
  if (tail != 0) {
    DirectStep<kRows, kCols, kSumColumns>(lhs, lhs_stride, columns, whole_end, tail,
                                          _mm512_maskz_mov_epi8(tail, ones), sums, col);
  }
  for (std::ptrdiff_t d = kStep; d < whole_end; d += kStep) {
    DirectStep<kRows, kCols, kSumColumns>(lhs, lhs_stride, columns, d, AllLanes{}, ones, sums, col);
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
    return columns.RangeBitsFound();
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
  return columns.RangeBitsFound();
}

// The direct product of at most kMaxRows (up to kShortDirectRhsRows) rows against `cols` columns,
// the columns from j on being `columns_from(j)`: four columns at a time for up to four rows, three
// for up to six, two for more, so that the accumulators, a step's rhs values and the constants (and
// the range check's two) stay within the 32 zmm registers. Returns the range bits the columns
// found.
template <int kMaxRows, bool kSumColumns, typename ColumnsFrom>
__m512i DirectShortLhs(const std::int8_t* lhs, std::ptrdiff_t lhs_stride, int rows, int depth,
                       int cols, ColumnsFrom columns_from, std::int32_t* acc, int acc_stride,
                       std::int32_t* col_sums) {
  __m512i range_bits = _mm512_setzero_si512();
  ForRowCount<kMaxRows>(rows, [&](auto row_count) {
    constexpr int kRows = decltype(row_count)::value;
    constexpr int kCols = kRows <= 4 ? 4 : kRows <= 6 ? 3 : 2;
    // No offset from a null col_sums.
    const auto column_sums = [&](int j) { return kSumColumns ? col_sums + j : nullptr; };
    int j = 0;
    for (; j + kCols <= cols; j += kCols) {
      range_bits = _mm512_or_si512(range_bits, DirectColumns<kRows, kCols, kSumColumns>(
                                                   lhs, lhs_stride, depth, columns_from(j), acc + j,
                                                   acc_stride, column_sums(j)));
    }
    for (; j < cols; ++j) {
      range_bits = _mm512_or_si512(
          range_bits, DirectColumns<kRows, 1, kSumColumns>(lhs, lhs_stride, depth, columns_from(j),
                                                           acc + j, acc_stride, column_sums(j)));
    }
  });
  return range_bits;
}

}  // namespace

void DirectRhsAvx512Vnni(const void* lhs, std::ptrdiff_t lhs_stride, int rows, int depth,
                         const MatrixView& rhs_columns, int first_column, int cols,
                         std::int32_t* acc, int acc_stride, std::int32_t* col_sums,
                         RangeBits* range) {
  const auto* lhs_values = static_cast<const std::int8_t*>(lhs);
  // More rows than the accumulators hold go in groups of 8, each group down a chunk of 16 columns
  // while the chunk's values are in L1 (16 KiB at a depth of 1024): the rhs comes from memory
  // once. 16 x 1024 x 1024 ran at 1.11 to 1.14 times oneDNN's speed so against 1.02 to 1.03
  // packed (paired rounds, the two builds alternated twice), 16 x 1024 x 512 at 0.91 against
  // 0.96 to 1.01, so the kernel takes such rows only for deep products (direct_rhs_deep_depth).
  if (rows > kShortDirectRhsRows) {
    constexpr int kChunk = 16;
    for (int chunk = 0; chunk < cols; chunk += kChunk) {
      const int chunk_cols = cols - chunk < kChunk ? cols - chunk : kChunk;
      for (int row = 0; row < rows; row += kShortDirectRhsRows) {
        // The column sums and the range check once, with the first group.
        DirectRhsAvx512Vnni(lhs_values + row * lhs_stride, lhs_stride,
                            rows - row < kShortDirectRhsRows ? rows - row : kShortDirectRhsRows,
                            depth, rhs_columns, first_column + chunk, chunk_cols,
                            acc + row * acc_stride + chunk, acc_stride,
                            row == 0 && col_sums != nullptr ? col_sums + chunk : nullptr,
                            row == 0 ? range : nullptr);
      }
    }
    return;
  }
  const std::ptrdiff_t stride = rhs_columns.stride;
  const auto* rhs = static_cast<const std::uint8_t*>(rhs_columns.data) + first_column * stride;
  // The rhs values as the tile's packing stores them (PackedType::kUint8), unsigned for
  // vpdpbusd: int8 values + 2^(bits - 1). For uint8 rhs values, as the benchmarks' are, the
  // vpaddb of each value vector cost 1 x 1024 x 1024 15% (185 -> 217 GOPS without), 8 rows 9%
  // (376 -> 413): the product shifts values only where it must.
  const int shift = PackedValueShift(PackedType::kUint8, rhs_columns);
  const __m512i delta = _mm512_set1_epi8(static_cast<char>(-shift));
  const __m512i range_bias =
      _mm512_set1_epi8(static_cast<char>(range != nullptr ? range->bias : 0));
  // Each form of the product has its own code, the range check's too: summing columns that the
  // lhs offsets do not need (one more vpdpbusd a column: a ninth of 8 rows' and half of 1 row's)
  // ran declared 1 x 1 bits at 0.79 of the 8-bit product's speed on 1 x 1024 x 1024 and 0.88 on
  // 8 x 1024 x 1024.
  const auto run = [&](auto sum_columns, auto shifted, auto check_range) {
    using Columns = ColumnsAsTheyLie<decltype(shifted)::value, decltype(check_range)::value>;
    return DirectShortLhs<kShortDirectRhsRows, decltype(sum_columns)::value>(
        lhs_values, lhs_stride, rows, depth, cols,
        [&](int j) { return Columns(rhs + j * stride, stride, delta, range_bias); }, acc,
        acc_stride, col_sums);
  };
  const auto with_shift = [&](auto sum_columns, auto check_range) {
    return shift != 0 ? run(sum_columns, std::true_type(), check_range)
                      : run(sum_columns, std::false_type(), check_range);
  };
  const auto with_sums = [&](auto check_range) {
    return col_sums != nullptr ? with_shift(std::true_type(), check_range)
                               : with_shift(std::false_type(), check_range);
  };
  if (range != nullptr) {
    OrBytesInto(with_sums(std::true_type()), range);
  } else {
    with_sums(std::false_type());
  }
}

void DirectRhsRequantizingAvx512Vnni(const void* lhs, std::ptrdiff_t lhs_stride, int rows,
                                     int depth, const MatrixView& rhs_columns,
                                     const PackRequantization& requantization, int first_column,
                                     int cols, std::int32_t* acc, int acc_stride,
                                     std::int32_t* col_sums) {
  const auto* lhs_values = static_cast<const std::int8_t*>(lhs);
  const std::ptrdiff_t stride = rhs_columns.stride;
  const auto* rhs = static_cast<const std::uint8_t*>(rhs_columns.data) + first_column * stride;
  const auto delta = static_cast<std::int8_t>(-PackedValueShift(PackedType::kUint8, rhs_columns));
  const auto run = [&](auto sum_columns, auto form) {
    using Columns = RequantizedColumns<decltype(form)::value>;
    DirectShortLhs<kRequantizingDirectRhsRows, decltype(sum_columns)::value>(
        lhs_values, lhs_stride, rows, depth, cols,
        [&](int j) {
          PackRequantization from_j = requantization;
          from_j.phases += j * requantization.phase_stride;
          return Columns(rhs + j * stride, stride, from_j, delta, depth);
        },
        acc, acc_stride, col_sums);
  };
  const auto with_form = [&](auto sum_columns) {
    using Form = RequantizedForm;
    if (requantization.scale == 1) {
      run(sum_columns, std::integral_constant<Form, Form::kOneBit>());
    } else if (requantization.factor > 1) {
      run(sum_columns, std::integral_constant<Form, Form::kScaled>());
    } else {
      run(sum_columns, std::integral_constant<Form, Form::kShifted>());
    }
  };
  if (col_sums != nullptr) {
    with_form(std::true_type());
  } else {
    with_form(std::false_type());
  }
}

}  // namespace internal
}  // namespace lowbit
