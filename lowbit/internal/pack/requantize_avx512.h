// A step of the AVX-512 BW requantization, 64 depth values of a line: shared by the pass
// (requantize_avx512.cc) and the packers that requantize lines as they read them (pack_avx512.cc,
// kernel_amx.cc), so that every path computes RequantizeTail's formula in the same instructions.
#ifndef LOWBIT_INTERNAL_PACK_REQUANTIZE_AVX512_H_
#define LOWBIT_INTERNAL_PACK_REQUANTIZE_AVX512_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

// <immintrin.h> through this header first: without GCC 12's false -Wuninitialized reports.
#include "lowbit/fixedpoint/fixedpoint_avx512.h"
#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/internal/pack/requantize.h"

namespace lowbit {
namespace internal {

// The lanes of a whole step, all in the depth: a step's loads for these take no mask. With its two
// loads (values, offsets) masked, a step of 16 lines' requantization took 1.5 times as long from
// L2, 1.13 times from L1. It converts to the mask of every lane for code that reads them alike.
struct AllLanes {
  constexpr operator __mmask64() const { return ~__mmask64{0}; }
};

// Where the step of 64 depth values from k lies among the rounding sequence's blocks, the same
// for every line of `depth` values. A step that straddles two blocks takes its first lanes'
// offsets from one block's window of the table and the rest from the next one's.
class SequenceStep {
 public:
  SequenceStep(int k, int depth)
      : block_(k / kSequencePeriod), position_(k - block_ * kSequencePeriod) {
    const int block_end = k - position_ + kSequencePeriod;
    straddles_ = k + 64 > block_end && block_end < depth;
    this_block_ = straddles_ ? (__mmask64{1} << (block_end - k)) - 1 : ~__mmask64{0};
  }

  // The offsets plus one of the step's lanes in `in_line` (zero in the others) for a line whose
  // blocks' phases are `phases`. The next block's lanes are addressed from the step's first lane,
  // up to 63 bytes before its window: the table's lead (lowbit/internal/pack/requantize.cc). For
  // AllLanes the first block's load reads all 64 lanes, up to 63 bytes past its window where the
  // step straddles: the table's trail.
  template <typename Lanes>
  __m512i Offsets(const std::uint8_t* table_plus_one, const std::uint8_t* phases,
                  Lanes in_line) const {
    const std::uint8_t* window = table_plus_one + (phases[block_] + position_);
    __m512i offsets;
    if constexpr (std::is_same_v<Lanes, AllLanes>) {
      offsets = _mm512_loadu_si512(window);
    } else {
      offsets = _mm512_maskz_loadu_epi8(in_line & this_block_, window);
    }
    if (straddles_) {
      offsets = _mm512_mask_loadu_epi8(
          offsets, in_line & ~this_block_,
          table_plus_one + (phases[block_ + 1] + position_ - kSequencePeriod));
    }
    return offsets;
  }

 private:
  int block_;
  int position_;  // the step's first depth value, in its block
  bool straddles_;
  __mmask64 this_block_;
};

// (u * scale + offset) / 255 for 64 values u (RequantizeValue).
class Requantizer {
 public:
  Requantizer(std::uint16_t scale, std::uint8_t flip)
      : flip_(_mm512_set1_epi8(static_cast<char>(flip))),
        scale_and_one_(_mm512_set1_epi16(static_cast<short>(0x0100 | scale))),
        multiplier_(_mm512_set1_epi16(257)),
        flips_(flip != 0),
        unchanged_(scale == 255) {}

  // The values of lanes in `in_line` from `source`, as uint8 (int8 values flipped); the others
  // hold the flip.
  template <typename Lanes>
  __m512i Load(const std::uint8_t* source, Lanes in_line) const {
    __m512i values;
    if constexpr (std::is_same_v<Lanes, AllLanes>) {
      values = _mm512_loadu_si512(source);
    } else {
      values = _mm512_maskz_loadu_epi8(in_line, source);
    }
    return flips_ ? _mm512_xor_si512(values, flip_) : values;
  }

  // The requantized values of lanes in `in_line`, zero in the others, from the offsets plus one
  // (SequenceStep::Offsets). 8 bits: (u * 255 + offset) / 255 = u for every offset <= 254, and
  // the values pass unchanged.
  __m512i operator()(__m512i values, __m512i offsets_plus_one, __mmask64 in_line) const {
    if (unchanged_) return _mm512_maskz_mov_epi8(in_line, values);
    // Each value beside its offset plus one, times (scale, 1): n + 1 = u * scale + offset + 1
    // <= 255 * 127 + 255 in one vpmaddubsw, whose second operand is signed bytes (scale <= 127).
    // Unpacking and packing both work within 128-bit lanes, so the order comes back intact.
    const __m512i low =
        _mm512_maddubs_epi16(_mm512_unpacklo_epi8(values, offsets_plus_one), scale_and_one_);
    const __m512i high =
        _mm512_maddubs_epi16(_mm512_unpackhi_epi8(values, offsets_plus_one), scale_and_one_);
    // n / 255 = ((n + 1) * 257) >> 16 for n < 255 * 258: with n = 255 q + r, (n + 1) * 257 =
    // 65536 q + 257 (r + 1) - q, and 0 <= 257 (r + 1) - q < 65536 for q <= 257.
    return _mm512_maskz_packus_epi16(in_line, _mm512_mulhi_epu16(low, multiplier_),
                                     _mm512_mulhi_epu16(high, multiplier_));
  }

 private:
  __m512i flip_;
  __m512i scale_and_one_;
  __m512i multiplier_;
  bool flips_;
  bool unchanged_;
};

// The requantizing packers' read of lines along the depth (a row-major lhs, a column-major rhs):
// a line's 64 values from a depth, requantized, times the requantization's factor and shifted by
// the packing's `delta` (PackedValueShift), zero outside the depth.
class RequantizingLineReader {
 public:
  RequantizingLineReader(const std::uint8_t* lines, std::ptrdiff_t stride,
                         const PackRequantization& requantization, std::int8_t delta)
      : lines_(lines),
        stride_(stride),
        requantization_(requantization),
        requantize_(requantization.scale, requantization.flip),
        delta_(_mm512_set1_epi8(delta)),
        scaled_values_(ScaledValues(requantization.factor, delta)),
        shifts_(delta != 0),
        scales_(requantization.factor > 1) {}

  // Line `line`'s values from depth `d`, the step of every line from there.
  template <typename Lanes>
  __m512i operator()(int line, int d, const SequenceStep& step, Lanes in_depth) const {
    return Read(lines_ + line * stride_ + d, PhasesOf(line), step, in_depth);
  }

  // The same for lines line, line + 1, ... in turn, a line a call: the addresses step from line
  // to line, where operator() works them out from the line's index.
  template <typename Lanes>
  auto LinesFrom(int line, int d, const SequenceStep& step, Lanes in_depth) const {
    return [this, values = lines_ + line * stride_ + d, phases = PhasesOf(line), step,
            in_depth]() mutable {
      const __m512i read = Read(values, phases, step, in_depth);
      values += stride_;
      phases += requantization_.phase_stride;
      return read;
    };
  }

  // The same for 1 bit (scale 1) and no shift, as a mask of the values that requantize to 1:
  // (u + offset) / 255 is 1 exactly where u + offset + 1 > 255, u > ~(offset + 1) as bytes, a
  // compare where the general formula takes eight instructions and a test. Past the depth the
  // offsets load as 0, whose complement no byte exceeds.
  __mmask64 OneBitMask(int line, int d, const SequenceStep& step, __mmask64 in_depth) const {
    const __m512i offsets_plus_one =
        step.Offsets(requantization_.table_plus_one, PhasesOf(line), in_depth);
    return _mm512_cmpgt_epu8_mask(
        requantize_.Load(lines_ + line * stride_ + d, in_depth),
        _mm512_ternarylogic_epi32(offsets_plus_one, offsets_plus_one, offsets_plus_one, 0x55));
  }
  bool OneBitUnshifted() const { return requantization_.scale == 1 && !shifts_ && !scales_; }

  // factor * q + delta for each q < 16, in every 128-bit lane (vpshufb looks up within lanes).
  static __m512i ScaledValues(std::uint8_t factor, std::int8_t delta) {
    alignas(16) std::uint8_t table[16];
    for (int q = 0; q < 16; ++q) table[q] = static_cast<std::uint8_t>(q * factor + delta);
    return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
  }

 private:
  const std::uint8_t* PhasesOf(int line) const {
    return requantization_.phases + line * requantization_.phase_stride;
  }

  // The step's values from `values` of a line whose blocks' phases are `phases`.
  template <typename Lanes>
  __m512i Read(const std::uint8_t* values, const std::uint8_t* phases, const SequenceStep& step,
               Lanes in_depth) const {
    const __m512i requantized =
        requantize_(requantize_.Load(values, in_depth),
                    step.Offsets(requantization_.table_plus_one, phases, in_depth), in_depth);
    // The requantized values are zero outside the depth already. A factor comes with a scale of
    // at most 15: the values index a table of 16 bytes, in place of the shift's addition.
    if (scales_) return _mm512_maskz_shuffle_epi8(in_depth, scaled_values_, requantized);
    return shifts_ ? _mm512_maskz_add_epi8(in_depth, requantized, delta_) : requantized;
  }

  const std::uint8_t* lines_;
  std::ptrdiff_t stride_;
  PackRequantization requantization_;
  Requantizer requantize_;
  __m512i delta_;
  __m512i scaled_values_;
  bool shifts_;
  bool scales_;
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_PACK_REQUANTIZE_AVX512_H_
