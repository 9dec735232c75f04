// The GEMM loops. A task owns a range of lhs rows and result columns: it packs its lhs rows,
// runs the micro-kernel over every register tile slice by slice of depth, adds the offset terms
// and hands each finished accumulator block to the output pipeline. When several tasks share rhs
// columns, the rhs is packed once up front (whole depth, in chunks of columns) and shared;
// otherwise (a short lhs) each task packs its rhs blocks just before use, while they are in
// cache. Each result entry belongs to exactly one task, so the bits do not depend on the thread
// count or on which thread runs which task. A column-major result is computed as the transposed
// product, so that accumulator rows run along the result's columns and stores are sequential.
#include "lowbit/internal/driver/driver.h"

#include <pthreadpool.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/internal/driver/blocking.h"
#include "lowbit/internal/driver/context_state.h"
#include "lowbit/internal/driver/scratch.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/output/output.h"
#include "lowbit/internal/output/output_line.h"
#include "lowbit/internal/output/unpack.h"

namespace lowbit {
namespace internal {
namespace {

// Where part `index` starts when `count` items are split into `parts` near-equal parts. One part,
// a small GEMM's, without a 64-bit division.
int PartStart(int count, int parts, int index) {
  if (parts == 1) return count * index;
  return static_cast<int>(static_cast<std::int64_t>(count) * index / parts);
}

// The lhs rows [row_start, row_start + rows) as a DirectRhsFunction reads them: row i from
// out + i * row_stride on, each value as packed for `type`, and each row's sum of those values
// into sums.
template <typename Scalar>
void CopyLhsRows(const MatrixView& lhs, int row_start, int rows, PackedType type,
                 std::ptrdiff_t row_stride, std::int8_t* out, std::int32_t* sums) {
  const int shift = PackedValueShift(type, lhs);
  // Steps between a row's adjacent values and between rows: a single row stored column-major
  // usually has adjacent values too.
  const bool row_major = lhs.order == Order::kRowMajor;
  const std::ptrdiff_t value_step = row_major ? 1 : lhs.stride;
  const std::ptrdiff_t row_step = row_major ? lhs.stride : 1;
  const int depth = lhs.cols;
  for (int i = 0; i < rows; ++i) {
    const Scalar* values = static_cast<const Scalar*>(lhs.data) + (row_start + i) * row_step;
    std::int8_t* row = out + i * row_stride;
    std::int32_t sum = 0;
    // Adjacent values get a loop of their own, which the compiler vectorizes; a run-time step
    // would keep it scalar.
    if (value_step == 1) {
      for (int d = 0; d < depth; ++d) {
        row[d] = static_cast<std::int8_t>(values[d] - shift);
        sum += row[d];
      }
    } else {
      for (int d = 0; d < depth; ++d) {
        row[d] = static_cast<std::int8_t>(values[d * value_step] - shift);
        sum += row[d];
      }
    }
    sums[i] = sum;
  }
}

// The separable offset terms (both offsets uniform): row_parts[r] = row_factor * row_terms[r] +
// row_addend and col_parts[c] = col_factor * col_sums[c] (unpack.h), owed by the raw sums times
// sum_factor.
struct SeparableFactors {
  std::int32_t row_factor;
  std::int32_t row_addend;
  std::int32_t col_factor;
  std::int32_t sum_factor;

  // The plain terms of effective offsets a (lhs) and b (rhs).
  static SeparableFactors Plain(std::int32_t a, std::int32_t b) { return {b, 0, a, 1}; }

  // The terms of an exact rescale (RescaleLineTerms::exact_factor), lhs and rhs as the task sees
  // them. Its sum_k (f u + P)(g v + Q) with u = lhs + a and v = rhs + b, and
  // sum_k u v = raw + a * col_sums + b * row_terms (row_terms = sum_k u, col_sums = sum_k rhs),
  // regroups to f g raw + (f g a + g P) col_sums + (f g b + f Q) row_terms + depth P (g b + Q).
  // Wrapping int32 arithmetic: the result fits int32 (the depth guard), so the wrapped parts
  // come back to it exactly.
  static SeparableFactors Exact(const Rescale& rescale, std::int32_t a, std::int32_t b, int depth) {
    const auto wrap = [](std::uint32_t value) { return static_cast<std::int32_t>(value); };
    const auto f = static_cast<std::uint32_t>(rescale.lhs.exact_factor);
    const auto g = static_cast<std::uint32_t>(rescale.rhs.exact_factor);
    const auto p = static_cast<std::uint32_t>(rescale.lhs.exact_offset);
    const auto q = static_cast<std::uint32_t>(rescale.rhs.exact_offset);
    const auto ua = static_cast<std::uint32_t>(a), ub = static_cast<std::uint32_t>(b);
    return {wrap(f * g * ub + f * q), wrap(static_cast<std::uint32_t>(depth) * p * (g * ub + q)),
            wrap(f * g * ua + g * p), wrap(f * g)};
  }
};

// A worker's memory for requantizing a panel of up to `width` lines of `depth` as it packs them
// (WorkerScratch::requantize): the requantized values, their line sums, RequantizeLines' work.
struct RequantizeScratch {
  std::uint8_t* values;
  std::int32_t* sums;
  void* work;

  static std::size_t ValuesBytes(int width, int depth) {
    return AlignUp(static_cast<std::size_t>(width) * depth);
  }
  static std::size_t Bytes(int width, int depth, std::size_t work_bytes) {
    return ValuesBytes(width, depth) + AlignUp(sizeof(std::int32_t) * width) + work_bytes;
  }
  static RequantizeScratch In(char* memory, int width, int depth) {
    auto* sums = reinterpret_cast<std::int32_t*>(memory + ValuesBytes(width, depth));
    return {reinterpret_cast<std::uint8_t*>(memory), sums,
            reinterpret_cast<char*>(sums) + AlignUp(sizeof(std::int32_t) * width)};
  }
};

// Whether `pack`, a kernel's packer that requantizes lines as it reads them (or null), takes the
// lines of `r`: those along the depth. The others are requantized into scratch first.
bool RequantizedAsPacked(RequantizingPackFunction pack, const LineRequantization& r) {
  return pack != nullptr && r.lines.order == Order::kRowMajor;
}

// Lines [first, first + count) of a view of lines by depth.
MatrixView SubLines(const MatrixView& lines, int first, int count) {
  MatrixView part = lines;
  const std::ptrdiff_t step = lines.order == Order::kRowMajor ? lines.stride : 1;
  part.data = static_cast<const char*>(lines.data) + first * step * ElementSize(lines.type);
  part.rows = count;
  return part;
}

// Stores the float form of `constants` (a QuantizeDown's) at [i] of the four arrays, as a kernel
// that writes results between its steps reads them (LinesBetweenSteps): a window of 0 where they
// are not usable sends every lane to the exact arithmetic.
void StoreFormConstants(const output_writer::ByteScaleConstants& constants, int i,
                        float* multipliers, float* addends, float* magics, std::int32_t* windows) {
  multipliers[i] = constants.multiplier;
  addends[i] = constants.addend;
  magics[i] = constants.magic;
  windows[i] = constants.window;
}

struct GemmTask {
  const KernelImplementation& kernel;
  const MatrixView& lhs;
  const MatrixView rhs_transposed;
  Blocking blocking;
  int padded_depth;
  bool stream_rhs;
  ScratchLayout layout;
  char* scratch;
  SharedScratch shared;
  const ResultTarget& target;
  // The ISA writer for target.program, or null to run target.consumer.
  OutputWriter output_writer;
  // kernel.direct_rhs where the rhs is read unpacked (RunGemm), else null.
  DirectRhsFunction direct_rhs;
  // A prepacked rhs in another layout (KernelImplementation::unfold_rhs): each block's panels are
  // unfolded into the worker's rhs block before use, and their prepacked type. Or null.
  void (*unfold_rhs)(const void* packed, int panels, int padded_depth, void* out);
  PackedType folded_type;
  // The task computes result^T = rhs^T * lhs^T: its rows are result columns.
  bool transposed;
  // The writer gets the offset terms as row and column parts (both offsets uniform).
  bool separable_terms;
  // The separable terms' factors (SeparableFactors).
  SeparableFactors separable;
  int workers;
  // The context's state, whose GEMM the pool threads run (WorkerOfContext).
  const ContextState* context_state = nullptr;
  // The rhs chunk being worked on: columns [chunk_start, chunk_start + chunk_cols).
  int chunk_start = 0;
  int chunk_cols = 0;
  int row_tasks = 0;
  int col_tasks = 0;
  // The next task's index, or with guided row parts the next row panel (NextTask).
  std::atomic<int> next_task{0};
  // pthreadpool orders the hand-off to and from its workers, but it is not instrumented, so
  // ThreadSanitizer cannot see that; a release/acquire pair on these makes the order explicit.
  std::atomic<int> handed_out{0};
  std::atomic<int> handed_back{0};
  // Requantized operands: the rescale with lhs and rhs as the task sees them, and as the result
  // does (for the writer); or null.
  const Rescale* rescale = nullptr;
  const Rescale* result_rescale = nullptr;
  // Operands requantized as they are packed, lhs and rhs as the task sees them; or null.
  const LineRequantization* lhs_requantization = nullptr;
  const LineRequantization* rhs_requantization = nullptr;
  // Their packers store each requantized value scaled to the 8-bit value it stands for (RunGemm).
  bool scale_requantized = false;
  // Where the rhs is read unpacked and requantized (RunGemm): kernel.direct_rhs_requantizing,
  // which RunBlocks calls in place of direct_rhs. Else null.
  DirectRhsRequantizingFunction direct_rhs_requantizing = nullptr;
  // The kernel the context resolved, whose ISA requantization runs on.
  Kernel resolved_kernel = Kernel::kReference;
  // The widest panel of lines PackLines requantizes at a time.
  int requantize_width = 0;
  // The requantized lhs rows' rescale terms are set (SetLhsTerms): packing leaves them.
  bool lhs_terms_set = false;
  // Every effective lhs offset is zero (a uint8 lhs with offset -128, packed as int8): rows owe
  // no depth * offset term (MakeRowTerms).
  bool lhs_offsets_zero = false;
  // Whether the kernel writes each block's results between the steps of its last tiles
  // (LinesBetweenSteps, RunBlocks), and the lines' parameters for the GEMM (WritesBetweenSteps).
  bool write_between_steps = false;
  LinesParameters lines_parameters{};
  // A declared range of the rhs that the direct product checks as it reads it, or null
  // (RunGemm): the GEMM is then one block, written only if the check passes.
  RangeBits* rhs_range = nullptr;
  // A declared range of the rhs that PackRhsPart checks as it packs it, panel by panel, or null
  // (RunGemm): the bits it finds gather in rhs_range_bits_packed, which RunGemm reads before
  // anything is written.
  const RangeBits* rhs_range_packed = nullptr;
  mutable std::atomic<std::uint8_t> rhs_range_bits_packed{0};
  // The same for the lhs, which RunTask checks as it packs it, panel by panel, before its first
  // block; a single worker's single task, in the first chunk of columns (RunGemm).
  const RangeBits* lhs_range_packed = nullptr;
  mutable std::atomic<std::uint8_t> lhs_range_bits_packed{0};

  std::size_t LhsPanelBytes() const {
    return PackedBytes(kernel.format.lhs_type,
                       static_cast<std::int64_t>(kernel.format.lhs_rows) * padded_depth);
  }
  std::size_t RhsPanelBytes() const {
    return PackedBytes(kernel.format.rhs_type,
                       static_cast<std::int64_t>(kernel.format.rhs_cols) * padded_depth);
  }

  // Worker `part` of `workers` packs its share of the chunk's rhs panels, whole depth, and with
  // rhs_range_packed checks their columns: as it reads them where the kernel can
  // (pack_rhs_checking), else each panel's after packing them, while they are in L1.
  void PackRhsPart(int part) const {
    const int width = kernel.format.rhs_cols;
    const int panels = (chunk_cols + width - 1) / width;
    const int first = PartStart(panels, workers, part);
    const int last = PartStart(panels, workers, part + 1);
    if (first == last) return;
    const WorkerScratch worker = layout.Worker(scratch, part);
    const int first_col = first * width;
    const int part_cols = std::min(last * width, chunk_cols) - first_col;
    char* const packed = shared.packed_rhs + first * RhsPanelBytes();
    if (rhs_range_packed == nullptr) {
      PackRhsColumns(worker, first_col, part_cols, packed);
      return;
    }
    RangeBits found = *rhs_range_packed;
    if (kernel.pack_rhs_checking != nullptr) {
      PackRhsColumns(worker, first_col, part_cols, packed, &found);
    } else {
      for (int panel = first; panel < last; ++panel) {
        const int col = panel * width;
        const int cols = std::min(width, chunk_cols - col);
        PackRhsColumns(worker, col, cols, shared.packed_rhs + panel * RhsPanelBytes());
        OrBitsOfLines(rhs_transposed, chunk_start + col, cols, &found);
      }
    }
    rhs_range_bits_packed.fetch_or(found.bits, std::memory_order_relaxed);
  }

  // Packs the chunk's columns [col, col + cols), whole depth, into `packed`, and their sums
  // into col_sums (pack functions add to the sums they are given); with `range`, through the
  // kernel's pack_rhs_checking, which checks them against it as it reads them.
  void PackRhsColumns(const WorkerScratch& scratch, int col, int cols, char* packed,
                      RangeBits* range = nullptr) const {
    std::memset(shared.col_sums + col, 0, sizeof(std::int32_t) * cols);
    if (range != nullptr) {
      kernel.pack_rhs_checking(rhs_transposed, chunk_start + col, cols, 0, lhs.cols, packed,
                               shared.col_sums + col, range);
      return;
    }
    PackLines(RhsPacking(), rhs_transposed, rhs_requantization, rescale != nullptr,
              chunk_start + col, cols, packed, shared.col_sums + col, scratch);
  }

  // How the task packs one of its operands: the kernel's functions, the packed type, and the
  // panels' width and bytes.
  struct OperandPacking {
    PackFunction pack;
    RequantizingPackFunction pack_requantizing;
    PackedType type;
    int width;
    std::size_t panel_bytes;
  };
  OperandPacking LhsPacking() const {
    return {kernel.pack_lhs, kernel.pack_lhs_requantizing, kernel.format.lhs_type,
            kernel.format.lhs_rows, LhsPanelBytes()};
  }
  OperandPacking RhsPacking() const {
    return {kernel.pack_rhs, kernel.pack_rhs_requantizing, kernel.format.rhs_type,
            kernel.format.rhs_cols, RhsPanelBytes()};
  }

  // Packs lines [start, start + count) of `lines` (lhs rows or rhs columns, by depth), adding
  // their sums to sums[0 .. count): as they are, or with a requantization, setting each line's
  // rescale term with `set_terms`. Where the kernel requantizes such lines as it packs them, it
  // does (at 256^3 the AMX L4R4 GEMM ran 1.1 times as fast as through scratch); otherwise each
  // panel is requantized into the worker's scratch and packed from there while it is in cache.
  void PackLines(const OperandPacking& packing, const MatrixView& lines,
                 const LineRequantization* requantization, bool set_terms, int start, int count,
                 char* packed, std::int32_t* sums, const WorkerScratch& scratch) const {
    const int depth = lhs.cols;
    if (requantization == nullptr) {
      packing.pack(lines, start, count, 0, depth, packed, sums);
      return;
    }
    const LineRequantization& r = *requantization;
    const RequantizeScratch memory = RequantizeMemory(scratch);
    if (RequantizedAsPacked(packing.pack_requantizing, r)) {
      // As many whole panels a call as the scratch has room for the lines' sums: the AVX-512
      // VNNI kernel's lhs packer steps two 8-row panels at once.
      const int call_lines = requantize_width / packing.width * packing.width;
      const std::int64_t shift = PackedValueShift(packing.type, lines);
      for (int first = 0; first < count; first += call_lines) {
        const int lines_now = std::min(call_lines, count - first);
        // The requantized values' line sums, from the packed values'.
        if (set_terms) std::copy_n(sums + first, lines_now, memory.sums);
        packing.pack_requantizing(
            lines, PackRequantizationOf(r, start + first, lines_now, memory), start + first,
            lines_now, depth, packed + first / packing.width * packing.panel_bytes, sums + first);
        if (!set_terms) continue;
        for (int i = 0; i < lines_now; ++i) {
          SetTerm(r, start + first + i,
                  static_cast<std::int64_t>(sums[first + i]) - memory.sums[i] + depth * shift);
        }
      }
      return;
    }
    for (int first = 0; first < count; first += packing.width) {
      const int panel_lines = std::min(packing.width, count - first);
      const MatrixView source = RequantizePanel(r, start + first, panel_lines, memory, set_terms);
      // The requantized values, of the bit depth `lines` declares.
      MatrixView requantized = RequantizedView(source, memory.values);
      requantized.bits = lines.bits;
      packing.pack(requantized, 0, panel_lines, 0, depth,
                   packed + first / packing.width * packing.panel_bytes, sums + first);
    }
  }

  // A worker's memory for requantizing up to requantize_width lines.
  RequantizeScratch RequantizeMemory(const WorkerScratch& scratch) const {
    return RequantizeScratch::In(scratch.requantize, requantize_width, lhs.cols);
  }

  // How a kernel's packer or direct product requantizes lines [first, first + count) of `r` as
  // it reads them, with `memory`'s work for the offsets' phases where they are not cached.
  PackRequantization PackRequantizationOf(const LineRequantization& r, int first, int count,
                                          const RequantizeScratch& memory) const {
    PackRequantization requantization =
        RequantizingPack(resolved_kernel, r.lines, r.bits, r.rounding, r.seed, r.operand, first,
                         count, memory.work, r.phases);
    if (scale_requantized) requantization.factor = 255 / ((1 << r.bits) - 1);
    return requantization;
  }

  // Sets line `line`'s rescale term from the sum of its requantized values.
  void SetTerm(const LineRequantization& r, int line, std::int64_t sum) const {
    const std::int64_t centred = sum - static_cast<std::int64_t>(lhs.cols) * r.centre;
    r.term[line] = r.term_scale * static_cast<double>(centred) +
                   (r.term_base != nullptr ? r.term_base[line] : 0.0);
    r.term_float[line] = static_cast<float>(r.term[line]);
  }

  // Requantizes lines [line, line + count) of `r` into memory.values (and their sums into
  // memory.sums), and with `set_terms` sets their rescale terms. Returns the view of the source
  // lines.
  MatrixView RequantizePanel(const LineRequantization& r, int line, int count,
                             const RequantizeScratch& memory, bool set_terms) const {
    const MatrixView source = SubLines(r.lines, line, count);
    RequantizeLines(resolved_kernel, source, r.bits, r.rounding, r.seed, r.operand, memory.values,
                    memory.sums, memory.work, line);
    if (!set_terms) return source;
    for (int i = 0; i < count; ++i) SetTerm(r, line + i, memory.sums[i]);
    return source;
  }

  // Sets the rescale terms of every lhs row (requantizing them for their sums) before tasks
  // that share rows run side by side.
  void SetLhsTerms() {
    const RequantizeScratch memory = RequantizeMemory(layout.Worker(scratch, 0));
    for (int line = 0; line < lhs.rows; line += requantize_width) {
      RequantizePanel(*lhs_requantization, line, std::min(requantize_width, lhs.rows - line),
                      memory, true);
    }
    lhs_terms_set = true;
  }

  // The direct product's copy of lhs rows [row_start, row_start + rows), requantized (at most
  // requantize_width rows), with their rescale terms where the task owes them and has not set
  // them: each value as the kernel's requantizing packer stores it (scaled to the 8-bit value it
  // stands for where scale_requantized), shifted for the packed type, and their sums.
  void CopyRequantizedLhsRows(const WorkerScratch& scratch, int row_start, int rows,
                              std::ptrdiff_t row_stride, std::int8_t* out) const {
    const LineRequantization& r = *lhs_requantization;
    const int depth = lhs.cols;
    const RequantizeScratch memory = RequantizeMemory(scratch);
    // The requantized values, of the bit depth `lhs` declares, as PackLines packs them.
    MatrixView values = RequantizedView(
        RequantizePanel(r, row_start, rows, memory, rescale != nullptr && !lhs_terms_set),
        memory.values);
    values.bits = lhs.bits;
    if (scale_requantized) {
      const int factor = 255 / ((1 << r.bits) - 1);
      std::uint8_t* const end = memory.values + static_cast<std::ptrdiff_t>(rows) * depth;
      for (std::uint8_t* value = memory.values; value != end; ++value) {
        *value = static_cast<std::uint8_t>(*value * factor);
      }
    }
    CopyLhsRows<std::uint8_t>(values, 0, rows, kernel.format.lhs_type, row_stride, out,
                              scratch.row_sums);
  }

  // Where the direct product's lhs copy starts in `scratch`: where the rhs columns start within
  // their 64-byte lines, if they all start at the same offset, so that it reads whole lines of
  // both (DirectRhsFunction).
  char* DirectLhs(const WorkerScratch& scratch) const {
    const std::size_t column_bytes =
        static_cast<std::size_t>(rhs_transposed.stride) * ElementSize(rhs_transposed.type);
    const std::size_t lead =
        column_bytes % 64 == 0 ? reinterpret_cast<std::uintptr_t>(rhs_transposed.data) % 64 : 0;
    return scratch.packed_lhs + lead;
  }

  // The result columns [col_start, col_start + cols) of the chunk for the rows packed in
  // `scratch`, in accumulator blocks of blocking.cols (streamed_cols) columns.
  void RunBlocks(const WorkerScratch& scratch, int row_start, int rows, int col_start,
                 int cols) const {
    const KernelFormat& format = kernel.format;
    const int depth = lhs.cols;
    const int acc_stride = AccumulatorStride(blocking.cols, format);
    const std::size_t lhs_panel_bytes = LhsPanelBytes();
    const std::size_t rhs_panel_bytes = RhsPanelBytes();
    const int block_width =
        stream_rhs || unfold_rhs != nullptr ? blocking.streamed_cols : blocking.cols;
    for (int block_start = col_start; block_start < col_start + cols; block_start += block_width) {
      const int block_cols = std::min(block_width, col_start + cols - block_start);
      if (direct_rhs != nullptr) {
        // The column sums count only through their factor in the separable terms, else through
        // the lhs offsets: where that is zero (a uint8 lhs with offset -128), the product skips
        // them, a ninth of its vpdpbusd on 8 rows and half on 1. A requantized rhs's rescale
        // terms need them too.
        std::int32_t* const col_sums = shared.col_sums + block_start;
        const std::int32_t* const lhs_offsets = shared.lhs_offsets + row_start;
        const bool sum_columns =
            (rescale != nullptr && rhs_requantization != nullptr) ||
            (separable_terms ? separable.col_factor != 0
                             : std::any_of(lhs_offsets, lhs_offsets + rows,
                                           [](std::int32_t a) { return a != 0; }));
        if (!sum_columns) std::fill_n(col_sums, block_cols, 0);
        const int first_column = chunk_start + block_start;
        if (direct_rhs_requantizing != nullptr) {
          const PackRequantization columns = PackRequantizationOf(
              *rhs_requantization, first_column, block_cols, RequantizeMemory(scratch));
          direct_rhs_requantizing(DirectLhs(scratch), DirectLhsStride(depth), rows, depth,
                                  rhs_transposed, columns, first_column, block_cols, scratch.acc,
                                  acc_stride, sum_columns ? col_sums : nullptr);
          if (rescale != nullptr) {
            // The requantized values' column sums, from the packed values' (as PackLines).
            const std::int64_t shift = PackedValueShift(kernel.format.rhs_type, rhs_transposed);
            for (int j = 0; j < block_cols; ++j) {
              SetTerm(*rhs_requantization, first_column + j, col_sums[j] + depth * shift);
            }
          }
        } else {
          direct_rhs(DirectLhs(scratch), DirectLhsStride(depth), rows, depth, rhs_transposed,
                     first_column, block_cols, scratch.acc, acc_stride,
                     sum_columns ? col_sums : nullptr, rhs_range);
        }
        if (rhs_range != nullptr && !rhs_range->InRange()) return;
        FinishBlock(scratch, row_start, rows, block_start, block_cols, acc_stride);
        continue;
      }
      const int first_panel = block_start / format.rhs_cols;
      const char* packed_rhs = stream_rhs || unfold_rhs != nullptr
                                   ? scratch.rhs_block
                                   : shared.rhs_panels + first_panel * rhs_panel_bytes;
      if (stream_rhs) PackRhsColumns(scratch, block_start, block_cols, scratch.rhs_block);
      if (unfold_rhs != nullptr) {
        const std::int64_t panel_values = static_cast<std::int64_t>(format.rhs_cols) * padded_depth;
        unfold_rhs(shared.rhs_panels + first_panel * PackedBytes(folded_type, panel_values),
                   (block_cols + format.rhs_cols - 1) / format.rhs_cols, padded_depth,
                   scratch.rhs_block);
      }
      if (kernel.prepare != nullptr) kernel.prepare();
      // The lines of each tile's rows are finished by the last depth slice's tile of the block's
      // last rhs panel, and written during the next tile down the panel.
      WrittenBlock written;
      const bool writes_lines =
          write_between_steps && depth > 0 &&
          WritesBlock(scratch, row_start, rows, block_start, block_cols, acc_stride, &written);
      if (depth == 0) {
        std::memset(scratch.acc, 0,
                    sizeof(std::int32_t) * RoundUp(rows, format.lhs_rows) * acc_stride);
      }
      for (int depth_start = 0; depth_start < depth; depth_start += blocking.depth) {
        const int slice_depth =
            RoundUp(std::min(blocking.depth, depth - depth_start), format.depth_group);
        const std::size_t lhs_slice =
            PackedBytes(format.lhs_type, static_cast<std::int64_t>(depth_start) * format.lhs_rows);
        const std::size_t rhs_slice =
            PackedBytes(format.rhs_type, static_cast<std::int64_t>(depth_start) * format.rhs_cols);
        // Panel pointers step along: an integer division per kernel call costs tens of cycles,
        // which small GEMMs notice.
        const char* rhs_panel = packed_rhs + rhs_slice;
        for (int j = 0; j < block_cols; j += format.rhs_cols, rhs_panel += rhs_panel_bytes) {
          const char* lhs_panel = scratch.packed_lhs + lhs_slice;
          if (kernel.micro_kernel_column != nullptr) {
            kernel.micro_kernel_column(lhs_panel, lhs_panel_bytes, rhs_panel, slice_depth, rows,
                                       scratch.acc + j, acc_stride, depth_start > 0);
            continue;
          }
          if (writes_lines && depth_start + blocking.depth >= depth &&
              j + format.rhs_cols >= block_cols) {
            RunLastTilesWriting(scratch, &written, lhs_panel, rhs_panel, slice_depth, row_start,
                                rows, j, depth_start > 0);
            continue;
          }
          for (int i = 0; i < rows; i += format.lhs_rows, lhs_panel += lhs_panel_bytes) {
            kernel.micro_kernel(lhs_panel, rhs_panel, slice_depth,
                                std::min(format.lhs_rows, rows - i),
                                scratch.acc + static_cast<std::ptrdiff_t>(i) * acc_stride + j,
                                acc_stride, depth_start > 0);
          }
        }
      }
      if (!writes_lines) FinishBlock(scratch, row_start, rows, block_start, block_cols, acc_stride);
    }
  }

  // What a block whose results its last tiles write (RunLastTilesWriting) takes: its lines'
  // parameters (none aimed at yet), where its results start, and with a rescale the bounds and
  // constants of its float form.
  struct WrittenBlock {
    LinesBetweenSteps lines;
    std::uint8_t* results;
    output_writer::RescaleBounds bounds;
    output_writer::RescaledByteScaleConstants constants;
  };

  // Whether the block of task rows [row_start, row_start + rows) by chunk columns
  // [block_start, block_start + block_cols) can be written between tile steps (write_between_steps
  // holds for the GEMM): its lines hold at most kMaxEntries entries, and the terms of a rescale
  // allow its float form (whose constants depend on their magnitudes, which the writer takes per
  // block too). Then `written` is set up, with the terms owed along the lines in scratch.col_parts
  // where there are some.
  bool WritesBlock(const WorkerScratch& scratch, int row_start, int rows, int block_start,
                   int block_cols, int acc_stride, WrittenBlock* written) const {
    if (block_cols > LinesBetweenSteps::kMaxEntries) return false;
    LinesBetweenSteps& lines = written->lines;
    static_cast<LinesParameters&>(lines) = lines_parameters;
    lines.exact_owed = false;
    std::fill_n(lines.exact_vectors, LinesBetweenSteps::kMaxLines, 0);
    const int first_col = chunk_start + block_start;
    if (rescale != nullptr) {
      // The lines are task rows: their own terms are the lhs's, the rhs's lie along them.
      const RescaleLineTerms& along = rescale->rhs;
      written->bounds = output_writer::RescaleBoundsOf(
          rescale->lhs.a + row_start, rescale->lhs.b + row_start, rows, along.a_float + first_col,
          along.b_float + first_col, block_cols);
      const output_writer::RescaleBounds& bounds = written->bounds;
      written->constants = output_writer::RescaledByteScaleConstants(
          lines.scale_multiplier, lines.right_shift, lines.scale_offset, rescale->divisor,
          bounds.line_a, bounds.line_b, bounds.along_a, bounds.along_b);
      if (!written->constants.usable) return false;
      lines.multiplier = written->constants.sum_factor;
      lines.magic = written->constants.magic;
      lines.window = written->constants.window;
      // Uniform offsets leave one of the terms the same all along the lines (bit_depth.cc).
      const float* const one_along =
          output_writer::OneAlong(along.a_float + first_col, along.b_float + first_col, bounds);
      if (one_along == nullptr) return false;
      lines.rescaled = true;
      lines.along_float = one_along;
      lines.along_a = along.a + first_col;
      lines.along_b = along.b + first_col;
    }
    lines.acc_stride = acc_stride;
    const int batch_entries = lines.across_memory ? 16 : 64;
    lines.batches = (block_cols + batch_entries - 1) / batch_entries;
    const int last_entries = block_cols - batch_entries * (lines.batches - 1);
    lines.last_batch_entries =
        last_entries == batch_entries ? ~std::uint64_t{0} : (std::uint64_t{1} << last_entries) - 1;
    // The offset terms along the lines (where packing does not cancel the lhs offset) and a bias
    // along them, each entry's in one addend.
    lines.entry_addends = lines.bias_by_col != nullptr ? lines.bias_by_col + first_col : nullptr;
    if (separable.col_factor != 0) {
      ScaleTerms(separable.col_factor, shared.rhs_col_sums + block_start, 0, block_cols,
                 scratch.col_parts);
      if (lines.entry_addends != nullptr) {
        for (int c = 0; c < block_cols; ++c) {
          scratch.col_parts[c] =
              static_cast<std::int32_t>(static_cast<std::uint32_t>(scratch.col_parts[c]) +
                                        static_cast<std::uint32_t>(lines.entry_addends[c]));
        }
      }
      lines.entry_addends = scratch.col_parts;
    }
    if (lines.scale_by_entry) {
      lines.entry_scale_multiplier = lines.multiplier_by_col + first_col;
      lines.entry_right_shift = lines.right_shift_by_col + first_col;
      // The worker's arrays of LinesBetweenSteps::kMaxEntries entries (RunGemm's layout).
      auto* const multipliers = reinterpret_cast<float*>(scratch.entry_constants);
      float* const addends = multipliers + LinesBetweenSteps::kMaxEntries;
      float* const magics = addends + LinesBetweenSteps::kMaxEntries;
      auto* const windows =
          reinterpret_cast<std::int32_t*>(magics + LinesBetweenSteps::kMaxEntries);
      for (int c = 0; c < block_cols; ++c) {
        StoreFormConstants(
            output_writer::ByteScaleConstants(lines.entry_scale_multiplier[c],
                                              lines.entry_right_shift[c], lines.scale_offset),
            c, multipliers, addends, magics, windows);
      }
      lines.entry_multiplier = multipliers;
      lines.entry_addend = addends;
      lines.entry_magic = magics;
      lines.entry_window = windows;
    }
    // Task rows are result rows (the task is not transposed where the lines run across memory).
    const std::ptrdiff_t line_step = lines.across_memory ? 1 : lines.result_stride;
    const std::ptrdiff_t entry_step = lines.across_memory ? lines.result_stride : 1;
    written->results = static_cast<std::uint8_t*>(const_cast<void*>(target.result.data)) +
                       row_start * line_step + first_col * entry_step;
    return true;
  }

  // The tiles of the last depth slice down the block's last rhs panel (from column j), each
  // writing the finished lines of the tile before it between its steps, the last tile's lines
  // written after it: the block's results, all of them (WritesBlock).
  void RunLastTilesWriting(const WorkerScratch& scratch, WrittenBlock* written,
                           const char* lhs_panel, const char* rhs_panel, int slice_depth,
                           int row_start, int rows, int j, bool accumulate) const {
    const int tile_rows = kernel.format.lhs_rows;
    const std::size_t lhs_panel_bytes = LhsPanelBytes();
    LinesBetweenSteps& lines = written->lines;
    const int acc_stride = lines.acc_stride;
    const auto aim = [&](int first_line, int count) {
      const int row = row_start + first_line;
      lines.Aim(row, scratch.acc + static_cast<std::ptrdiff_t>(first_line) * acc_stride,
                scratch.row_parts + first_line,
                written->results +
                    first_line * (lines.across_memory ? std::ptrdiff_t{1} : lines.result_stride),
                count);
      if (lines.scale_by_line) {
        for (int l = 0; l < count; ++l) {
          const std::int32_t multiplier = lines.multiplier_by_row != nullptr
                                              ? lines.multiplier_by_row[row + l]
                                              : lines.scale_multiplier;
          const int right_shift = lines.right_shift_by_row != nullptr
                                      ? lines.right_shift_by_row[row + l]
                                      : lines.right_shift;
          StoreFormConstants(
              output_writer::ByteScaleConstants(multiplier, right_shift, lines.scale_offset), l,
              lines.line_multiplier, lines.line_addend, lines.line_magic, lines.line_window);
          lines.line_scale_multiplier[l] = multiplier;
          lines.line_right_shift[l] = right_shift;
        }
      }
      if (rescale == nullptr) return;
      for (int l = 0; l < count; ++l) {
        lines.line_a[l] = rescale->lhs.a[row + l];
        lines.line_b[l] = rescale->lhs.b[row + l];
        const output_writer::RescaledLine factors = output_writer::RescaledLineOf(
            lines.line_a[l], lines.line_b[l], written->bounds, written->constants);
        lines.line_factor[l] = factors.line_a;
        lines.line_addend[l] = factors.addend;
      }
    };
    aim(0, 0);
    for (int i = 0; i < rows; i += tile_rows, lhs_panel += lhs_panel_bytes) {
      kernel.micro_kernel_writing(lhs_panel, rhs_panel, slice_depth, std::min(tile_rows, rows - i),
                                  scratch.acc + static_cast<std::ptrdiff_t>(i) * acc_stride + j,
                                  acc_stride, accumulate, &lines);
      aim(i, std::min(tile_rows, rows - i));
    }
    kernel.write_lines(&lines);
  }

  // Hands the block of raw sums in scratch.acc, task rows [row_start, row_start + rows) by chunk
  // columns [block_start, block_start + block_cols), to the output with its offset terms.
  void FinishBlock(const WorkerScratch& scratch, int row_start, int rows, int block_start,
                   int block_cols, int acc_stride) const {
    const int result_col = chunk_start + block_start;
    const std::int32_t* lhs_offsets = shared.lhs_offsets + row_start;
    const std::int32_t* rhs_offsets = shared.rhs_offsets + result_col;
    const std::int32_t* col_sums = shared.rhs_col_sums + block_start;
    const AccumulatorBlock block =
        transposed
            ? AccumulatorBlock{result_col, row_start, block_cols, rows, scratch.acc, 1, acc_stride}
            : AccumulatorBlock{row_start, result_col, rows, block_cols, scratch.acc, acc_stride, 1};
    if (output_writer != nullptr) {
      // a[r] * col_sums[c] + row_terms[r] * b[c], with task rows r along the result's columns
      // when transposed, or with a and b uniform its two parts: the writer adds them as it
      // loads the block, then the rescale.
      OffsetTerms terms;
      if (separable_terms) {
        ScaleTerms(separable.col_factor, col_sums, 0, block_cols, scratch.col_parts);
        const bool row_parts_zero = separable.row_factor == 0 && separable.row_addend == 0;
        const bool col_parts_zero = separable.col_factor == 0;
        terms = transposed
                    ? OffsetTerms::Separable(scratch.col_parts, scratch.row_parts,
                                             separable.sum_factor, col_parts_zero, row_parts_zero)
                    : OffsetTerms::Separable(scratch.row_parts, scratch.col_parts,
                                             separable.sum_factor, row_parts_zero, col_parts_zero);
      } else {
        terms = transposed ? OffsetTerms{col_sums, lhs_offsets, rhs_offsets, scratch.row_sums}
                           : OffsetTerms{lhs_offsets, col_sums, scratch.row_sums, rhs_offsets};
      }
      output_writer(*target.program, block, terms, result_rescale, target.result);
    } else {
      AddOffsetTerms(lhs_offsets, scratch.row_sums, rows, rhs_offsets, col_sums, block_cols,
                     scratch.acc, acc_stride);
      if (rescale != nullptr) {
        RescaleBlock(*rescale, row_start, rows, result_col, block_cols, scratch.acc, acc_stride);
      }
      target.consumer(target.closure, block);
    }
  }

  // Packs lhs rows [row_start, row_start + rows) of a declared range, checking them as it reads
  // them where the kernel can (pack_lhs_checking), else two panels at a time, each pair checked
  // just after packing it, while it is in L1; false, with the bits found in lhs_range_bits_packed,
  // if a value lies outside the range. Pairs, as a packer may step its panels in pairs and send a
  // single panel to a narrower fallback (the AVX-512 packer does).
  bool PackLhsChecking(const WorkerScratch& scratch, int row_start, int rows) const {
    const OperandPacking packing = LhsPacking();
    RangeBits found = *lhs_range_packed;
    if (kernel.pack_lhs_checking != nullptr) {
      kernel.pack_lhs_checking(lhs, row_start, rows, 0, lhs.cols, scratch.packed_lhs,
                               scratch.row_sums, &found);
      lhs_range_bits_packed.fetch_or(found.bits, std::memory_order_relaxed);
      return found.InRange();
    }
    const int pair = 2 * packing.width;
    for (int first = 0; first < rows; first += pair) {
      const int count = std::min(pair, rows - first);
      PackLines(packing, lhs, nullptr, false, row_start + first, count,
                scratch.packed_lhs + first / packing.width * packing.panel_bytes,
                scratch.row_sums + first, scratch);
      OrBitsOfLines(lhs, row_start + first, count, &found);
    }
    lhs_range_bits_packed.fetch_or(found.bits, std::memory_order_relaxed);
    return found.InRange();
  }

  // Row panels [first_panel, end_panel) (register tiles) against column part col_part of the
  // chunk.
  void RunTask(const WorkerScratch& scratch, int first_panel, int end_panel, int col_part) const {
    const KernelFormat& format = kernel.format;
    const int col_panels = (chunk_cols + format.rhs_cols - 1) / format.rhs_cols;
    const int row_start = first_panel * format.lhs_rows;
    const int row_end = std::min(lhs.rows, end_panel * format.lhs_rows);
    const int col_start = PartStart(col_panels, col_tasks, col_part) * format.rhs_cols;
    const int col_end =
        std::min(chunk_cols, PartStart(col_panels, col_tasks, col_part + 1) * format.rhs_cols);
    if (row_start >= row_end || col_start >= col_end) return;
    const int rows = row_end - row_start;
    if (direct_rhs != nullptr) {
      auto* copy = reinterpret_cast<std::int8_t*>(DirectLhs(scratch));
      const std::ptrdiff_t row_stride = DirectLhsStride(lhs.cols);
      if (lhs_requantization != nullptr) {
        CopyRequantizedLhsRows(scratch, row_start, rows, row_stride, copy);
      } else if (lhs.type == ElementType::kUint8) {
        CopyLhsRows<std::uint8_t>(lhs, row_start, rows, kernel.format.lhs_type, row_stride, copy,
                                  scratch.row_sums);
      } else {
        CopyLhsRows<std::int8_t>(lhs, row_start, rows, kernel.format.lhs_type, row_stride, copy,
                                 scratch.row_sums);
      }
    } else {
      std::memset(scratch.row_sums, 0, sizeof(std::int32_t) * rows);
      if (lhs_range_packed != nullptr) {
        if (!PackLhsChecking(scratch, row_start, rows)) return;
      } else {
        // The lhs terms are shared by the tasks on the same rows: set up front when several run
        // side by side (RunGemm), so that no two workers write them.
        PackLines(LhsPacking(), lhs, lhs_requantization, rescale != nullptr && !lhs_terms_set,
                  row_start, rows, scratch.packed_lhs, scratch.row_sums, scratch);
      }
    }
    if (!lhs_offsets_zero) {
      MakeRowTerms(shared.lhs_offsets + row_start, lhs.cols, rows, scratch.row_sums);
    }
    if (separable_terms) {
      ScaleTerms(separable.row_factor, scratch.row_sums, separable.row_addend, rows,
                 scratch.row_parts);
    }
    RunBlocks(scratch, row_start, rows, col_start, col_end - col_start);
  }

  // The next task, or false when there is none left. One worker, or several sharing out column
  // parts as well, takes the row_tasks x col_tasks equal tasks in turn. Several workers on one
  // column part take row parts that shrink as the rows run out (guided scheduling): a row_tasks
  // share at first, then a share of what is left, down to kMinGuidedPanels. Equal parts left a
  // worker waiting for the other's last part: on two threads at 1024^3 one worker idled for 1 to
  // 3 ms of each 11 ms GEMM, as the same parts took 3.7 to 5.5 ms on this shared host.
  bool NextTask(int* first_panel, int* end_panel, int* col_part) {
    const int row_panels = (lhs.rows + kernel.format.lhs_rows - 1) / kernel.format.lhs_rows;
    if (workers == 1 || col_tasks > 1) {
      const int task = next_task++;
      if (task >= row_tasks * col_tasks) return false;
      *first_panel = PartStart(row_panels, row_tasks, task / col_tasks);
      *end_panel = PartStart(row_panels, row_tasks, task / col_tasks + 1);
      *col_part = task % col_tasks;
      return true;
    }
    constexpr int kMinGuidedPanels = 4;
    // No larger than the equal parts, which the scratch memory is laid out for.
    const int largest = (row_panels + row_tasks - 1) / row_tasks;
    int first = next_task.load(std::memory_order_relaxed);
    int count = 0;
    do {
      if (first >= row_panels) return false;
      const int remaining = row_panels - first;
      const int share = (remaining + 2 * workers - 1) / (2 * workers);
      count = std::min({largest, remaining, std::max(kMinGuidedPanels, share)});
    } while (!next_task.compare_exchange_weak(first, first + count, std::memory_order_relaxed));
    *first_panel = first;
    *end_panel = first + count;
    *col_part = 0;
    return true;
  }

  // Tasks go to whichever worker asks first: a worker slowed by another process on the
  // machine takes fewer of them, and each worker still has scratch slot `worker` to itself.
  void RunWorker(int worker) {
    const WorkerScratch worker_scratch = layout.Worker(scratch, worker);
    int first_panel = 0, end_panel = 0, col_part = 0;
    while (NextTask(&first_panel, &end_panel, &col_part)) {
      RunTask(worker_scratch, first_panel, end_panel, col_part);
    }
  }

  // Runs (task->*kPart)(part) on a pool thread.
  template <auto kPart>
  static void Thunk(void* task, std::size_t part) {
    auto* self = static_cast<GemmTask*>(task);
    self->handed_out.load(std::memory_order_acquire);
    const WorkerOfContext worker(*self->context_state);
    (self->*kPart)(static_cast<int>(part));
    self->handed_back.fetch_add(1, std::memory_order_release);
  }

  // Runs kPart for parts 0 .. workers - 1 on the pool.
  template <auto kPart>
  void Parallelize(pthreadpool_t pool) {
    handed_out.fetch_add(1, std::memory_order_release);
    pthreadpool_parallelize_1d(pool, &Thunk<kPart>, this, workers, 0);
    handed_back.load(std::memory_order_acquire);
  }
};

// A vector stored with unit steps is the same memory in either order. Seen along its length, a
// writer stores whole vectors of results instead of one entry per line.
MatrixView AlongItsLength(const MatrixView& result) {
  MatrixView view = result;
  if (result.stride == 1 && result.order == Order::kColMajor && result.rows == 1) {
    view.order = Order::kRowMajor;
    view.stride = result.cols;
  } else if (result.stride == 1 && result.order == Order::kRowMajor && result.cols == 1) {
    view.order = Order::kColMajor;
    view.stride = result.rows;
  }
  return view;
}

// The shift (MatrixView::shift) that cancels the uniform `offset` of declared narrow values
// packed as `type`, where that type holds every value less it; else MatrixView::kShiftOfBits. The
// offset's separable terms then vanish, and the writer adds only the other side's (for an
// activation of 4 bits with zero point 0, packed as int8: 0, where 2^(bits-1) left each row a
// term). Products of any bytes are exact in int32 modulo 2^32, as every kernel's are.
int CancellingShift(PackedType type, const MatrixView& view, const Offsets& offset) {
  if (view.bits >= 8 || offset.is_per_channel() ||
      (type != PackedType::kInt8 && type != PackedType::kUint8)) {
    return MatrixView::kShiftOfBits;
  }
  const std::int64_t shift = -static_cast<std::int64_t>(offset(0));
  const std::int64_t lowest = view.type == ElementType::kInt8 ? -(1 << (view.bits - 1)) : 0;
  const std::int64_t highest = lowest + (1 << view.bits) - 1;
  const std::int64_t packed_lowest = type == PackedType::kInt8 ? -128 : 0;
  if (lowest - shift < packed_lowest || highest - shift > packed_lowest + 255) {
    return MatrixView::kShiftOfBits;
  }
  return static_cast<int>(shift);
}

// Where a check that rode on the product or on packing found a value outside `range`:
// CheckDeclaredRange names it and throws. `who` names the check for an internal error if it
// does not.
[[noreturn]] void ThrowOutsideDeclaredRange(const DeclaredRange& range, const char* who) {
  CheckDeclaredRange(range);
  throw std::logic_error("lowbit internal error: " + std::string(who) + " found a value outside " +
                         std::string(range.name) +
                         "'s declared range that CheckDeclaredRange did not");
}

// The same for a scan of `scan`'s range whose bits the packing workers gathered in `found`.
void ThrowIfPackingFoundOutside(const RangeBits& scan, const std::atomic<std::uint8_t>& found,
                                const DeclaredRange& range) {
  if (!RangeBits{scan.bias, scan.above, found.load(std::memory_order_relaxed)}.InRange()) {
    ThrowOutsideDeclaredRange(range, "packing");
  }
}

// Whether `program` holds a QuantizeDown per channel: a kernel that writes results between its
// tile's steps then keeps each entry's float-form constants where the channels run along the
// lines (WorkerScratch::entry_constants).
bool ScalesPerChannel(const OutputProgram& program) {
  for (int i = 0; i < program.count; ++i) {
    const OutputInstruction& instruction = program.instructions[i];
    if (instruction.opcode == OutputOpcode::kScaleByFixedPoint &&
        (instruction.first.per_channel != nullptr || instruction.second.per_channel != nullptr)) {
      return true;
    }
  }
  return false;
}

// Where `kernel` writes the results between its tile's steps (LinesBetweenSteps) for a GEMM whose
// writer would owe its sums separable offset terms (task lhs rows' and columns'), and then
// the rescale of requantized operands where `rescale` (as the task sees it) is not null, and run
// `program`: an optional bias (not after a rescale), a QuantizeDown of one multiplier and a right
// shift, and the saturating cast to bytes; true with `lines` (value-initialized, GemmTask's) set up
// for the GEMM (WritesBlock sets up each block's).
bool WritesBetweenSteps(const KernelImplementation& kernel, const OutputProgram& program,
                        const Rescale* rescale, const MatrixView& result, bool transposed,
                        LinesParameters* lines) {
  const bool biased = program.count == 3;
  // The rescale's float form needs its terms' float values along the lines.
  const bool rescale_floats =
      rescale == nullptr || (rescale->rhs.a_float != nullptr && rescale->rhs.b_float != nullptr);
  if (kernel.micro_kernel_writing == nullptr ||
      kernel.format.lhs_rows > LinesBetweenSteps::kMaxLines || (program.count != 2 && !biased) ||
      (biased && rescale != nullptr) || !rescale_floats ||
      (biased && program.instructions[0].opcode != OutputOpcode::kAdd)) {
    return false;
  }
  const bool signed_results = result.type == ElementType::kInt8;
  if (!signed_results && result.type != ElementType::kUint8) return false;
  const OutputInstruction& scale = program.instructions[biased ? 1 : 0];
  const OutputInstruction& cast = program.instructions[biased ? 2 : 1];
  if (scale.opcode != OutputOpcode::kScaleByFixedPoint || cast.opcode != OutputOpcode::kClamp ||
      cast.offset != (signed_results ? -128 : 0) || cast.limit != (signed_results ? 127 : 255)) {
    return false;
  }
  // A scale per channel: of the task rows (a result row is a task row unless the task is
  // transposed; multiplier, shift or both), or of the task columns (both), with right shifts
  // (per-channel ones stored as shifts), and no rescale.
  const auto by_task_row = [&](const ChannelParameter& parameter) {
    return parameter.per_channel != nullptr && (parameter.axis == ChannelAxis::kRow) != transposed;
  };
  const auto by_task_col = [&](const ChannelParameter& parameter) {
    return parameter.per_channel != nullptr && (parameter.axis == ChannelAxis::kRow) == transposed;
  };
  const ChannelParameter& multiplier = scale.first;
  const ChannelParameter& exponent = scale.second;
  const bool scale_by_line = by_task_row(multiplier) || by_task_row(exponent);
  const bool scale_by_entry = by_task_col(multiplier) || by_task_col(exponent);
  if ((exponent.per_channel != nullptr ? !exponent.negated : exponent.value > 0) ||
      (scale_by_line && scale_by_entry) ||
      (scale_by_entry && !(by_task_col(multiplier) && by_task_col(exponent))) ||
      ((scale_by_line || scale_by_entry) && rescale != nullptr)) {
    return false;
  }
  const int right_shift = -exponent.value;
  const output_writer::ByteScaleConstants constants(multiplier.value, right_shift, scale.offset);
  if (!scale_by_line && !scale_by_entry && !constants.usable) return false;
  lines->scale_by_line = scale_by_line;
  lines->multiplier_by_row = scale_by_line ? multiplier.per_channel : nullptr;
  lines->right_shift_by_row = scale_by_line ? exponent.per_channel : nullptr;
  lines->scale_by_entry = scale_by_entry;
  lines->multiplier_by_col = scale_by_entry ? multiplier.per_channel : nullptr;
  lines->right_shift_by_col = scale_by_entry ? exponent.per_channel : nullptr;
  lines->multiplier = constants.multiplier;
  lines->addend = constants.addend;
  lines->magic = constants.magic;
  lines->window = constants.window;
  lines->scale_multiplier = multiplier.value;
  lines->scale_offset = scale.offset;
  lines->right_shift = right_shift;
  lines->signed_results = signed_results;
  lines->result_stride = result.stride;
  // A transposed task's rows are a column-major result's columns, along its memory.
  lines->across_memory = !transposed && result.order == Order::kColMajor;
  if (rescale != nullptr) lines->reciprocal = 1.0 / rescale->divisor;
  if (biased) {
    const ChannelParameter& bias = program.instructions[0].first;
    if (bias.per_channel == nullptr) {
      lines->bias = bias.value;
    } else if (by_task_row(bias)) {
      lines->bias_by_row = bias.per_channel;
    } else {
      lines->bias_by_col = bias.per_channel;
    }
  }
  return true;
}

}  // namespace

std::uint32_t KernelChoiceVariant(int lhs_bits, int rhs_bits, bool requantized) {
  return static_cast<std::uint32_t>((lhs_bits << 5) | (rhs_bits << 1) | (requantized ? 1 : 0));
}

void RunGemm(Context& context, const MatrixView& result_lhs, const MatrixView& result_rhs,
             const PackedOperand* packed_rhs, const Offsets& result_lhs_offset,
             const Offsets& result_rhs_offset, const ResultTarget& caller_target,
             const NarrowOperands* narrow) {
  ResultTarget target = caller_target;
  target.result = AlongItsLength(caller_target.result);
  // Narrow operands choose narrow kernels (MatrixView::bits).
  MatrixView narrow_lhs = result_lhs, narrow_rhs = result_rhs;
  if (narrow != nullptr) {
    narrow_lhs.bits = narrow->lhs_bits;
    narrow_rhs.bits = narrow->rhs_bits;
  }
  // A short lhs stays on the left even for a column-major result: its few rows would fill
  // register tiles badly as rhs columns, and its few result columns are cheap to store. A
  // prepacked rhs is packed for the right-hand side and stays there.
  const bool transposed = packed_rhs == nullptr && target.result.order == Order::kColMajor &&
                          result_lhs.rows >= result_rhs.cols;
  const MatrixView lhs = transposed ? Transposed(narrow_rhs) : narrow_lhs;
  const MatrixView rhs = transposed ? Transposed(narrow_lhs) : narrow_rhs;
  const Offsets& lhs_offset = transposed ? result_rhs_offset : result_lhs_offset;
  const Offsets& rhs_offset = transposed ? result_lhs_offset : result_rhs_offset;
  ContextState& state = context.state();
  const Kernel resolved_kernel = context.ResolvedKernel();
  const int rows = lhs.rows, cols = rhs.cols, depth = lhs.cols;
  const std::int64_t work = static_cast<std::int64_t>(rows) * cols * std::max(depth, 1);
  const int uses = std::min(rows, cols);
  const KernelImplementation& by_rule =
      packed_rhs != nullptr
          ? GetPrepackedRhsKernelImplementation(resolved_kernel, lhs.bits, rhs.bits, lhs.rows)
          : GetKernelImplementation(resolved_kernel, lhs.bits, rhs.bits, uses);
  // Where the faster kernel changes with the host and its load, the one its shape ran faster
  // with (MeasuredChoice): requantized operands apart from declared ones, whose packing differs.
  // Not for GEMMs so small that reading the clock would cost a few percent of them.
  const KernelImplementation* alternative =
      packed_rhs != nullptr || work < kTimedKernelMinWork
          ? nullptr
          : GetTimedAlternativeImplementation(resolved_kernel, lhs.bits, rhs.bits, uses);
  MeasuredChoice::Decision kernel_decision;
  if (alternative != nullptr) {
    const bool requantized = narrow != nullptr && (narrow->lhs_requantization != nullptr ||
                                                   narrow->rhs_requantization != nullptr);
    kernel_decision = state.kernel_choice.Choose(
        rows, cols, depth, KernelChoiceVariant(lhs.bits, rhs.bits, requantized));
  }
  const KernelImplementation& chosen = kernel_decision.preferred ? by_rule : *alternative;
  const bool unfold =
      packed_rhs != nullptr && chosen.unfold_rhs != nullptr && lhs.rows > chosen.unfold_above_rows;
  const KernelImplementation& kernel = unfold ? chosen.unfolded(lhs.bits, rhs.bits) : chosen;
  const OutputWriter output_writer =
      target.program != nullptr ? OutputWriterFor(resolved_kernel) : nullptr;
  const KernelFormat& format = kernel.format;
  Blocking blocking = state.blocking.For(format, state.caches, rows, cols, depth);
  const int padded_depth = RoundUp(depth, format.depth_group);
  const int row_panels = (rows + format.lhs_rows - 1) / format.lhs_rows;
  // A thread's share must outweigh handing it over (and, on a busy machine, waiting for a core):
  // at least 16 multiply-adds per byte of L1, about 4 microseconds of the AVX2 kernel's work on a
  // 32 KiB L1, 1 of the AVX-512 VNNI kernel's on a 48 KiB one; above that, the thread choice runs
  // the GEMM on one thread where its shape ran faster so. Threads beyond the cores the process may
  // run on would only take turns with the others, each turn a scheduler time slice.
  // (No 64-bit division where one thread is all there may be.)
  int threads = 1;
  if (state.max_num_threads > 1 && state.cores > 1) {
    threads = static_cast<int>(std::max<std::int64_t>(
        1, std::min<std::int64_t>({static_cast<std::int64_t>(state.max_num_threads), state.cores,
                                   work / (16 * state.caches.l1_bytes)})));
  }
  MeasuredChoice::Decision thread_decision;
  if (threads > 1) {
    // Each kernel of a timed choice has its own times on threads and on one.
    thread_decision =
        state.thread_choice.Choose(rows, cols, depth, kernel_decision.preferred ? 0 : 1);
    if (!thread_decision.preferred) threads = 1;
  }
  // Created before the clock starts: the first GEMM on threads pays for creating them, which is
  // no measure of how fast threads run its shape.
  pthreadpool_t pool = threads > 1 ? state.ThreadPool(threads) : nullptr;
  const bool timed = thread_decision.shape_class >= 0 || kernel_decision.shape_class >= 0;
  const auto start =
      timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  // Row parts no larger than blocking.rows, as many as a multiple of the thread count where
  // there are enough register tiles, so that every thread gets an equal share; with guided
  // parts (GemmTask::NextTask), the size of the first, largest ones.
  int row_tasks = row_panels * format.lhs_rows <= blocking.rows
                      ? 1
                      : (row_panels * format.lhs_rows + blocking.rows - 1) / blocking.rows;
  if (threads > 1) row_tasks = std::min(row_panels, (row_tasks + threads - 1) / threads * threads);
  // With a single row part, no two tasks share rhs columns: each can pack its own, in cache.
  const bool single_row_part = row_tasks == 1 && packed_rhs == nullptr;
  const bool separable_terms =
      output_writer != nullptr && !lhs_offset.is_per_channel() && !rhs_offset.is_per_channel();
  // The parts of `narrow` for the task's lhs (the result's lhs, or its rhs when transposed) and
  // for its rhs, or null.
  const auto task_sides = [&](auto result_lhs_part, auto result_rhs_part) {
    using Part = std::decay_t<decltype(narrow->*result_lhs_part)>;
    if (narrow == nullptr) return std::pair<Part, Part>(nullptr, nullptr);
    const Part lhs_part = narrow->*result_lhs_part, rhs_part = narrow->*result_rhs_part;
    return transposed ? std::pair<Part, Part>(rhs_part, lhs_part)
                      : std::pair<Part, Part>(lhs_part, rhs_part);
  };
  // Requantized operands, as the task sees them: each worker requantizes a panel at a time.
  const auto [result_side_lhs, result_side_rhs] =
      task_sides(&NarrowOperands::lhs_requantization, &NarrowOperands::rhs_requantization);
  // Lines the kernel's packers requantize as they read them, with probabilistic rounding, take
  // their blocks' phases from the context's cache.
  LineRequantization cached_sides[2];
  const auto with_cached_phases = [&](const LineRequantization* requantization,
                                      RequantizingPackFunction pack,
                                      LineRequantization* copy) -> const LineRequantization* {
    if (requantization == nullptr || !RequantizedAsPacked(pack, *requantization) ||
        requantization->rounding == BitDepthRounding::kNearest) {
      return requantization;
    }
    *copy = *requantization;
    copy->phases = state.phases.For(resolved_kernel, copy->lines, copy->seed, copy->operand);
    return copy;
  };
  const LineRequantization* const lhs_requantization =
      with_cached_phases(result_side_lhs, kernel.pack_lhs_requantizing, &cached_sides[0]);
  const LineRequantization* const rhs_requantization =
      with_cached_phases(result_side_rhs, kernel.pack_rhs_requantizing, &cached_sides[1]);
  // Requantized bit depths whose 255 / (2^bits - 1) is an integer f on both sides
  // (RescaleLineTerms::exact_factor), packed by a kernel of bytes that requantizes both operands
  // as it reads them: the packers store f times each value, the 8-bit value it stands for, and
  // the GEMM is the 8-bit one of those bytes, with the offsets of the values as uint8. Its sums
  // are the rescaled results, with no factor left for the writer to apply.
  const Rescale* const rescale = narrow != nullptr ? narrow->rescale : nullptr;
  Rescale task_rescale;
  if (rescale != nullptr) {
    task_rescale = *rescale;
    if (transposed) std::swap(task_rescale.lhs, task_rescale.rhs);
  }
  const auto multiplies_bytes = [](PackedType type) {
    return type == PackedType::kInt8 || type == PackedType::kUint8;
  };
  const bool scale_requantized =
      rescale != nullptr && task_rescale.lhs.exact_factor != 0 &&
      task_rescale.rhs.exact_factor != 0 && packed_rhs == nullptr &&
      multiplies_bytes(format.lhs_type) && multiplies_bytes(format.rhs_type) &&
      lhs_requantization != nullptr && rhs_requantization != nullptr &&
      RequantizedAsPacked(kernel.pack_lhs_requantizing, *lhs_requantization) &&
      RequantizedAsPacked(kernel.pack_rhs_requantizing, *rhs_requantization);
  MatrixView task_lhs = lhs, task_rhs = rhs;
  Offsets task_lhs_offset = lhs_offset, task_rhs_offset = rhs_offset;
  if (scale_requantized) {
    task_lhs.bits = task_rhs.bits = 8;
    task_lhs_offset =
        task_rescale.lhs.exact_offset - task_rescale.lhs.exact_factor * lhs_requantization->centre;
    task_rhs_offset =
        task_rescale.rhs.exact_offset - task_rescale.rhs.exact_factor * rhs_requantization->centre;
  }
  if (format.any_bytes && lhs_requantization == nullptr) {
    task_lhs.shift = CancellingShift(format.lhs_type, task_lhs, task_lhs_offset);
  }
  if (format.any_bytes && rhs_requantization == nullptr && packed_rhs == nullptr) {
    task_rhs.shift = CancellingShift(format.rhs_type, task_rhs, task_rhs_offset);
  }
  // A short lhs against an rhs whose columns hold their depth values adjacent: the kernel reads
  // the rhs where it lies. Packing it would cost several times the product (1 x 1024 x 1024:
  // packing took 70% of the time, the tile 19%). Declared-range operands too, whose values are
  // the bytes as they lie; and requantized ones of fewer rows, where the kernel requantizes the
  // rhs columns as it reads them and the lhs rows are copied requantized.
  const bool direct_requantized =
      (lhs_requantization != nullptr || rhs_requantization != nullptr) &&
      (rhs_requantization == nullptr ||
       RequantizedAsPacked(kernel.pack_rhs_requantizing, *rhs_requantization)) &&
      kernel.direct_rhs_requantizing != nullptr && rows <= kRequantizingDirectRhsRows;
  const bool direct =
      kernel.direct_rhs != nullptr && single_row_part && rhs.order == Order::kColMajor &&
      ((lhs_requantization == nullptr && rhs_requantization == nullptr &&
        (rows <= kShortDirectRhsRows ||
         (rows <= kernel.direct_rhs_deep_rows && depth >= kernel.direct_rhs_deep_depth))) ||
       direct_requantized);
  // Declared ranges are checked before anything is written. The direct product checks its rhs
  // as it reads it, where one worker computes the whole result as one block before writing it
  // (whose accumulators take at most an L2, four times the usual block): a separate pass over a
  // 1 x 1024 x 1024 GEMM's rhs took more time than the product. An rhs packed whole before any
  // block is checked as it is packed (below); other operands here, up front.
  const auto [lhs_range, rhs_range] =
      task_sides(&NarrowOperands::lhs_range, &NarrowOperands::rhs_range);
  const bool check_rhs_in_product =
      rhs_range != nullptr && direct && threads == 1 && cols <= blocking.rhs_cols &&
      sizeof(std::int32_t) * blocking.rows * RoundUp(cols, format.rhs_cols) <=
          static_cast<std::size_t>(state.caches.l2_bytes);
  // With a single row part each block's rhs columns are packed just before its product (streamed),
  // after the blocks before it are written; a declared rhs there is packed whole up front instead
  // where it takes at most half an L2, so that it too is checked as it is packed.
  const bool stream_rhs =
      single_row_part && (rhs_range == nullptr || direct ||
                          PackedBytes(format.rhs_type, static_cast<std::int64_t>(padded_depth) *
                                                           RoundUp(cols, format.rhs_cols)) >
                              static_cast<std::size_t>(state.caches.l2_bytes / 2));
  // An rhs packed whole before any block is written (not streamed, which also leaves out the
  // direct product; one chunk) is checked as it is packed instead, a panel at a time just after
  // packing it: the pass of its own read a 1024^3 GEMM's rhs from L3. On AMX, declared 2 x 2 bits
  // at 1024^3 ran at 0.93 to 0.96 of the 8-bit GEMM this way, 0.90 to 0.94 with both passes.
  const bool check_rhs_as_packed =
      rhs_range != nullptr && !stream_rhs && packed_rhs == nullptr && cols <= blocking.rhs_cols;
  // So is the lhs of one worker's single row part, which it packs whole before its first block.
  const bool check_lhs_as_packed =
      lhs_range != nullptr && threads == 1 && row_tasks == 1 && !direct;
  if (lhs_range != nullptr && !check_lhs_as_packed) CheckDeclaredRange(*lhs_range);
  if (rhs_range != nullptr && !check_rhs_in_product && !check_rhs_as_packed) {
    CheckDeclaredRange(*rhs_range);
  }
  const RangeBits rhs_range_packed = check_rhs_as_packed ? RangeBitsOf(*rhs_range) : RangeBits{};
  const RangeBits lhs_range_packed = check_lhs_as_packed ? RangeBitsOf(*lhs_range) : RangeBits{};
  RangeBits rhs_range_bits{};
  if (check_rhs_in_product) {
    rhs_range_bits = RangeBitsOf(*rhs_range);
    blocking.cols = blocking.streamed_cols = RoundUp(cols, format.rhs_cols);
  }
  // Streamed and unfolded blocks go to each worker's rhs block; the direct product and a
  // prepacked rhs read theirs where they lie.
  const RhsMemory rhs_memory = (stream_rhs && !direct) || unfold ? RhsMemory::kWorkerBlock
                               : direct                          ? RhsMemory::kUnpacked
                               : packed_rhs != nullptr           ? RhsMemory::kPrepacked
                                                                 : RhsMemory::kSharedChunk;
  const int requantize_width = std::max(format.lhs_rows, format.rhs_cols);
  std::size_t requantize_work_bytes = 0;
  for (const LineRequantization* requantization : {lhs_requantization, rhs_requantization}) {
    if (requantization == nullptr) continue;
    requantize_work_bytes =
        std::max(requantize_work_bytes,
                 RequantizeWorkBytes(SubLines(requantization->lines, 0, requantize_width)));
  }
  const std::size_t requantize_bytes =
      lhs_requantization != nullptr || rhs_requantization != nullptr
          ? RequantizeScratch::Bytes(requantize_width, depth, requantize_work_bytes)
          : 0;
  const int entry_constants_count = kernel.micro_kernel_writing != nullptr &&
                                            target.program != nullptr &&
                                            ScalesPerChannel(*target.program)
                                        ? LinesBetweenSteps::kMaxEntries
                                        : 0;
  const ScratchLayout layout(format, blocking, rows, cols, padded_depth, rhs_memory,
                             requantize_bytes, entry_constants_count);
  char* scratch = static_cast<char*>(state.Scratch(layout.Total(threads)));
  SharedScratch shared = layout.Shared(scratch);
  EffectiveOffsets(task_lhs_offset, PackedValueShift(format.lhs_type, task_lhs), rows,
                   shared.lhs_offsets);
  EffectiveOffsets(task_rhs_offset, PackedValueShift(format.rhs_type, task_rhs), cols,
                   shared.rhs_offsets);
  GemmTask task{kernel,
                task_lhs,
                Transposed(task_rhs),
                blocking,
                padded_depth,
                stream_rhs,
                layout,
                scratch,
                shared,
                target,
                output_writer,
                direct ? kernel.direct_rhs : nullptr,
                unfold ? chosen.unfold_rhs : nullptr,
                chosen.format.rhs_type,
                transposed,
                separable_terms,
                separable_terms
                    ? SeparableFactors::Plain(shared.lhs_offsets[0], shared.rhs_offsets[0])
                    : SeparableFactors{},
                1};
  if (rescale != nullptr && !scale_requantized) {
    if (separable_terms && task_rescale.lhs.exact_factor != 0) {
      // No rounding to do: offset terms and a factor, in int32, instead of double arithmetic.
      task.separable = SeparableFactors::Exact(task_rescale, shared.lhs_offsets[0],
                                               shared.rhs_offsets[0], depth);
    } else {
      if (rescale->fill_terms != nullptr) rescale->fill_terms(rescale->fill_closure);
      task.rescale = &task_rescale;
      task.result_rescale = rescale;
    }
  }
  // Where the writer would owe separable terms (Owed::kSeparableTerms, kLineTerms or
  // kSeparableTermsAndRescale): uniform offsets, no scaled terms.
  task.write_between_steps = output_writer != nullptr && !direct && separable_terms &&
                             task.separable.sum_factor == 1 &&
                             WritesBetweenSteps(kernel, *target.program, task.rescale,
                                                target.result, transposed, &task.lines_parameters);
  task.lhs_offsets_zero = !task_lhs_offset.is_per_channel() && shared.lhs_offsets[0] == 0;
  task.lhs_requantization = lhs_requantization;
  task.rhs_requantization = rhs_requantization;
  task.scale_requantized = scale_requantized;
  if (direct && rhs_requantization != nullptr) {
    task.direct_rhs_requantizing = kernel.direct_rhs_requantizing;
  }
  task.resolved_kernel = resolved_kernel;
  task.requantize_width = requantize_width;
  task.context_state = &state;
  if (check_rhs_in_product) task.rhs_range = &rhs_range_bits;
  if (check_rhs_as_packed) task.rhs_range_packed = &rhs_range_packed;
  if (check_lhs_as_packed) task.lhs_range_packed = &lhs_range_packed;
  for (int chunk_start = 0; chunk_start < cols; chunk_start += blocking.rhs_cols) {
    task.chunk_start = chunk_start;
    task.chunk_cols = std::min(blocking.rhs_cols, cols - chunk_start);
    if (packed_rhs != nullptr) {
      const std::int64_t panel_values = static_cast<std::int64_t>(format.rhs_cols) * padded_depth;
      task.shared.rhs_panels =
          packed_rhs->data.get() +
          (chunk_start / format.rhs_cols) * PackedBytes(chosen.format.rhs_type, panel_values);
      task.shared.rhs_col_sums = packed_rhs->col_sums.get() + chunk_start;
    }
    const bool pack_rhs = !stream_rhs && packed_rhs == nullptr;
    const int col_panels = (task.chunk_cols + format.rhs_cols - 1) / format.rhs_cols;
    task.row_tasks = row_tasks;
    // Too few row parts for the threads (a short lhs): split the columns as well.
    task.col_tasks = std::min(col_panels, (threads + row_tasks - 1) / row_tasks);
    task.workers = std::min(threads, row_tasks * task.col_tasks);
    if (pool != nullptr && task.rescale != nullptr && task.lhs_requantization != nullptr &&
        task.col_tasks > 1 && task.workers > 1 && !task.lhs_terms_set) {
      task.SetLhsTerms();
    }
    // Published to the workers by Parallelize: no fence of its own (a seq_cst store is an xchg).
    task.next_task.store(0, std::memory_order_relaxed);
    const bool one_worker = pool == nullptr || task.workers == 1;
    if (one_worker) task.workers = 1;
    if (pack_rhs && one_worker) task.PackRhsPart(0);
    if (pack_rhs && !one_worker) task.Parallelize<&GemmTask::PackRhsPart>(pool);
    // The rhs is packed and nothing is written yet.
    if (check_rhs_as_packed) {
      ThrowIfPackingFoundOutside(rhs_range_packed, task.rhs_range_bits_packed, *rhs_range);
    }
    if (one_worker) {
      task.RunWorker(0);
    } else {
      task.Parallelize<&GemmTask::RunWorker>(pool);
    }
    // Unless the lhs's packing saw a value outside the range (and wrote nothing), every row has
    // passed: the next chunks pack it unchecked.
    if (check_lhs_as_packed) {
      ThrowIfPackingFoundOutside(lhs_range_packed, task.lhs_range_bits_packed, *lhs_range);
      task.lhs_range_packed = nullptr;
    }
  }
  // The product saw a value outside the range and wrote nothing.
  if (check_rhs_in_product && !rhs_range_bits.InRange()) {
    ThrowOutsideDeclaredRange(*rhs_range, "the direct product");
  }
  if (!timed) return;
  const std::int64_t nanoseconds =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  state.thread_choice.Record(thread_decision, nanoseconds, static_cast<double>(work));
  // A try of the other thread count says nothing of the kernel.
  if (!thread_decision.trial) {
    state.kernel_choice.Record(kernel_decision, nanoseconds, static_cast<double>(work));
  }
}

}  // namespace internal
}  // namespace lowbit
