// The AVX2 output writer: runs an OutputProgram eight accumulators at a time along each result
// line and stores them narrowed to the result type. Compiled with -mavx2 only; each operation
// reproduces its stage's scalar Eval exactly (test/output_writer_test.cc).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "internal/output.h"

namespace lowbit {
namespace internal {
namespace {

constexpr int kLanes = 8;

// SaturatingRoundingDoublingHighMul: floor((a*b + 2^30) / 2^31), which equals gemmlowp's nudged
// truncation (VQRDMULH). Bits 31..62 of the 64-bit sum are the result: a logical shift gives
// them as well as an arithmetic one, which AVX2 lacks for 64-bit lanes.
__m256i SaturatingRoundingDoublingHighMul(__m256i a, __m256i b) {
  const __m256i nudge = _mm256_set1_epi64x(std::int64_t{1} << 30);
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(a, b), nudge);
  const __m256i odd =
      _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32)), nudge);
  const __m256i result =
      _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xaa);
  // INT32_MIN * INT32_MIN gives 2^31, read as INT32_MIN: flipping every bit saturates it.
  const __m256i min = _mm256_set1_epi32(INT32_MIN);
  const __m256i overflow = _mm256_and_si256(_mm256_cmpeq_epi32(a, min), _mm256_cmpeq_epi32(b, min));
  return _mm256_xor_si256(result, overflow);
}

// RoundingDivideByPOT with a shift in [0, 31] per lane: ties away from zero.
__m256i RoundingDivideByPOT(__m256i x, __m256i shift) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, shift), one);
  const __m256i remainder = _mm256_and_si256(x, mask);
  const __m256i threshold = _mm256_add_epi32(_mm256_srli_epi32(mask, 1), _mm256_srli_epi32(x, 31));
  return _mm256_sub_epi32(_mm256_srav_epi32(x, shift), _mm256_cmpgt_epi32(remainder, threshold));
}

__m256i SaturatingShiftLeft(__m256i x, int shift) {
  const __m256i high = _mm256_set1_epi32(INT32_MAX >> shift);
  const __m256i low = _mm256_set1_epi32(INT32_MIN >> shift);
  const __m256i shifted = _mm256_sll_epi32(x, _mm_cvtsi32_si128(shift));
  const __m256i clamped_high =
      _mm256_blendv_epi8(shifted, _mm256_set1_epi32(INT32_MAX), _mm256_cmpgt_epi32(x, high));
  return _mm256_blendv_epi8(clamped_high, _mm256_set1_epi32(INT32_MIN), _mm256_cmpgt_epi32(low, x));
}

// Where the lanes of one step sit: `count` consecutive entries of a result row (along_cols)
// or column, starting at (row, col).
struct Lanes {
  int row;
  int col;
  int count;
  bool along_cols;
};

__m256i LoadPartial(const std::int32_t* values, int count) {
  if (count == kLanes) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values));
  alignas(32) std::int32_t buffer[kLanes] = {};
  std::memcpy(buffer, values, sizeof(std::int32_t) * count);
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(buffer));
}

// A parameter's value for each lane: per-channel values along the lanes are loaded, across
// them broadcast.
__m256i ParameterLanes(const ChannelParameter& parameter, const Lanes& lanes) {
  if (parameter.per_channel == nullptr) return _mm256_set1_epi32(parameter.value);
  const bool per_row = parameter.axis == ChannelAxis::kRow;
  const int channel = per_row ? lanes.row : lanes.col;
  __m256i values = per_row != lanes.along_cols
                       ? LoadPartial(parameter.per_channel + channel, lanes.count)
                       : _mm256_set1_epi32(parameter.per_channel[channel]);
  if (parameter.negated) values = _mm256_sub_epi32(_mm256_setzero_si256(), values);
  return values;
}

__m256i Run(const OutputInstruction& instruction, __m256i v, const Lanes& lanes) {
  switch (instruction.opcode) {
    case OutputOpcode::kAdd:
      return _mm256_add_epi32(v, ParameterLanes(instruction.first, lanes));
    case OutputOpcode::kScaleByFixedPoint: {
      const __m256i exponent = ParameterLanes(instruction.second, lanes);
      const __m256i zero = _mm256_setzero_si256();
      const __m256i left = _mm256_max_epi32(exponent, zero);
      const __m256i right = _mm256_max_epi32(_mm256_sub_epi32(zero, exponent), zero);
      const __m256i scaled = SaturatingRoundingDoublingHighMul(
          _mm256_sllv_epi32(v, left), ParameterLanes(instruction.first, lanes));
      return _mm256_add_epi32(RoundingDivideByPOT(scaled, right),
                              _mm256_set1_epi32(instruction.offset));
    }
    case OutputOpcode::kSaturatingShiftLeft:
      return SaturatingShiftLeft(v, instruction.limit);
    case OutputOpcode::kRoundingShiftRight:
      return RoundingDivideByPOT(v, _mm256_set1_epi32(instruction.limit));
    case OutputOpcode::kClamp:
      return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(instruction.offset)),
                              _mm256_set1_epi32(instruction.limit));
    case OutputOpcode::kTruncateToUint8:
      return _mm256_and_si256(v, _mm256_set1_epi32(0xff));
  }
  return v;
}

// Stores `count` lanes as `size`-byte elements. The pipeline's last stage left every lane in
// the result type's range, so keeping the low bytes is exact.
void Store(__m256i v, int size, int count, char* out) {
  alignas(32) char buffer[32];
  if (size == 4) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(buffer), v);
  } else {
    const __m256i low_bytes =
        size == 2 ? _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1,
                                     4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1)
                  : _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                     4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i packed = _mm256_shuffle_epi8(v, low_bytes);
    // Each 128-bit half holds its four lanes in its low dword (bytes) or two dwords (int16).
    const __m256i gather = size == 2 ? _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5)
                                     : _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
    const __m256i joined = _mm256_permutevar8x32_epi32(packed, gather);
    _mm256_store_si256(reinterpret_cast<__m256i*>(buffer), joined);
  }
  std::memcpy(out, buffer, static_cast<std::size_t>(size) * count);
}

}  // namespace

void WriteOutputAvx2(const OutputProgram& program, const AccumulatorBlock& block,
                     const MatrixView& result) {
  const bool row_major = result.order == Order::kRowMajor;
  const int lines = row_major ? block.rows : block.cols;
  const int length = row_major ? block.cols : block.rows;
  const std::ptrdiff_t line_step = row_major ? block.row_stride : block.col_stride;
  const std::ptrdiff_t entry_step = row_major ? block.col_stride : block.row_stride;
  const int size = ElementSize(result.type);
  alignas(32) std::int32_t gathered[kLanes];
  for (int line = 0; line < lines; ++line) {
    const std::int32_t* acc = block.data + line * line_step;
    const int row = block.row_start + (row_major ? line : 0);
    const int col = block.col_start + (row_major ? 0 : line);
    // The view is of the caller's writable result map.
    char* out = static_cast<char*>(const_cast<void*>(result.data)) +
                (row_major ? static_cast<std::ptrdiff_t>(row) * result.stride + col
                           : row + static_cast<std::ptrdiff_t>(col) * result.stride) *
                    size;
    for (int i = 0; i < length; i += kLanes) {
      const int count = length - i < kLanes ? length - i : kLanes;
      const Lanes lanes{row + (row_major ? 0 : i), col + (row_major ? i : 0), count, row_major};
      __m256i v;
      if (entry_step == 1) {
        v = LoadPartial(acc + i, count);
      } else {
        for (int lane = 0; lane < count; ++lane) gathered[lane] = acc[(i + lane) * entry_step];
        v = LoadPartial(gathered, count);
      }
      for (int k = 0; k < program.count; ++k) v = Run(program.instructions[k], v, lanes);
      Store(v, size, count, out + static_cast<std::ptrdiff_t>(i) * size);
    }
  }
}

}  // namespace internal
}  // namespace lowbit
