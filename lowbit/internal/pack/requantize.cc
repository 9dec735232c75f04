// The requantization pass: uint8 / int8 operands to N-bit values, with each element's rounding
// offset a pure function of (seed, operand, line, depth index), so that the result does not
// depend on blocking, threads, ISA or prepacking. Runs along the depth use SSE2 or NEON (the
// baselines of x86-64 and aarch64) or AVX2 with the AVX2 kernel; the rest is plain loops the
// compiler vectorizes.
#include "lowbit/internal/pack/requantize.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "lowbit/internal/driver/bit_depth.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace lowbit {
namespace internal {
namespace {

constexpr int kNearestOffset = 127;

std::uint64_t Mix(std::uint64_t x) {
  x += kSplitMixIncrement;
  x = (x ^ (x >> 30)) * kSplitMixFirstMultiplier;
  x = (x ^ (x >> 27)) * kSplitMixSecondMultiplier;
  return x ^ (x >> 31);
}

// Why hashed phases, and not one phase shared by all lines (or following the line index):
// - different lines must not share one pattern. On clumped data the lines are alike, so with
//   one phase every result entry would carry the same rounding error, and nothing downstream
//   (a sum over outputs, the next layer) would average it out.
// - the lhs and rhs offsets of one product must not be tied to each other. A product's error
//   contains e_lhs * e_rhs, whose mean over the depth is zero only when the two offsets are
//   unrelated. Within a block both operands walk the same sequence, so their offsets are
//   related through the difference of their phases: add-mod-97 offsets differ by a constant,
//   and on clumped data e_lhs * e_rhs then has the same nonzero mean in every block, an error
//   growing like the depth (measured: RMS 4x that of xorshift at depth 8192 for 4/4 bits).
//   A new phase per block makes that mean a fresh draw with zero expectation in each block,
//   so it grows like sqrt(depth) instead. Each block is a whole period, so it still takes
//   every offset 0..254 once and its rounding errors still cancel along the depth.
// A splitmix64 finalizer of (seed, operand, line), then of that and the block, makes every
// (row phase, column phase) pair of a GEMM look independent and uniform over 0..254. SequencePhase
// is computed in two steps so that the pass hashes each line once. The keys of consecutive lines
// are consecutive (line < 2^31), which lets AVX-512 hash a line in each 64-bit lane
// (BlockPhasesAvx512).
std::uint64_t LineKey(std::uint32_t seed, Operand operand, int line) {
  return (static_cast<std::uint64_t>(seed) << 32) |
         (static_cast<std::uint64_t>(operand == Operand::kRhs) << 31) |
         static_cast<std::uint32_t>(line);
}
std::uint64_t LineHash(std::uint32_t seed, Operand operand, int line) {
  return Mix(LineKey(seed, operand, line));
}
int BlockPhase(std::uint64_t line_hash, int block) {
  return static_cast<int>(Mix(line_hash + static_cast<std::uint32_t>(block)) % kSequencePeriod);
}

// The gemmlowp 8-bit xorshift step: a permutation of 1..255 with a single cycle of length 255.
constexpr std::uint8_t XorshiftStep(std::uint8_t x) {
  x = static_cast<std::uint8_t>(x ^ (x << 7));
  x = static_cast<std::uint8_t>(x ^ (x >> 5));
  return static_cast<std::uint8_t>(x ^ (x << 3));
}

// The offset after `offset` in each sequence, from the offset alone, so that a line's state is
// one byte: add-mod-97 offsets are the state itself, xorshift offsets its state minus 1.
struct AddMod97Next {
  std::uint8_t operator()(std::uint8_t offset) const {
    return static_cast<std::uint8_t>(offset >= 255 - 97 ? offset - (255 - 97) : offset + 97);
  }
};
struct XorshiftNext {
  std::uint8_t operator()(std::uint8_t offset) const {
    return static_cast<std::uint8_t>(XorshiftStep(static_cast<std::uint8_t>(offset + 1)) - 1);
  }
};
struct NearestNext {
  std::uint8_t operator()(std::uint8_t offset) const { return offset; }
};

// Each block of one period takes its offsets from the window table[phase .. phase + 255). The
// AVX-512 line reads a table of the offsets plus one (at most 255), which saves it a shift; where a
// step of 64 values straddles two blocks, it addresses the next block's window from the step's
// first lane, up to 63 bytes before the window (those lanes masked off), and a step of all lanes
// reads the first block's window up to 63 bytes past it (those lanes replaced): each table starts
// after kTableLead bytes of its storage and ends kTableTrail bytes before its end.
constexpr int kTableLead = 64;
constexpr int kTableTrail = 64;
using OffsetTable = std::array<std::uint8_t, kTableLead + 2 * kSequencePeriod + kTableTrail>;

template <int kPlus>
OffsetTable MakeOffsetTable(BitDepthRounding resolved) {
  OffsetTable table{};
  for (int j = 0; j < 2 * kSequencePeriod; ++j) {
    table[kTableLead + j] =
        static_cast<std::uint8_t>(kPlus + (resolved == BitDepthRounding::kNearest
                                               ? kNearestOffset
                                               : SequenceValue(resolved, j % kSequencePeriod)));
  }
  return table;
}

template <int kPlus = 0>
const std::uint8_t* OffsetTableFor(BitDepthRounding resolved) {
  static const OffsetTable nearest = MakeOffsetTable<kPlus>(BitDepthRounding::kNearest);
  static const OffsetTable xorshift = MakeOffsetTable<kPlus>(BitDepthRounding::kXorshift);
  static const OffsetTable add_mod_97 = MakeOffsetTable<kPlus>(BitDepthRounding::kAddMod97);
  switch (resolved) {
    case BitDepthRounding::kXorshift:
      return xorshift.data() + kTableLead;
    case BitDepthRounding::kAddMod97:
      return add_mod_97.data() + kTableLead;
    default:
      return nearest.data() + kTableLead;
  }
}

// The baseline run (lowbit/internal/pack/requantize.h).
std::uint32_t RequantizeRun(const std::uint8_t* source, const std::uint8_t* offsets, int count,
                            std::uint16_t scale, std::uint8_t flip, std::uint8_t* out) {
  std::uint32_t sum = 0;
  int k = 0;
#if defined(__SSE2__)
  // By hand because the pass is counted in every requantized GEMM's time: at -O2 the compiler
  // leaves the scalar loop alone (8x slower, measured), and at -O3 it sums the bytes through
  // 32-bit lanes where psadbw sums 16 at once (1.5x).
  const __m128i zero = _mm_setzero_si128();
  const __m128i flip_bytes = _mm_set1_epi8(static_cast<char>(flip));
  const __m128i scale_words = _mm_set1_epi16(static_cast<short>(scale));
  const __m128i magic = _mm_set1_epi16(static_cast<short>(0x8081));
  __m128i sums = zero;
  for (; k + 16 <= count; k += 16) {
    const __m128i values =
        _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(source + k)), flip_bytes);
    const __m128i offset_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(offsets + k));
    const __m128i low = _mm_add_epi16(_mm_mullo_epi16(_mm_unpacklo_epi8(values, zero), scale_words),
                                      _mm_unpacklo_epi8(offset_bytes, zero));
    const __m128i high =
        _mm_add_epi16(_mm_mullo_epi16(_mm_unpackhi_epi8(values, zero), scale_words),
                      _mm_unpackhi_epi8(offset_bytes, zero));
    const __m128i requantized = _mm_packus_epi16(_mm_srli_epi16(_mm_mulhi_epu16(low, magic), 7),
                                                 _mm_srli_epi16(_mm_mulhi_epu16(high, magic), 7));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k), requantized);
    sums = _mm_add_epi64(sums, _mm_sad_epu8(requantized, zero));
  }
  sum = static_cast<std::uint32_t>(_mm_cvtsi128_si32(sums) +
                                   _mm_cvtsi128_si32(_mm_unpackhi_epi64(sums, sums)));
#elif defined(__ARM_NEON)
  const uint8x16_t flip_bytes = vdupq_n_u8(flip);
  const uint8x8_t scale_bytes = vdup_n_u8(static_cast<std::uint8_t>(scale));
  uint32x4_t sums = vdupq_n_u32(0);
  for (; k + 16 <= count; k += 16) {
    const uint8x16_t values = veorq_u8(vld1q_u8(source + k), flip_bytes);
    const uint8x16_t offset_bytes = vld1q_u8(offsets + k);
    const uint16x8_t low =
        vmlal_u8(vmovl_u8(vget_low_u8(offset_bytes)), vget_low_u8(values), scale_bytes);
    const uint16x8_t high =
        vmlal_u8(vmovl_u8(vget_high_u8(offset_bytes)), vget_high_u8(values), scale_bytes);
    // n / 255 = (n + 1 + (n >> 8)) >> 8 for n < 65280, in 16-bit lanes.
    const uint16x8_t low_quotient =
        vshrq_n_u16(vaddq_u16(vsraq_n_u16(low, low, 8), vdupq_n_u16(1)), 8);
    const uint16x8_t high_quotient =
        vshrq_n_u16(vaddq_u16(vsraq_n_u16(high, high, 8), vdupq_n_u16(1)), 8);
    const uint8x16_t requantized = vcombine_u8(vmovn_u16(low_quotient), vmovn_u16(high_quotient));
    vst1q_u8(out + k, requantized);
    sums = vpadalq_u16(sums, vpaddlq_u8(requantized));
  }
  sum = vaddvq_u32(sums);
#endif
  RequantizeTail(source, offsets, k, count, scale, flip, out, &sum);
  return sum;
}

// The blocks of one period that a line of `depth` values spans.
int BlockCount(int depth) { return (depth + kSequencePeriod - 1) / kSequencePeriod; }

// The requantization's scale for `bits`, and the flip that reads the values of `lines` as uint8.
std::uint16_t ScaleOf(int bits) { return static_cast<std::uint16_t>((1 << bits) - 1); }
std::uint8_t FlipOf(const MatrixView& lines) { return lines.type == ElementType::kInt8 ? 0x80 : 0; }

// Whole blocks and one byte more: every window is copied as a constant 256 bytes (inlined vector
// moves, where 255 would call memcpy), the next window overwriting the last.
std::size_t AlongDepthOffsetsBytes(int depth) {
  return static_cast<std::size_t>(BlockCount(depth)) * kSequencePeriod + 1;
}

// Each line's current offset, then (aligned) its running sum.
std::size_t AcrossLinesSumsStart(int count) {
  return (static_cast<std::size_t>(count) + 3) / 4 * 4;
}

// The blocks' phases of lines [first_line, first_line + count) of `operand`, phases[i * blocks +
// b], hashed in vectors' lanes by `phases_function` (hashed one line at a time in scalar code
// they took about a fifth of the AVX-512 pass at depth 256).
void HashBlockPhases(BlockPhasesFunction phases_function, std::uint32_t seed, Operand operand,
                     int first_line, int count, int blocks, std::uint8_t* phases) {
  phases_function(LineKey(seed, operand, first_line), count, blocks, phases);
}

// A run, or with AVX-512 a function for a whole line and one for the blocks' phases.
struct RunChoice {
  RequantizeRunFunction function;
  RequantizeLineFunction line_function;
  BlockPhasesFunction phases_function;
};

// Lines stored contiguously along the depth (a row-major lhs, a column-major rhs). With AVX-512,
// which masks a step as fast as it runs a whole one, one call covers a line in steps across its
// blocks, reading each block's offsets where they lie in the table. Otherwise a line's offsets are
// first laid out whole, window after window, so that one run covers the line: runs of one block
// each would leave a scalar tail in every 255 values, which measured as slow as the vector part.
// `work` is AlongDepthOffsetsBytes(depth) bytes: the laid-out offsets, or the blocks' phases of
// kPhaseLines lines.
void RequantizeAlongDepth(const RunChoice& run, const MatrixView& lines, std::uint16_t scale,
                          std::uint8_t flip, BitDepthRounding resolved, std::uint32_t seed,
                          Operand operand, int first_line, std::uint8_t* out,
                          std::int32_t* line_sums, std::uint8_t* work) {
  const int depth = lines.cols;
  const auto source_line = [&](int line) {
    return static_cast<const std::uint8_t*>(lines.data) +
           static_cast<std::ptrdiff_t>(line) * lines.stride;
  };
  // Round-to-nearest offsets are the same for every line: phase 0 of a table of one offset.
  const bool hashed = resolved != BitDepthRounding::kNearest;
  const auto phase = [&](std::uint64_t line_hash, int block) {
    return hashed ? BlockPhase(line_hash, block) : 0;
  };
  if (run.line_function != nullptr) {
    const int blocks = BlockCount(depth);
    const std::uint8_t* table_plus_one = OffsetTableFor<1>(resolved);
    std::uint8_t* phases = work;
    if (!hashed) std::fill(phases, phases + blocks, 0);
    for (int first = 0; first < lines.rows; first += kPhaseLines) {
      const int count = std::min(kPhaseLines, lines.rows - first);
      if (hashed) {
        HashBlockPhases(run.phases_function, seed, operand, first_line + first, count, blocks,
                        phases);
      }
      for (int i = 0; i < count; ++i) {
        const int line = first + i;
        line_sums[line] = static_cast<std::int32_t>(run.line_function(
            source_line(line), table_plus_one, hashed ? phases + i * blocks : phases, depth, scale,
            flip, out + static_cast<std::ptrdiff_t>(line) * depth));
      }
    }
    return;
  }
  const std::uint8_t* table = OffsetTableFor(resolved);
  std::uint8_t* offsets = work;
  const auto lay_out_offsets = [&](int line) {
    const std::uint64_t line_hash = LineHash(seed, operand, first_line + line);
    for (int start = 0, block = 0; start < depth; start += kSequencePeriod, ++block) {
      std::memcpy(offsets + start, table + phase(line_hash, block), kSequencePeriod + 1);
    }
  };
  if (!hashed) lay_out_offsets(0);
  for (int line = 0; line < lines.rows; ++line) {
    if (hashed) lay_out_offsets(line);
    line_sums[line] =
        static_cast<std::int32_t>(run.function(source_line(line), offsets, depth, scale, flip,
                                               out + static_cast<std::ptrdiff_t>(line) * depth));
  }
}

// Lines stored across the depth (each stored run holds one depth index of every line): every
// line keeps its current offset and steps its generator once per depth index.
template <typename Next>
void RequantizeAcrossLines(const MatrixView& lines, std::uint16_t scale, std::uint8_t flip,
                           BitDepthRounding resolved, std::uint32_t seed, Operand operand,
                           int first_line, std::uint8_t* out, std::int32_t* line_sums,
                           std::uint8_t* work) {
  const int count = lines.rows;
  const std::uint8_t* table = OffsetTableFor(resolved);
  std::uint8_t* offsets = work;
  auto* sums = reinterpret_cast<std::uint32_t*>(work + AcrossLinesSumsStart(count));
  std::fill(sums, sums + count, 0u);
  const Next next;
  for (int k = 0; k < lines.cols; ++k) {
    if (k % kSequencePeriod == 0) {
      for (int line = 0; line < count; ++line) {
        offsets[line] =
            resolved == BitDepthRounding::kNearest
                ? kNearestOffset
                : table[SequencePhase(seed, operand, first_line + line, k / kSequencePeriod)];
      }
    }
    const auto* source = static_cast<const std::uint8_t*>(lines.data) +
                         static_cast<std::ptrdiff_t>(k) * lines.stride;
    std::uint8_t* run_out = out + static_cast<std::ptrdiff_t>(k) * count;
    for (int line = 0; line < count; ++line) {
      const std::uint8_t value =
          RequantizeValue(static_cast<std::uint8_t>(source[line] ^ flip), scale, offsets[line]);
      run_out[line] = value;
      sums[line] += value;
      offsets[line] = next(offsets[line]);
    }
  }
  for (int line = 0; line < count; ++line) line_sums[line] = static_cast<std::int32_t>(sums[line]);
}

// The run of the kernel's ISA: the context asked for it, and cpuinfo said the CPU has it.
RunChoice RunFor(Kernel kernel) {
#if defined(__x86_64__)
  if (kernel == Kernel::kAvx512Vnni || kernel == Kernel::kAmx) {
    return {nullptr, &RequantizeLineAvx512, &BlockPhasesAvx512};
  }
  if (kernel == Kernel::kAvx2) return {&RequantizeRunAvx2, nullptr, nullptr};
#endif
  static_cast<void>(kernel);
  return {&RequantizeRun, nullptr, nullptr};
}

// `kernel`'s function that hashes blocks' phases in vectors, which the packers that requantize
// as they read rely on.
BlockPhasesFunction PhasesFunctionFor(Kernel kernel) {
  const BlockPhasesFunction function = RunFor(kernel).phases_function;
  if (function == nullptr) {
    throw std::logic_error("requantizing packers need a kernel that hashes phases in vectors");
  }
  return function;
}

}  // namespace

int SequenceValue(BitDepthRounding resolved, int position) {
  if (resolved == BitDepthRounding::kAddMod97) return 97 * position % kSequencePeriod;
  static const std::array<std::uint8_t, kSequencePeriod> xorshift_values = [] {
    std::array<std::uint8_t, kSequencePeriod> values{};
    std::uint8_t state = 1;
    for (auto& value : values) {
      value = static_cast<std::uint8_t>(state - 1);
      state = XorshiftStep(state);
    }
    return values;
  }();
  return xorshift_values[position];
}

int SequencePhase(std::uint32_t seed, Operand operand, int line, int block) {
  return BlockPhase(LineHash(seed, operand, line), block);
}

std::size_t RequantizeWorkBytes(const MatrixView& lines) {
  // No line, no work: a prepacked 2^30 x 0 rhs must not allocate a window of its depth.
  if (lines.rows == 0) return 0;
  if (lines.order == Order::kRowMajor) return AlongDepthOffsetsBytes(lines.cols);
  return AcrossLinesSumsStart(lines.rows) + sizeof(std::uint32_t) * lines.rows;
}

PackRequantization RequantizingPack(Kernel kernel, const MatrixView& lines, int bits,
                                    BitDepthRounding resolved, std::uint32_t seed, Operand operand,
                                    int first_line, int count, void* work,
                                    const std::uint8_t* all_phases) {
  const BlockPhasesFunction phases_function = PhasesFunctionFor(kernel);
  const int blocks = BlockCount(lines.cols);
  const bool hashed = resolved != BitDepthRounding::kNearest;
  const std::uint8_t* phases = static_cast<std::uint8_t*>(work);
  if (!hashed) {
    std::fill(static_cast<std::uint8_t*>(work), static_cast<std::uint8_t*>(work) + blocks, 0);
  } else if (all_phases != nullptr) {
    phases = all_phases + static_cast<std::ptrdiff_t>(first_line) * blocks;
  } else {
    HashBlockPhases(phases_function, seed, operand, first_line, count, blocks,
                    static_cast<std::uint8_t*>(work));
  }
  return {OffsetTableFor<1>(resolved), phases, hashed ? blocks : 0, ScaleOf(bits), FlipOf(lines)};
}

std::size_t PhasesBytes(const MatrixView& lines) {
  return static_cast<std::size_t>(lines.rows) * BlockCount(lines.cols);
}

void HashPhases(Kernel kernel, const MatrixView& lines, std::uint32_t seed, Operand operand,
                std::uint8_t* phases) {
  HashBlockPhases(PhasesFunctionFor(kernel), seed, operand, 0, lines.rows, BlockCount(lines.cols),
                  phases);
}

void RequantizeLines(Kernel kernel, const MatrixView& lines, int bits, BitDepthRounding resolved,
                     std::uint32_t seed, Operand operand, std::uint8_t* out,
                     std::int32_t* line_sums, void* work, int first_line) {
  const std::uint16_t scale = ScaleOf(bits);
  const std::uint8_t flip = FlipOf(lines);
  auto* work_bytes = static_cast<std::uint8_t*>(work);
  if (lines.rows == 0) return;
  if (lines.order == Order::kRowMajor) {
    RequantizeAlongDepth(RunFor(kernel), lines, scale, flip, resolved, seed, operand, first_line,
                         out, line_sums, work_bytes);
  } else if (resolved == BitDepthRounding::kAddMod97) {
    RequantizeAcrossLines<AddMod97Next>(lines, scale, flip, resolved, seed, operand, first_line,
                                        out, line_sums, work_bytes);
  } else if (resolved == BitDepthRounding::kXorshift) {
    RequantizeAcrossLines<XorshiftNext>(lines, scale, flip, resolved, seed, operand, first_line,
                                        out, line_sums, work_bytes);
  } else {
    RequantizeAcrossLines<NearestNext>(lines, scale, flip, resolved, seed, operand, first_line, out,
                                       line_sums, work_bytes);
  }
}

}  // namespace internal
}  // namespace lowbit
