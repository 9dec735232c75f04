// The inner loop of the requantization pass, per ISA: one run of consecutive depth values of a
// line (one line with AVX-512). lowbit/internal/pack/requantize.cc has the baseline (SSE2 / NEON)
// run and picks the AVX2 or AVX-512 one when the context runs the AVX2 or AVX-512 VNNI kernel, so
// that each is exercised by the kernel sweeps of the tests.
#ifndef LOWBIT_INTERNAL_PACK_REQUANTIZE_H_
#define LOWBIT_INTERNAL_PACK_REQUANTIZE_H_

#include <cstdint>

namespace lowbit {
namespace internal {

// (u * scale + offset) / 255 for u, scale <= 255 and offset <= 254: the numerator n stays below
// 2^16, where n / 255 = (n * 0x8081) >> 23, a 16-bit high multiply and a shift.
inline std::uint8_t RequantizeValue(std::uint8_t value, std::uint16_t scale, std::uint8_t offset) {
  const std::uint32_t n = static_cast<std::uint32_t>(value * scale + offset);
  return static_cast<std::uint8_t>((n * 0x8081u) >> 23);
}

// Requantizes source[k] ^ flip with offsets[k] into out[k] for k in [first, count), adding the
// values to *sum: the scalar tail of every run.
inline void RequantizeTail(const std::uint8_t* source, const std::uint8_t* offsets, int first,
                           int count, std::uint16_t scale, std::uint8_t flip, std::uint8_t* out,
                           std::uint32_t* sum) {
  for (int k = first; k < count; ++k) {
    out[k] = RequantizeValue(static_cast<std::uint8_t>(source[k] ^ flip), scale, offsets[k]);
    *sum += out[k];
  }
}

// Requantizes `count` values (see RequantizeTail) and returns their sum. `flip` is 0x80 for
// int8 sources: v + 128 is the byte v with its top bit flipped.
using RequantizeRunFunction = std::uint32_t (*)(const std::uint8_t* source,
                                                const std::uint8_t* offsets, int count,
                                                std::uint16_t scale, std::uint8_t flip,
                                                std::uint8_t* out);

// Requantizes a whole line of `count` values (see RequantizeTail) and returns their sum: the
// values of block b, [255 b, 255 b + 255), take the offsets at table + phases[b], where the table
// holds each offset plus one, after at least 63 bytes of its storage that a step may address.
using RequantizeLineFunction = std::uint32_t (*)(const std::uint8_t* source,
                                                 const std::uint8_t* table_plus_one,
                                                 const std::uint8_t* phases, int count,
                                                 std::uint16_t scale, std::uint8_t flip,
                                                 std::uint8_t* out);

// Lines along the depth that a packer requantizes as it reads them (kernel.h,
// RequantizingPackFunction), from the offsets RequantizeLineFunction reads: the values of block b
// of the call's line i take theirs at table_plus_one + phases[i * phase_stride + b] (a
// phase_stride of 0, round to nearest: every line reads the first line's phases). A packer of
// bytes stores each requantized value times `factor` where it is more than 1 (255 / scale, for
// a scale that divides 255: the 8-bit value the requantized one stands for), else as it is.
struct PackRequantization {
  const std::uint8_t* table_plus_one;
  const std::uint8_t* phases;
  int phase_stride;
  std::uint16_t scale;
  std::uint8_t flip;
  std::uint8_t factor = 1;
};

// The splitmix64 finalizer that hashes the rounding sequence's phases
// (lowbit/internal/pack/requantize.cc): x += increment; x = (x ^ (x >> 30)) * first;
// x = (x ^ (x >> 27)) * second; x ^ (x >> 31).
constexpr std::uint64_t kSplitMixIncrement = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kSplitMixFirstMultiplier = 0xbf58476d1ce4e5b9ULL;
constexpr std::uint64_t kSplitMixSecondMultiplier = 0x94d049bb133111ebULL;

// The phases of blocks [0, blocks) of `lines` consecutive lines, the first of hash key first_key
// (lowbit/internal/pack/requantize.cc, LineKey): phases[i * blocks + b] is SequencePhase of line
// i's block b. The requantization pass hashes kPhaseLines lines at a time.
constexpr int kPhaseLines = 8;
using BlockPhasesFunction = void (*)(std::uint64_t first_key, int lines, int blocks,
                                     std::uint8_t* phases);

#if defined(__x86_64__)
// Call only when cpuinfo reports AVX2.
std::uint32_t RequantizeRunAvx2(const std::uint8_t* source, const std::uint8_t* offsets, int count,
                                std::uint16_t scale, std::uint8_t flip, std::uint8_t* out);
// Call only when cpuinfo reports AVX-512 F and BW (the AVX-512 VNNI kernel's CPUs).
std::uint32_t RequantizeLineAvx512(const std::uint8_t* source, const std::uint8_t* table_plus_one,
                                   const std::uint8_t* phases, int count, std::uint16_t scale,
                                   std::uint8_t flip, std::uint8_t* out);
// The same CPUs: the lines' hashes in the lanes of a vector.
void BlockPhasesAvx512(std::uint64_t first_key, int lines, int blocks, std::uint8_t* phases);
#endif

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_PACK_REQUANTIZE_H_
