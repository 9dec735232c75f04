// Operands narrower than 8 bits, compiled half: the checks of BitDepthParams and of declared
// ranges, the requantization pass, and the GEMM on requantized operands (doc/less-than-8-bit.md).
#ifndef LOWBIT_INTERNAL_DRIVER_BIT_DEPTH_H_
#define LOWBIT_INTERNAL_DRIVER_BIT_DEPTH_H_

#include <cstddef>
#include <cstdint>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/public/bit_depth.h"
#include "lowbit/public/context.h"
#include "lowbit/public/map.h"

namespace lowbit {

class PrepackedRhs;

namespace internal {

// Both rounding sequences have period 255 and take all values 0..254 once per period.
constexpr int kSequencePeriod = 255;

// Value `position` (0..254) of a probabilistic rounding sequence: for kAddMod97, x_j with
// x_0 = 0 and x_{j+1} = (x_j + 97) % 255; for kXorshift, state_j - 1 with state_0 = 1 and
// state_{j+1} = xorshift(state_j) (x ^= x << 7; x ^= x >> 5; x ^= x << 3 on uint8).
int SequenceValue(BitDepthRounding resolved, int position);

// The depth is cut into blocks of one period, k / 255. Block `block` of line `line` (an lhs row
// or an rhs column) of `operand` enters its rounding sequence at this position: a hash of
// (seed, operand, line, block), modulo 255. The rounding offset of element (line, k) is
//   SequenceValue(rounding, (SequencePhase(seed, operand, line, k / 255) + k % 255) % 255),
// or 127 for kNearest: consecutive depth values of a block take consecutive sequence values.
int SequencePhase(std::uint32_t seed, Operand operand, int line, int block);

// Requantizes `lines` (rows = lhs rows or rhs columns, cols = depth, uint8 or int8) to `bits`:
// out(i, k) = (u * (2^bits - 1) + offset(i, k)) / 255 with u the value as uint8 (int8 + 128).
// `out` has the same shape and order as `lines`, compact (stride = its line length), and
// line_sums[i] receives the sum of line i's requantized values. `resolved` is not kAuto. The
// inner loop uses the ISA of `kernel` (resolved, and available on this CPU); the values do not
// depend on it. `work` is RequantizeWorkBytes(lines) of memory, aligned for int32, that it
// uses as it goes: a GEMM passes scratch memory, so that it allocates nothing. The lines are
// lines first_line, first_line + 1, ... of their operand, which sets their rounding offsets.
void RequantizeLines(Kernel kernel, const MatrixView& lines, int bits, BitDepthRounding resolved,
                     std::uint32_t seed, Operand operand, std::uint8_t* out,
                     std::int32_t* line_sums, void* work, int first_line = 0);
std::size_t RequantizeWorkBytes(const MatrixView& lines);

struct PackRequantization;  // lowbit/internal/pack/requantize.h

// The same requantization for a packer that does it as it reads the lines (kernel.h,
// RequantizingPackFunction; the AVX-512 kernels, whose blocks' phases are hashed in vectors):
// lines [first_line, first_line + count) of `lines`, which run along the depth (row-major), count
// at most kSequencePeriod. The result points to their blocks' phases in `all_phases`, the phases
// of every line of `lines` (HashPhases), or where it is null, to those it writes to `work`
// (RequantizeWorkBytes(lines), as above).
PackRequantization RequantizingPack(Kernel kernel, const MatrixView& lines, int bits,
                                    BitDepthRounding resolved, std::uint32_t seed, Operand operand,
                                    int first_line, int count, void* work,
                                    const std::uint8_t* all_phases = nullptr);

// The blocks' phases of every line of `lines` (row-major) of `operand`, as RequantizingPack hashes
// them for rounding other than kNearest: PhasesBytes(lines) bytes. `kernel` as for
// RequantizingPack.
std::size_t PhasesBytes(const MatrixView& lines);
void HashPhases(Kernel kernel, const MatrixView& lines, std::uint32_t seed, Operand operand,
                std::uint8_t* phases);

// The uint8 matrix RequantizeLines writes to `out` for `lines`.
MatrixView RequantizedView(const MatrixView& lines, std::uint8_t* out);

// Throws lowbit::Error naming "bit_depth.<field>" unless every field is valid.
void ValidateBitDepthParams(const BitDepthParams& params);

// The declared-range promise of an operand: every value of `view` fits `bits` bits (uint8 in
// [0, 2^bits - 1], int8 in [-2^(bits-1), 2^(bits-1) - 1]). `name` is the operand's argument
// ("lhs", "rhs") and `bits_field` the field of BitDepthParams that sets `bits`.
struct DeclaredRange {
  const char* name;
  const char* bits_field;
  MatrixView view;
  int bits;
};

// The declared ranges of a GEMM's lhs and rhs under `params`.
inline DeclaredRange LhsDeclaredRange(const MatrixView& lhs, const BitDepthParams& params) {
  return {"lhs", "lhs_bits", lhs, params.lhs_bits};
}
inline DeclaredRange RhsDeclaredRange(const MatrixView& rhs, const BitDepthParams& params) {
  return {"rhs", "rhs_bits", rhs, params.rhs_bits};
}

// Throws lowbit::Error naming range.name, with the first value outside the range and where it
// is, unless every value is within it.
void CheckDeclaredRange(const DeclaredRange& range);

// The range's bias and bits above it, with nothing scanned yet.
RangeBits RangeBitsOf(const DeclaredRange& range);

// ORs into range->bits the bits of lines [first, first + count) of `lines` (its rows, stored in
// either order), each value plus range->bias: the scan of CheckDeclaredRange, for the lines of
// an operand that a packer has just read.
void OrBitsOfLines(const MatrixView& lines, int first, int count, RangeBits* range);

// The checks a GEMM makes of its BitDepthParams (null for an ordinary GEMM), after
// ValidateGemmArguments: each field, and a prepacked rhs packed with matching params (or, for an
// ordinary GEMM, without any). The declared ranges of the operands' values are checked here
// only for an empty result; otherwise RunBitDepthGemm's GEMM checks them before it writes
// anything, the rhs of a short lhs as its product reads it.
void ValidateBitDepthArguments(const BitDepthParams* params, const MatrixView& lhs,
                               const MatrixView& rhs, const PrepackedRhs* prepacked_rhs);

// The GEMM with narrow operands: in kRequantize mode, requantizes both operands (the rhs unless
// prepacked), multiplies them and rescales each block to approximate the 8-bit result; in
// kDeclaredRange mode, the ordinary GEMM, which throws before writing anything if an operand
// (not a prepacked rhs, checked when packed) breaks its declared range. Arguments must have
// passed every check above and ValidateGemmArguments.
void RunBitDepthGemm(Context& context, const MatrixView& lhs, const MatrixView& rhs,
                     const PrepackedRhs* prepacked_rhs, const Offsets& lhs_offset,
                     const Offsets& rhs_offset, const BitDepthParams& params,
                     const ResultTarget& target);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_DRIVER_BIT_DEPTH_H_
