// The kernel-format vocabulary every micro-kernel implements, and the packed-block layout its
// packing routine produces. One KernelImplementation per ISA file (kernel_<isa>.cc).
#ifndef LOWBIT_INTERNAL_KERNEL_KERNEL_H_
#define LOWBIT_INTERNAL_KERNEL_KERNEL_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/pack/requantize.h"
#include "lowbit/public/context.h"

namespace lowbit {
namespace internal {

// How a packed operand stores each value of a `bits`-bit source (MatrixView::bits). kInt16
// stores it as is. kInt8 centres uint8 sources (value - 2^(bits-1)) so that kernels multiply
// signed bytes; kUint8 centres int8 sources the other way (value + 2^(bits-1)), for the
// unsigned operand of vpmaddubsw. kNibbles is kUint8 split into two bytes, the value's low 4
// bits and its high 4 bits (kernel_nibbles_x86.h has the layout), so that vpmaddubsw can multiply
// an 8-bit value by int8 without saturating. kOneBitPlane and kTwoBitPlanes are kUint8 values of
// 1 or 2 bits split into bit planes, one bit per value, for kernels that multiply by AND and
// popcount (kBitPlaneGroup has the layout). kUint4Pairs is kUint8 values of at most 4 bits, two
// to a byte, for weights read from memory on every call (kernel_avx512vnni.cc has the layout);
// kInt4Pairs the same for kInt8 values, each nibble the value plus 8 (kernel_avx2.cc).
// The driver adds the shift back through the offsets.
enum class PackedType {
  kInt16,
  kInt8,
  kUint8,
  kNibbles,
  kOneBitPlane,
  kTwoBitPlanes,
  kUint4Pairs,
  kInt4Pairs
};

// The bits one packed value takes.
inline int PackedBits(PackedType type) {
  switch (type) {
    case PackedType::kInt16:
    case PackedType::kNibbles:
      return 16;
    case PackedType::kOneBitPlane:
      return 1;
    case PackedType::kTwoBitPlanes:
      return 2;
    case PackedType::kUint4Pairs:
    case PackedType::kInt4Pairs:
      return 4;
    default:
      return 8;
  }
}

// The bytes `values` packed values take: whole bytes for a whole number of depth groups.
inline std::size_t PackedBytes(PackedType type, std::int64_t values) {
  return static_cast<std::size_t>(values) * PackedBits(type) / 8;
}

// The bit planes of a packed type, or 0 for the byte types.
inline int BitPlanes(PackedType type) {
  return type == PackedType::kOneBitPlane ? 1 : type == PackedType::kTwoBitPlanes ? 2 : 0;
}

// Bit-plane layout: depth_group is kBitPlaneGroup, and each group of a panel holds, for each
// plane p (least significant first), for each row i of the panel, a uint32 word whose bit b is
// bit p of the packed value (i, group * 32 + b).
constexpr int kBitPlaneGroup = 32;

// What packing subtracts from each value of `source`.
inline int PackedValueShift(PackedType packed, const MatrixView& source) {
  if (source.shift != MatrixView::kShiftOfBits &&
      (packed == PackedType::kInt8 || packed == PackedType::kUint8)) {
    return source.shift;
  }
  const int half_range = 1 << (source.bits - 1);
  const bool signed_values = packed == PackedType::kInt8 || packed == PackedType::kInt4Pairs;
  const bool unsigned_values = packed != PackedType::kInt16 && !signed_values;
  if (signed_values && source.type == ElementType::kUint8) return half_range;
  if (unsigned_values && source.type == ElementType::kInt8) return -half_range;
  return 0;
}

// The packed type a C++ element type stores.
template <typename Packed>
constexpr PackedType kPackedTypeOf = sizeof(Packed) == 2
                                         ? PackedType::kInt16
                                         : (Packed(-1) < Packed(0) ? PackedType::kInt8
                                                                   : PackedType::kUint8);

// A register tile of lhs_rows x rhs_cols accumulators, consuming depth in groups of
// depth_group values, from operands packed as lhs_type and rhs_type.
struct KernelFormat {
  int lhs_rows;
  int rhs_cols;
  int depth_group;
  PackedType lhs_type;
  PackedType rhs_type;
  // Where nonzero, an lhs panel holds its rows in chunks of this many depth values instead of
  // depth groups (PackRowChunksPortable, pack.h): the rows of 64 bytes that an AMX tile load reads.
  // The driver's slices of depth then start at multiples of it.
  int lhs_chunk = 0;
  // Its products are exact for any values of its int8 and uint8 packed types (vpdpbusd, the AMX
  // tile), not only for the bits it was chosen for: the driver may pack declared narrow values
  // less another shift (MatrixView::shift).
  bool any_bytes = false;
  // Its tile takes its rhs a few bytes a cycle, which L2 delivers as fast as L1: the driver's
  // depth slices let the rhs micro-panel take twice L1 rather than three quarters of it
  // (ComputeBlocking), so that deeper GEMMs run in fewer slices. Not the AMX tile, whose loads
  // need L1's rate; the NEON kernels are not measured.
  bool rhs_panel_from_l2 = false;
};

// `format` with rhs_panel_from_l2 set.
constexpr KernelFormat RhsPanelFromL2(KernelFormat format) {
  format.rhs_panel_from_l2 = true;
  return format;
}

// A packed block of `count` rows (lhs rows, or rhs columns) by `depth` holds
// ceil(count / panel_width) panels, panel_width being lhs_rows or rhs_cols. A panel holds
// padded_depth = round_up(depth, depth_group) values per row, as consecutive groups: for each
// group g, for each row i of the panel, the depth_group values (i, g * depth_group + j).
// Rows past `count` and depth past `depth` are zero, so they add nothing to any product.
//
// A pack function reads `source` rows [start, start + count) and columns
// [depth_start, depth_start + depth) (for the rhs the driver passes the transposed view), writes
// the packed block, and adds each row's sum of packed values to sums[0 .. count).
using PackFunction = void (*)(const MatrixView& source, int start, int count, int depth_start,
                              int depth, void* packed, std::int32_t* sums);

// The same packing, checking the values against a declared range as it reads them: each value
// plus range->bias ORed into range->bits (RangeBits), which the driver then tests before anything
// is written.
using CheckingPackFunction = void (*)(const MatrixView& source, int start, int count,
                                      int depth_start, int depth, void* packed, std::int32_t* sums,
                                      RangeBits* range);

// The same packing of values requantized as they are read: `source` is the operand's lines as
// stored, row-major (along the depth), with the type and bits of the requantized values (uint8,
// RequantizedView) that the packed values are shifted from; `requantization` reads each stored
// byte as uint8 and gives its offsets. The call's lines are [start, start + count) at depths
// [0, depth).
using RequantizingPackFunction = void (*)(const MatrixView& source,
                                          const PackRequantization& requantization, int start,
                                          int count, int depth, void* packed, std::int32_t* sums);

// acc[i * acc_stride + j] (+)= sum over d of lhs_panel(i, d) * rhs_panel(j, d), for rows
// i < `rows` (1 .. lhs_rows) of the lhs_rows x rhs_cols tile, in wrapping int32 arithmetic.
// Stores when `accumulate` is false. Rows from `rows` on may be written too: the accumulator
// block always has room for whole tiles.
using MicroKernelFunction = void (*)(const void* lhs_panel, const void* rhs_panel, int padded_depth,
                                     int rows, std::int32_t* acc, int acc_stride, bool accumulate);

// micro_kernel down a column of lhs panels against one rhs panel: rows [0, rows) of consecutive
// lhs panels `lhs_panel_bytes` apart (the last one may be short), their sums from acc on, a panel
// of lhs_rows rows every lhs_rows * acc_stride entries. For a kernel that overlaps the end of one
// panel's work with the start of the next's.
using MicroKernelColumnFunction = void (*)(const void* lhs_panels, std::size_t lhs_panel_bytes,
                                           const void* rhs_panel, int padded_depth, int rows,
                                           std::int32_t* acc, int acc_stride, bool accumulate);

// The product of a short lhs and an rhs read where it lies, for an rhs whose columns each hold
// their depth values adjacent: packing such an rhs costs more than the product of a few rows.
// acc[i * acc_stride + j] = sum over d of lhs(i, d) * rhs(j, d), and col_sums[j] = sum over d of
// rhs(j, d), for rows i < `rows` (1 .. kMaxDirectRhsRows) and columns j < `cols` of rhs_columns
// from `first_column` on, in wrapping int32 arithmetic. lhs row i holds its `depth` values from
// lhs + i * lhs_stride on, as packed for format.lhs_type; rhs(j, d) is the value packing for
// format.rhs_type would store (PackedValueShift). rhs_columns is the rhs seen transposed,
// row-major. A null col_sums asks for no column sums: the caller's lhs offsets are all zero.
// The product may read whole cache lines around the rows and columns (masked, with no effect):
// lhs rows that start where the rhs columns do within their 64-byte lines (the driver's DirectLhs)
// are read a line at a time, as the columns are. A non-null range (a declared range of the rhs
// values) collects the bits of every rhs value it reads, plus its bias, in range->bits: the check
// costs no second pass over the rhs.
using DirectRhsFunction = void (*)(const void* lhs, std::ptrdiff_t lhs_stride, int rows, int depth,
                                   const MatrixView& rhs_columns, int first_column, int cols,
                                   std::int32_t* acc, int acc_stride, std::int32_t* col_sums,
                                   RangeBits* range);
// The same product of an rhs requantized as it is read (no range): rhs_columns is the rhs seen
// transposed as a RequantizingPackFunction's `source`, `requantization` gives column
// first_column's offsets (its phases first), and rhs(j, d) is the value the kernel's
// pack_rhs_requantizing would store. At most kRequantizingDirectRhsRows rows.
using DirectRhsRequantizingFunction = void (*)(const void* lhs, std::ptrdiff_t lhs_stride, int rows,
                                               int depth, const MatrixView& rhs_columns,
                                               const PackRequantization& requantization,
                                               int first_column, int cols, std::int32_t* acc,
                                               int acc_stride, std::int32_t* col_sums);
// The most lhs rows the driver gives a DirectRhsFunction: kShortDirectRhsRows for any depth, and
// up to KernelImplementation::direct_rhs_deep_rows for deep products.
constexpr int kShortDirectRhsRows = 8;
constexpr int kMaxDirectRhsRows = 16;
// The most lhs rows the driver gives a DirectRhsRequantizingFunction. Past four rows the product
// holds fewer columns at a time, each requantized for fewer products, and packing the requantized
// rhs was as fast (1 x 1, 2 x 2, 4 x 4 and 7 x 5 bits at 5 to 8 x 1024 x 1024), where the
// product took 0.46 to 0.77 of its time at 1 to 4 rows.
constexpr int kRequantizingDirectRhsRows = 4;

// Lines of finished sums (offset terms owed: one per line and one per entry along the lines,
// or none along them where packing cancels the other operand's offset) that a kernel writes as
// 8-bit results of an optional bias, a QuantizeDown and the saturating cast to their type, a batch
// of entries at a time, between the steps of its next tile: its multiply-adds leave vector ports
// idle that the output's conversions use (doc/design.md, "AVX-512 VNNI"). The scale runs in the
// float form of ByteScaleConstants (lowbit/internal/output/output_line.h), or with the rescale of
// requantized operands' sums before it in that of RescaledByteScaleConstants, and a vector with a
// lane in the form's window takes the exact arithmetic after the tile, as the writer's batches do.
// LinesParameters: what is the same for every line of a GEMM (of a block: acc_stride, and with a
// rescale the float form's constants, which depend on the block's terms).
struct LinesParameters {
  float multiplier, addend, magic;  // ByteScaleConstants', or RescaledByteScaleConstants'
  std::int32_t window;              // (multiplier its sum_factor, addend each line's own)
  std::int32_t scale_multiplier, scale_offset;  // the QuantizeDown's own, for the exact arithmetic
  int right_shift;
  // A QuantizeDown per channel of the task rows, the lines: its multipliers and right shifts by
  // task row (either may be one value), each line's own in line_multiplier, line_addend,
  // line_magic and line_window (ByteScaleConstants'; a window of 0 sends every vector of a line
  // whose constants are not usable to the exact arithmetic) and in line_scale_multiplier and
  // line_right_shift.
  bool scale_by_line;
  const std::int32_t* multiplier_by_row;
  const std::int32_t* right_shift_by_row;
  // A QuantizeDown per channel of the task columns, along the lines: its multipliers and right
  // shifts by task column, and from the block's first entry on each entry's own and its
  // constants (entry_multiplier ... entry_window, as for a line's above).
  bool scale_by_entry;
  const std::int32_t* multiplier_by_col;
  const std::int32_t* right_shift_by_col;
  const std::int32_t* entry_scale_multiplier;
  const std::int32_t* entry_right_shift;
  const float* entry_multiplier;
  const float* entry_addend;
  const float* entry_magic;
  const std::int32_t* entry_window;
  bool signed_results;  // int8 results, else uint8
  int acc_stride;
  std::ptrdiff_t result_stride;
  // Whether the lines run across the result's memory (a column-major result's rows: line l's
  // entry e at results + l + e * result_stride), written 16 entries of every line of the run a
  // batch; else along it (line l's entry e at results + l * result_stride + e), 64 entries of a
  // line a batch.
  bool across_memory;
  // A bias added before the scale (the program's kAdd), in wrapping int32 arithmetic: one value,
  // and values by task row (across the lines) or by task column (along them), or null.
  std::int32_t bias;
  const std::int32_t* bias_by_row;
  const std::int32_t* bias_by_col;
  // With a rescale: its terms along the lines, the float values of the one that varies (the other
  // is the same all along them, as uniform offsets make it, and folds into each line's addend),
  // and both as they are, from the block's first entry on; 1 / its divisor.
  bool rescaled;
  const float* along_float;
  const double* along_a;
  const double* along_b;
  double reciprocal;
  // Which of the entries of the last batch (64 along memory, 16 across) the lines have (all of
  // them, or a first part).
  std::uint64_t last_batch_entries;
};

// The run of lines a tile writes, with its GEMM's parameters. Nothing of it but the parameters
// needs a value before the run is aimed at (Aim) and its block set up (the driver's WritesBlock),
// so that a GEMM neither clears nor copies its 8 lines' arrays (about 1% of a 64^3 GEMM).
struct LinesBetweenSteps : LinesParameters {
  // The run of lines: `lines` lines of `batches` batches of sums, line l's from
  // sums + l * acc_stride on, what its sums are owed line_addends[l] (its offset term and bias)
  // and entry_addends[0 ..] (the entries' offset terms and bias, or null for none), its results
  // from `results` on. With a rescale, line l's own terms line_a[l] and line_b[l], and the float
  // form's factor of the varying term along it and addend (RescaledLine, output_line.h). Lines of
  // at most kMaxEntries entries: a bit each for their 16-entry vectors (exact_vectors).
  static constexpr int kMaxLines = 8;
  static constexpr int kMaxEntries = 1024;
  const std::int32_t* sums;
  const std::int32_t* line_addends;
  std::int32_t biased_terms[kMaxLines];  // line_addends where there is a bias across the lines
  const std::int32_t* entry_addends;
  std::uint8_t* results;
  int lines;
  int batches;
  double line_a[kMaxLines];
  double line_b[kMaxLines];
  float line_factor[kMaxLines];
  float line_addend[kMaxLines];  // with a rescale, or a scale by line
  float line_multiplier[kMaxLines];
  float line_magic[kMaxLines];
  std::int32_t line_window[kMaxLines];
  std::int32_t line_scale_multiplier[kMaxLines];
  int line_right_shift[kMaxLines];
  // What is written: the batches before (line, batch) (across memory, line is 0 until all are),
  // and each line's 16-entry vectors owed the exact arithmetic, a bit each.
  int line;
  int batch;
  bool exact_owed;
  std::uint64_t exact_vectors[kMaxLines];

  // Aims at the run of `line_count` lines (at most kMaxLines) from task row `row`, their sums,
  // offset terms and results from the given ones on.
  void Aim(int row, const std::int32_t* first_sums, const std::int32_t* terms,
           std::uint8_t* first_results, int line_count) {
    sums = first_sums;
    line_addends = terms;
    if (bias != 0 || bias_by_row != nullptr) {
      for (int l = 0; l < line_count; ++l) {
        std::uint32_t addend =
            static_cast<std::uint32_t>(terms[l]) + static_cast<std::uint32_t>(bias);
        if (bias_by_row != nullptr) addend += static_cast<std::uint32_t>(bias_by_row[row + l]);
        biased_terms[l] = static_cast<std::int32_t>(addend);
      }
      line_addends = biased_terms;
    }
    results = first_results;
    lines = line_count;
    line = 0;
    batch = 0;
  }
};

// micro_kernel that also writes `lines` (all of them by the time it returns), their batches
// spread between its steps.
using MicroKernelWritingFunction = void (*)(const void* lhs_panel, const void* rhs_panel,
                                            int padded_depth, int rows, std::int32_t* acc,
                                            int acc_stride, bool accumulate,
                                            LinesBetweenSteps* lines);

struct KernelImplementation {
  Kernel kernel;
  KernelFormat format;
  PackFunction pack_lhs;
  PackFunction pack_rhs;
  MicroKernelFunction micro_kernel;
  // Where the kernel has one: the driver uses it instead of packing the rhs for an lhs of at most
  // kShortDirectRhsRows rows whose rhs columns are adjacent in memory, and of at most
  // direct_rhs_deep_rows (kMaxDirectRhsRows at most) where the depth is at least
  // direct_rhs_deep_depth (declared after the other members, as they are added).
  DirectRhsFunction direct_rhs = nullptr;
  // For a prepacked rhs layout that trades arithmetic for bytes (kUint4Pairs, kInt4Pairs): the
  // implementation that multiplies the same values in the kernel's ordinary layout for these bit
  // depths, and the function that rewrites `panels` rhs panels of `padded_depth` into that layout.
  // The driver uses them for an lhs of more than unfold_above_rows rows (below), whose GEMM is
  // bound by arithmetic rather than by reading the rhs: each block of rhs columns is unfolded into
  // cache before its tiles run.
  const KernelImplementation& (*unfolded)(int lhs_bits, int rhs_bits) = nullptr;
  void (*unfold_rhs)(const void* packed, int panels, int padded_depth, void* out) = nullptr;
  // Where the micro-kernel keeps state in the CPU between calls (AMX's tile configuration):
  // `prepare` sets it up on the calling thread, unless it is so already, before a run of
  // micro-kernel calls with nothing between them but the caller's loop. The state stays after the
  // GEMM, for the thread's next one. Or null.
  void (*prepare)() = nullptr;
  // Where the kernel has them: pack_lhs and pack_rhs for lines along the depth that are
  // requantized (RequantizingPackFunction), which the driver then need not requantize into
  // scratch first and pack from there. Or null.
  RequantizingPackFunction pack_lhs_requantizing = nullptr;
  RequantizingPackFunction pack_rhs_requantizing = nullptr;
  // With unfolded: the most lhs rows the kernel multiplies in its own layout.
  int unfold_above_rows = 0;
  // Where the kernel has one, the driver runs each rhs panel's column of tiles through it rather
  // than calling micro_kernel a panel at a time. Or null.
  MicroKernelColumnFunction micro_kernel_column = nullptr;
  // Where the kernel has them: micro_kernel writing lines between its steps, and the same lines
  // written alone (those of a block's last tiles). Or null.
  MicroKernelWritingFunction micro_kernel_writing = nullptr;
  void (*write_lines)(LinesBetweenSteps* lines) = nullptr;
  int direct_rhs_deep_rows = kShortDirectRhsRows;
  int direct_rhs_deep_depth = 0;
  // Where the kernel has them: pack_lhs and pack_rhs checking a declared range as they read the
  // values (CheckingPackFunction), which the driver then need not check in a pass of its own. Or
  // null.
  CheckingPackFunction pack_lhs_checking = nullptr;
  CheckingPackFunction pack_rhs_checking = nullptr;
  // Where the kernel has one: direct_rhs for an rhs requantized along its columns, which the
  // driver then need not pack for a short lhs. Or null.
  DirectRhsRequantizingFunction direct_rhs_requantizing = nullptr;
};

const KernelImplementation& ReferenceKernel();
#if defined(__x86_64__)
// Call only when cpuinfo reports SSE4.1 (AVX2): their code uses those instructions.
const KernelImplementation& Sse41Kernel();
// The kernels for narrow operands (kernel_narrow_x86.h), or null for bit depths whose pairs
// of products may not fit int16 (NarrowInt16Steps == 0).
const KernelImplementation* Sse41NarrowKernel(int lhs_bits, int rhs_bits);
const KernelImplementation* Avx2NarrowKernel(int lhs_bits, int rhs_bits);
const KernelImplementation& Avx2Kernel();
// For prepacked weights of at most 4 bits (kUint4Pairs): the AVX-512 VNNI tile reading them two
// to a byte, half the bytes of a memory-bound product.
const KernelImplementation& Avx512VnniUint4PairsKernel();
// The same with AVX2 alone (kInt4Pairs): the narrow tile reading them two to a byte.
const KernelImplementation& Avx2Int4PairsKernel();
// AVX2 for 8-bit weights prepacked as int8 byte groups (PrepackedRhs): the quad tile of
// kernel_avx2.cc, for an lhs of several rows, and the nibble tile of kernel_nibbles_x86.h, for
// matrix-vector products. Both read the same rhs layout.
const KernelImplementation& Avx2PrepackedKernel();
const KernelImplementation& Avx2NibbleKernel();
// Call only when cpuinfo reports AVX-512 F, BW and VNNI and AVX2: kernel_avx512vnni.cc. It serves
// prepacked weights too, in the same layout.
const KernelImplementation& Avx512VnniKernel();
// Its direct product (direct_rhs_avx512vnni.cc), which the AMX kernel runs too.
void DirectRhsAvx512Vnni(const void* lhs, std::ptrdiff_t lhs_stride, int rows, int depth,
                         const MatrixView& rhs_columns, int first_column, int cols,
                         std::int32_t* acc, int acc_stride, std::int32_t* col_sums,
                         RangeBits* range);
void DirectRhsRequantizingAvx512Vnni(const void* lhs, std::ptrdiff_t lhs_stride, int rows,
                                     int depth, const MatrixView& rhs_columns,
                                     const PackRequantization& requantization, int first_column,
                                     int cols, std::int32_t* acc, int acc_stride,
                                     std::int32_t* col_sums);
// Call only where AmxSupported() (kernel_amx.cc): the AMX tile kernel for 8-bit operands.
const KernelImplementation& AmxKernel();
// Whether the CPU has AMX-TILE and AMX-INT8 and the OS lets this process use the tile registers
// (asked once, on the first call).
bool AmxSupported();
// The bit-serial kernels for 1- and 2-bit operands (kernel_bit_serial_avx512.cc), or null for
// other bit depths. Call only when cpuinfo reports AVX-512 VPOPCNTDQ besides the above.
const KernelImplementation* Avx512BitSerialKernel(int lhs_bits, int rhs_bits);
// The same with AVX2 alone (kernel_bit_serial_avx2.cc: a nibble-table popcount).
const KernelImplementation* Avx2BitSerialKernel(int lhs_bits, int rhs_bits);
#endif
#if defined(__aarch64__)
const KernelImplementation& NeonKernel();
// Call only when cpuinfo reports the Armv8.2 dot-product instructions: its code uses SDOT.
const KernelImplementation& NeonDotKernel();
// The same, for prepacked weights of at most 4 bits stored two to a byte (kUint4Pairs).
const KernelImplementation& NeonDotUint4PairsKernel();
// The narrow NEON kernel for these bit depths, or null where it would add no more than one
// product in int16 (NeonNarrowInt16Steps < 2).
const KernelImplementation* NeonNarrowKernel(int lhs_bits, int rhs_bits);
// The bit-serial kernels for 1- and 2-bit operands (kernel_bit_serial_neon.cc: AND and vcnt), or
// null for other bit depths.
const KernelImplementation* NeonBitSerialKernel(int lhs_bits, int rhs_bits);
#endif

// How many products each packed value of a GEMM takes part in, for choosing a kernel whose packing
// costs more: min(rows, cols) for a GEMM that packs both operands; this for a prepacked rhs, packed
// once, or where the caller asks what suits the largest GEMMs.
constexpr int kUnboundedUses = 1 << 30;

// The implementation for a resolved (non-kAuto) kernel, and operands of these bit depths
// (MatrixView::bits) whose packed values each take part in `uses` products: the kernel's narrow
// implementation where it has one, they allow it and it pays for the uses.
const KernelImplementation& GetKernelImplementation(Kernel kernel, int lhs_bits = 8,
                                                    int rhs_bits = 8, int uses = kUnboundedUses);
// The implementation GetKernelImplementation passes over for these bit depths and uses where the
// bit-serial kernel and the other one are a close call that another host, or this host under
// other load, may turn around, so that the driver times both (MeasuredChoice): with AVX-512
// VNNI, 1 x 1 bits from 16 to 255 uses and 1 x 2 bits from 64; with AMX, 1 x 1 bits from 256;
// with AVX2, 1 x 2 bits from 256. Null elsewhere.
const KernelImplementation* GetTimedAlternativeImplementation(Kernel kernel, int lhs_bits,
                                                              int rhs_bits, int uses);
// The implementation that packs prepacked weights (PrepackedRhs) for `kernel` and multiplies
// them with an lhs of `lhs_rows` rows (0 to pack them: every implementation this returns for the
// same kernel and bit depths reads the same rhs layout): the bit-serial one where it pays; else
// for weights of at most 4 bits the kernel's two-to-a-byte one, where it has one; else the narrow
// one for bit depths that have one; else
// the kernel's matrix-vector one, where it has one, for one or two rows; else the same as for an
// ordinary rhs or one whose rhs layout suits an operand read from memory on every call.
const KernelImplementation& GetPrepackedRhsKernelImplementation(Kernel kernel, int lhs_bits = 8,
                                                                int rhs_bits = 8, int lhs_rows = 0);

// The bit-serial implementation of `kernel` for these bit depths on this CPU, whether or not
// GetKernelImplementation picks it; null where there is none.
const KernelImplementation* GetBitSerialKernelImplementation(Kernel kernel, int lhs_bits,
                                                             int rhs_bits);

// Whether an rhs packed for one format can be multiplied by a kernel of the other.
inline bool SameRhsLayout(const KernelFormat& a, const KernelFormat& b) {
  return a.rhs_cols == b.rhs_cols && a.depth_group == b.depth_group && a.rhs_type == b.rhs_type;
}

// Every register tile and depth group is a power of two wide: those take a mask, not an integer
// division's tens of cycles, of which a small GEMM's set-up has many.
inline int RoundUp(int value, int multiple) {
  if (value >= 0 && (multiple & (multiple - 1)) == 0) return (value + multiple - 1) & -multiple;
  return (value + multiple - 1) / multiple * multiple;
}

// A register tile touches its accumulator rows (each `cols` int32 wide, acc_stride apart) only
// after its depth loop: it asks for them before, so that they arrive while the loop runs.
inline void PrefetchAccumulatorRows(const std::int32_t* acc, int acc_stride, int rows, int cols) {
  for (int i = 0; i < rows; ++i) {
    __builtin_prefetch(acc + i * acc_stride);
    __builtin_prefetch(acc + i * acc_stride + cols - 1);
  }
}

// Calls function(std::integral_constant<int, rows>()) for 1 <= rows <= kMaxRows <= 8: the
// micro-kernels instantiate one loop per row count of a short last panel.
template <int kMaxRows, typename Function>
void ForRowCount(int rows, Function&& function) {
  static_assert(kMaxRows >= 1 && kMaxRows <= 8, "register tiles have 1 to 8 rows");
  switch (rows) {
    case 1:
      return function(std::integral_constant<int, 1>());
    case 2:
      return function(std::integral_constant<int, (kMaxRows < 2 ? kMaxRows : 2)>());
    case 3:
      return function(std::integral_constant<int, (kMaxRows < 3 ? kMaxRows : 3)>());
    case 4:
      return function(std::integral_constant<int, (kMaxRows < 4 ? kMaxRows : 4)>());
    case 5:
      return function(std::integral_constant<int, (kMaxRows < 5 ? kMaxRows : 5)>());
    case 6:
      return function(std::integral_constant<int, (kMaxRows < 6 ? kMaxRows : 6)>());
    case 7:
      return function(std::integral_constant<int, (kMaxRows < 7 ? kMaxRows : 7)>());
    default:
      return function(std::integral_constant<int, kMaxRows>());
  }
}

// Narrow kernels (kUint8 lhs, kInt8 rhs, as packed) add pairs of products in int16: a pair is
// at most (2^lhs_bits - 1) * 2^(rhs_bits - 1) * 2 in magnitude, so `steps` pairs fit int16 while
// steps * (2^lhs_bits - 1) * 2^rhs_bits <= 32767. The largest power of two that does, up to
// kMaxNarrowInt16Steps; 0 where a single pair may not fit (8 x 8 bits): no narrow kernel.
constexpr int kMaxNarrowInt16Steps = 128;

// The largest power of two n <= kMaxNarrowInt16Steps with n * bound <= 32767, or 0 if none.
constexpr int Int16Steps(int bound) {
  if (bound > 32767) return 0;
  int steps = 1;
  while (steps < kMaxNarrowInt16Steps && 2 * steps * bound <= 32767) steps *= 2;
  return steps;
}

// Returns function(std::integral_constant<int, steps>()) for steps a power of two from kMinSteps
// (1 or 2) to kMaxNarrowInt16Steps: each narrow kernel is instantiated once per step count, and
// none below the fewest it can take.
template <int kMinSteps, typename Function>
auto ForInt16Steps(int steps, Function&& function) {
  static_assert(kMinSteps == 1 || kMinSteps == 2, "narrow kernels take one or two steps at least");
  switch (steps) {
    case 1:
      return function(std::integral_constant<int, kMinSteps>());
    case 2:
      return function(std::integral_constant<int, 2>());
    case 4:
      return function(std::integral_constant<int, 4>());
    case 8:
      return function(std::integral_constant<int, 8>());
    case 16:
      return function(std::integral_constant<int, 16>());
    case 32:
      return function(std::integral_constant<int, 32>());
    case 64:
      return function(std::integral_constant<int, 64>());
    default:
      return function(std::integral_constant<int, kMaxNarrowInt16Steps>());
  }
}

constexpr int NarrowInt16Steps(int lhs_bits, int rhs_bits) {
  return Int16Steps(((1 << lhs_bits) - 1) << rhs_bits);
}

// The NEON kernels pack both operands centred signed (kInt8), so a product is at most
// 2^(lhs_bits-1) * 2^(rhs_bits-1) in magnitude, and vmlal_s8 adds single products in int16:
// NeonNarrowInt16Steps of them fit. 1 for 8 x 8 bits, the plain kernel's one vmull_s8.
constexpr int NeonNarrowInt16Steps(int lhs_bits, int rhs_bits) {
  return Int16Steps(1 << (lhs_bits + rhs_bits - 2));
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_KERNEL_KERNEL_H_
