// The scratch memory of one GEMM call (driver.cc): what the tasks share, then one slot per
// worker, each part aligned to a cache line, in the context's reusable buffer.
#ifndef LOWBIT_INTERNAL_DRIVER_SCRATCH_H_
#define LOWBIT_INTERNAL_DRIVER_SCRATCH_H_

#include <cstddef>
#include <cstdint>

#include "lowbit/internal/driver/blocking.h"
#include "lowbit/internal/kernel/kernel.h"

namespace lowbit {
namespace internal {

// Scratch parts start on cache lines: no two workers write the same line.
inline std::size_t AlignUp(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

// A row stride for accumulator blocks: whole register tiles, and an odd number of cache lines
// so that walking down a column does not keep hitting the same L1 set.
inline int AccumulatorStride(int cols, const KernelFormat& format) {
  constexpr int kLine = 64 / sizeof(std::int32_t);
  int lines = (RoundUp(cols, format.rhs_cols) + kLine - 1) / kLine;
  if (lines % 2 == 0) ++lines;
  return lines * kLine;
}

struct SharedScratch {
  // Written when the driver packs the rhs itself.
  char* packed_rhs;
  std::int32_t* col_sums;
  // Read by the kernels: the current chunk's packed rhs panels and column sums, in packed_rhs
  // and col_sums, or in a prepacked rhs.
  const char* rhs_panels;
  const std::int32_t* rhs_col_sums;
  std::int32_t* lhs_offsets;
  std::int32_t* rhs_offsets;
};

struct WorkerScratch {
  char* packed_lhs;
  // The packed rows' sums, then (MakeRowTerms) their offset row terms.
  std::int32_t* row_sums;
  // Separable offset terms (OffsetTerms::row_part): the task's rows' parts, and the current
  // block's columns' parts.
  std::int32_t* row_parts;
  std::int32_t* col_parts;
  // For a kernel that writes a block's results between its steps with a scale per entry, each
  // entry's float-form constants (GemmTask::WritesBlock): four arrays of entry_constants_count.
  char* entry_constants;
  std::int32_t* acc;
  char* rhs_block;
  // For operands requantized as they are packed: a panel's requantized lines and what
  // requantizing them needs (GemmTask::PackLines).
  char* requantize;
};

// Where a GEMM's tiles read the rhs from: a chunk packed up front and shared, a block per worker
// (packed or unfolded just before use), where it lies prepacked, or where it lies unpacked (the
// direct product, whose lhs rows take whole cache lines: DirectLhsBytes).
enum class RhsMemory { kSharedChunk, kWorkerBlock, kPrepacked, kUnpacked };

// The row stride of the lhs rows a DirectRhsFunction reads: whole cache lines, so that rows
// copied to the same offset within a line as the rhs columns (up to 63 bytes in) all keep it.
inline std::ptrdiff_t DirectLhsStride(int depth) {
  return static_cast<std::ptrdiff_t>(AlignUp(static_cast<std::size_t>(depth)));
}
inline std::size_t DirectLhsBytes(int depth) {
  return 64 + static_cast<std::size_t>(kMaxDirectRhsRows) * DirectLhsStride(depth);
}

// Scratch memory: the shared packed rhs chunk (for RhsMemory::kSharedChunk), column sums and
// effective offsets, then one slot per worker for its packed lhs rows, row sums, accumulator
// block, (for RhsMemory::kWorkerBlock) rhs block and requantize_bytes for requantizing operands.
struct ScratchLayout {
  std::size_t packed_rhs_bytes;
  std::size_t col_sums_bytes;
  std::size_t lhs_offsets_bytes;
  std::size_t rhs_offsets_bytes;
  std::size_t packed_lhs_bytes;
  std::size_t row_sums_bytes;
  std::size_t row_parts_bytes;
  std::size_t col_parts_bytes;
  std::size_t entry_constants_bytes;
  std::size_t acc_bytes;
  std::size_t rhs_block_bytes;
  std::size_t requantize_bytes;

  // entry_constants_count: the entries of a block whose float-form constants a worker keeps
  // (WorkerScratch::entry_constants), or 0.
  ScratchLayout(const KernelFormat& format, const Blocking& blocking, int rows, int cols,
                int padded_depth, RhsMemory rhs_memory, std::size_t requantize_bytes = 0,
                int entry_constants_count = 0)
      : packed_rhs_bytes(rhs_memory != RhsMemory::kSharedChunk
                             ? 0
                             : AlignUp(PackedBytes(
                                   format.rhs_type,
                                   static_cast<std::int64_t>(blocking.rhs_cols) * padded_depth))),
        col_sums_bytes(AlignUp(sizeof(std::int32_t) * blocking.rhs_cols)),
        lhs_offsets_bytes(AlignUp(sizeof(std::int32_t) * rows)),
        rhs_offsets_bytes(AlignUp(sizeof(std::int32_t) * cols)),
        packed_lhs_bytes(
            rhs_memory == RhsMemory::kUnpacked
                ? DirectLhsBytes(padded_depth)
                : AlignUp(PackedBytes(format.lhs_type,
                                      static_cast<std::int64_t>(blocking.rows) * padded_depth))),
        row_sums_bytes(AlignUp(sizeof(std::int32_t) * blocking.rows)),
        row_parts_bytes(row_sums_bytes),
        col_parts_bytes(AlignUp(sizeof(std::int32_t) * blocking.cols)),
        entry_constants_bytes(AlignUp(4 * sizeof(std::int32_t) * entry_constants_count)),
        acc_bytes(AlignUp(sizeof(std::int32_t) * blocking.rows *
                          AccumulatorStride(blocking.cols, format))),
        rhs_block_bytes(rhs_memory == RhsMemory::kWorkerBlock
                            ? AlignUp(PackedBytes(
                                  format.rhs_type,
                                  static_cast<std::int64_t>(blocking.streamed_cols) * padded_depth))
                            : 0),
        requantize_bytes(AlignUp(requantize_bytes)) {}

  std::size_t SharedBytes() const {
    return packed_rhs_bytes + col_sums_bytes + lhs_offsets_bytes + rhs_offsets_bytes;
  }
  std::size_t PerWorkerBytes() const {
    return packed_lhs_bytes + row_sums_bytes + row_parts_bytes + col_parts_bytes +
           entry_constants_bytes + acc_bytes + rhs_block_bytes + requantize_bytes;
  }
  std::size_t Total(int workers) const { return SharedBytes() + PerWorkerBytes() * workers; }

  // The shared part of `scratch` (Total bytes), with the rhs read from where it is packed.
  SharedScratch Shared(char* scratch) const {
    SharedScratch shared;
    shared.packed_rhs = scratch;
    shared.col_sums = reinterpret_cast<std::int32_t*>(scratch + packed_rhs_bytes);
    shared.lhs_offsets = shared.col_sums + col_sums_bytes / sizeof(std::int32_t);
    shared.rhs_offsets = shared.lhs_offsets + lhs_offsets_bytes / sizeof(std::int32_t);
    shared.rhs_panels = shared.packed_rhs;
    shared.rhs_col_sums = shared.col_sums;
    return shared;
  }

  // Worker `worker`'s slot of `scratch`.
  WorkerScratch Worker(char* scratch, int worker) const {
    char* p = scratch + SharedBytes() + PerWorkerBytes() * worker;
    WorkerScratch worker_scratch;
    worker_scratch.packed_lhs = p;
    p += packed_lhs_bytes;
    worker_scratch.row_sums = reinterpret_cast<std::int32_t*>(p);
    p += row_sums_bytes;
    worker_scratch.row_parts = reinterpret_cast<std::int32_t*>(p);
    p += row_parts_bytes;
    worker_scratch.col_parts = reinterpret_cast<std::int32_t*>(p);
    p += col_parts_bytes;
    worker_scratch.entry_constants = p;
    p += entry_constants_bytes;
    worker_scratch.acc = reinterpret_cast<std::int32_t*>(p);
    p += acc_bytes;
    worker_scratch.rhs_block = p;
    p += rhs_block_bytes;
    worker_scratch.requantize = p;
    return worker_scratch;
  }
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_DRIVER_SCRATCH_H_
