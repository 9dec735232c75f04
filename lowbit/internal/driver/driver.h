// The boundary between the header templates (output pipelines, instantiated in the caller's
// code) and the compiled library (packing, kernels and offsets, built once per ISA): type-erased
// matrix views in, blocks of final int32 accumulators out.
#ifndef LOWBIT_INTERNAL_DRIVER_DRIVER_H_
#define LOWBIT_INTERNAL_DRIVER_DRIVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>

#include "lowbit/internal/output/output_program.h"
#include "lowbit/public/bit_depth.h"
#include "lowbit/public/context.h"
#include "lowbit/public/map.h"

namespace lowbit {
namespace internal {

// Holds `context` for the GEMM that constructs it, until it is destroyed. Several threads may
// share a context: their GEMMs take turns, each with the context's scratch memory and thread
// pool to itself. Throws lowbit::Error if this thread is already running a GEMM on the context
// (an output stage calling back into it), which could otherwise never proceed.
class ContextUse {
 public:
  explicit ContextUse(Context& context);
  ~ContextUse();
  ContextUse(const ContextUse&) = delete;
  ContextUse& operator=(const ContextUse&) = delete;

 private:
  ContextState& state_;
  const ContextState* outer_;
};

enum class ElementType { kUint8, kInt8, kInt16, kInt32 };

template <typename Scalar>
constexpr ElementType ElementTypeOf();
template <>
constexpr ElementType ElementTypeOf<std::uint8_t>() {
  return ElementType::kUint8;
}
template <>
constexpr ElementType ElementTypeOf<std::int8_t>() {
  return ElementType::kInt8;
}
template <>
constexpr ElementType ElementTypeOf<std::int16_t>() {
  return ElementType::kInt16;
}
template <>
constexpr ElementType ElementTypeOf<std::int32_t>() {
  return ElementType::kInt32;
}

int ElementSize(ElementType type);

// The bytes from the first element of a rows x cols matrix to one past its last (0 if empty).
std::size_t StoredBytes(int rows, int cols, Order order, int stride, std::size_t element_size);

struct MatrixView {
  const void* data;
  ElementType type;
  int rows;
  int cols;
  Order order;
  int stride;
  // Every value fits this many bits (uint8 in [0, 2^bits - 1], int8 in [-2^(bits-1),
  // 2^(bits-1) - 1]): requantized or declared narrow operands, for which narrow kernels exist.
  int bits = 8;
  // What packing into int8 or uint8 subtracts from each value, where the driver chose it for
  // declared narrow values (kernel.h, PackedValueShift); kShiftOfBits: the one `bits` gives.
  static constexpr int kShiftOfBits = -(1 << 30);
  int shift = kShiftOfBits;
};

template <typename Scalar>
MatrixView ViewOf(const MatrixMap<Scalar>& map) {
  return {map.data(),  ElementTypeOf<std::remove_const_t<Scalar>>(),
          map.rows(),  map.cols(),
          map.order(), map.stride()};
}

// The same matrix seen transposed: packing reads rhs columns along the depth as the rows of
// the rhs's transpose.
inline MatrixView Transposed(const MatrixView& view) {
  MatrixView transposed = view;
  transposed.rows = view.cols;
  transposed.cols = view.rows;
  transposed.order = view.order == Order::kRowMajor ? Order::kColMajor : Order::kRowMajor;
  return transposed;
}

// rows x cols final accumulators (offsets applied) for the result entries starting at
// (row_start, col_start). Entry (r, c) is data[r * row_stride + c * col_stride]; one of the
// strides is 1, along the result's storage order wherever the driver could arrange it.
struct AccumulatorBlock {
  int row_start;
  int col_start;
  int rows;
  int cols;
  const std::int32_t* data;
  int row_stride;
  int col_stride;
};

// Called once per block, possibly from several threads at once on disjoint blocks.
using BlockConsumer = void (*)(const void* closure, const AccumulatorBlock& block);

// Where the accumulators go: the output pipeline as a template instance (always), and as a
// program when every stage has a compiled form, for the kernel's ISA writer if it has one.
struct ResultTarget {
  MatrixView result;
  const OutputProgram* program;
  BlockConsumer consumer;
  const void* closure;
};

// An rhs packed once (lowbit/public/prepacked.h): whole-depth panels of every column in the layout
// of `kernel`, and each column's sum of packed values.
struct PackedOperand {
  Kernel kernel;
  ElementType type;
  int depth;
  int cols;
  std::shared_ptr<const char> data;
  std::shared_ptr<const std::int32_t> col_sums;
};

// The largest number of rows or columns a matrix may have: packing rounds sizes up to whole
// register tiles and depth groups, and doubles some, in int arithmetic.
constexpr int kLargestDimension = (1 << 30) - 1;

// Throws lowbit::Error unless `view` is a well-formed matrix (sizes, stride, data), naming it
// `name`.
void ValidateMatrix(const char* name, const MatrixView& view);

// Throws lowbit::Error naming `owner`.`field` (or `owner` alone for a null field) if the `bytes`
// at `data`, an input the GEMM reads, overlap the memory of `result`.
void CheckNotInResult(const MatrixView& result, std::string_view owner, const char* field,
                      const void* data, std::size_t bytes);

// The view of a prepacked rhs for the argument checks: its type and shape, no data to read.
MatrixView ViewOf(const PackedOperand& packed);

// Throws lowbit::Error for the first argument that breaks a rule (sizes, strides, null data,
// mismatched dimensions, offset vector lengths, int32 overflow depth, result aliasing inputs).
// With `packed_rhs`, the rhs view is ViewOf(*packed_rhs) and the packing must be for the
// context's kernel.
void ValidateGemmArguments(const Context& context, const MatrixView& lhs, const MatrixView& rhs,
                           const PackedOperand* packed_rhs, const MatrixView& result,
                           const Offsets& lhs_offset, const Offsets& rhs_offset);

// The largest depth for which no (lhs + lhs_offset) * (rhs + rhs_offset) sum can overflow
// int32, over the full value range of the operand types and the given offsets.
std::int64_t LargestSafeDepth(const MatrixView& lhs, const MatrixView& rhs,
                              const Offsets& lhs_offset, const Offsets& rhs_offset);

// Per-line factors of the rescale of a GEMM on requantized operands
// (lowbit/internal/driver/bit_depth.cc): a[i] and b[i] for each lhs row or rhs column i, exact
// integers held in doubles.
//
// When 2^N - 1 divides 255 on both sides (N = 1, 2, 4 or 8) and both offsets are uniform, the
// rescale has nothing to round: it is the integer sum_k (f u_k + P)(g v_k + Q), u and v the
// values the GEMM multiplies (the requantized ones minus their centre), f = 255 / (2^L - 1),
// g = 255 / (2^R - 1), and P, Q uniform. exact_factor holds f or g, exact_offset P or Q; an
// exact_factor of 0 means no such form. The driver then adds it as offset terms in int32
// arithmetic, to the sums times f * g.
struct RescaleLineTerms {
  const double* a;
  const double* b;
  std::int32_t exact_factor = 0;
  std::int32_t exact_offset = 0;
  // a and b rounded to float, or null: what the writers' float form of a rescale followed by a
  // QuantizeDown and a clamp to bytes reads (RescaledByteScaleConstants, output_line.h).
  const float* a_float = nullptr;
  const float* b_float = nullptr;
};

// Turns the exact sum acc of a block entry (r, c) into the approximate 8-bit result
// round((65025 * acc + lhs.a[r] * rhs.a[c] + lhs.b[r] * rhs.b[c]) / divisor), saturated to int32.
struct Rescale {
  RescaleLineTerms lhs;
  RescaleLineTerms rhs;
  int divisor;
  // Sets the terms that do not come from the requantized lines' sums, fill_terms(fill_closure):
  // RunGemm calls it before it rescales through them, not where the rescale folds into offset
  // terms (exact_factor) or into the packed values.
  void (*fill_terms)(void* closure) = nullptr;
  void* fill_closure = nullptr;
};

// Which operand an element belongs to: each has its own rounding sequence phases.
enum class Operand { kLhs, kRhs };

// An operand that the driver requantizes as it packs it (lowbit/internal/driver/bit_depth.h,
// RequantizeLines): `lines` is the operand as given, lines by depth (the lhs, or the rhs
// transposed), and the GEMM multiplies its values requantized to `bits` (`rounding` resolved).
// With the line sums s[i] of the requantized values, the driver sets
// term[i] = term_scale * (s[i] - depth * centre) + term_base[i] (0 if term_base is null), a term
// of the rescale, whenever it packs line i.
struct LineRequantization {
  MatrixView lines;
  int bits;
  BitDepthRounding rounding;
  std::uint32_t seed;
  Operand operand;
  int centre;
  double term_scale;
  const double* term_base;
  double* term;
  float* term_float;  // term[i] rounded to float, set with it
  // The blocks' phases of every line (HashPhases, bit_depth.h) where the driver has them at
  // hand (the context's PhaseCache), else null.
  const std::uint8_t* phases = nullptr;
};

struct DeclaredRange;  // bit_depth.h

// A declared range as a scan of its values' bytes checks it: a byte is within the range when,
// plus `bias` (wrapping), it has none of the bits of `above`; `bits` collects the OR of the
// biased bytes scanned. The bias is zero for uint8 values, whose ranges start at 0.
struct RangeBits {
  std::uint8_t bias;
  std::uint8_t above;
  std::uint8_t bits = 0;

  bool InRange() const { return (bits & above) == 0; }
};

// Operands narrower than 8 bits (lowbit/public/bit_depth.h): every lhs value fits lhs_bits and
// every rhs value rhs_bits, which lets a kernel for narrow data be chosen. With `rescale`
// (requantize mode), each finished block is rescaled before the output pipeline. An operand
// with a requantization is requantized as it is packed: the GEMM's view of it has the
// requantized values' type (uint8), and the driver reads its data only through the
// requantization.
struct NarrowOperands {
  int lhs_bits;
  int rhs_bits;
  const Rescale* rescale;
  const LineRequantization* lhs_requantization = nullptr;
  const LineRequantization* rhs_requantization = nullptr;
  // Declared ranges (bit_depth.h) of operands whose values RunGemm checks before it writes
  // anything, as the direct product reads them or as they are packed where it can, else up
  // front; null for an operand of 8 bits, which any value fits.
  const DeclaredRange* lhs_range = nullptr;
  const DeclaredRange* rhs_range = nullptr;
};

// Computes acc = (lhs + lhs_offset) * (rhs + rhs_offset) block by block, laid out to suit the
// result's storage order, and hands each block to the target. The arguments must have passed
// ValidateGemmArguments.
void RunGemm(Context& context, const MatrixView& lhs, const MatrixView& rhs,
             const PackedOperand* packed_rhs, const Offsets& lhs_offset, const Offsets& rhs_offset,
             const ResultTarget& target, const NarrowOperands* narrow = nullptr);

// The fewest multiply-adds for which the driver times a GEMM's kernel choice (a few microseconds
// of the narrowest kernels' work; reading the clock twice takes tens of nanoseconds).
constexpr std::int64_t kTimedKernelMinWork = std::int64_t{1} << 20;

// What keeps GEMMs of one shape apart in a context's timed kernel choice
// (ContextState::kernel_choice, where GetTimedAlternativeImplementation names a kernel): their bit
// depths, and whether they requantize, whose packing costs the two kernels differently.
std::uint32_t KernelChoiceVariant(int lhs_bits, int rhs_bits, bool requantized);

// Packs all of `rhs` (of rhs.bits bits) for `kernel` and an lhs of `lhs_bits` bits. `rhs` must
// have passed ValidateMatrix.
PackedOperand PackRhs(Kernel kernel, const MatrixView& rhs, int lhs_bits);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_DRIVER_DRIVER_H_
