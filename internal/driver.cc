// The GEMM loops: result blocks of mc x nc are independent tasks spread over the thread pool;
// each packs its lhs and rhs depth slices, runs the micro-kernel over every register tile, adds
// the offset terms and hands the finished accumulators to the output pipeline.
#include "internal/driver.h"

#include <pthreadpool.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "internal/blocking.h"
#include "internal/context_state.h"
#include "internal/kernel.h"
#include "internal/unpack.h"

namespace lowbit {
namespace internal {
namespace {

// The rhs packs column by column along the depth: its transpose is packed like the lhs.
MatrixView Transposed(const MatrixView& view) {
  return {view.data,
          view.type,
          view.cols,
          view.rows,
          view.order == Order::kRowMajor ? Order::kColMajor : Order::kRowMajor,
          view.stride};
}

std::size_t AlignUp(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

// One worker's share of the scratch memory.
struct WorkerScratch {
  void* packed_lhs;
  void* packed_rhs;
  std::int32_t* acc;
  std::int32_t* row_sums;
  std::int32_t* col_sums;
};

struct ScratchLayout {
  std::size_t packed_lhs_bytes;
  std::size_t packed_rhs_bytes;
  std::size_t acc_bytes;
  std::size_t row_sums_bytes;
  std::size_t col_sums_bytes;

  ScratchLayout(const KernelFormat& format, const Blocking& blocking)
      : packed_lhs_bytes(AlignUp(static_cast<std::size_t>(blocking.rows) * blocking.depth *
                                 PackedSize(format.packed_type))),
        packed_rhs_bytes(AlignUp(static_cast<std::size_t>(blocking.cols) * blocking.depth *
                                 PackedSize(format.packed_type))),
        acc_bytes(AlignUp(static_cast<std::size_t>(blocking.rows) * blocking.cols * 4)),
        row_sums_bytes(AlignUp(static_cast<std::size_t>(blocking.rows) * 4)),
        col_sums_bytes(AlignUp(static_cast<std::size_t>(blocking.cols) * 4)) {}

  std::size_t PerWorker() const {
    return packed_lhs_bytes + packed_rhs_bytes + acc_bytes + row_sums_bytes + col_sums_bytes;
  }

  WorkerScratch ForWorker(void* base, int worker) const {
    auto* p = static_cast<char*>(base) + PerWorker() * worker;
    WorkerScratch scratch;
    scratch.packed_lhs = p;
    p += packed_lhs_bytes;
    scratch.packed_rhs = p;
    p += packed_rhs_bytes;
    scratch.acc = reinterpret_cast<std::int32_t*>(p);
    p += acc_bytes;
    scratch.row_sums = reinterpret_cast<std::int32_t*>(p);
    p += row_sums_bytes;
    scratch.col_sums = reinterpret_cast<std::int32_t*>(p);
    return scratch;
  }
};

struct GemmTask {
  const KernelImplementation& kernel;
  const MatrixView& lhs;
  const MatrixView rhs_transposed;
  const OffsetTerms& offset_terms;
  Blocking blocking;
  int row_blocks;
  int col_blocks;
  int workers;
  ScratchLayout layout;
  void* scratch;
  BlockConsumer consumer;
  const void* closure;

  void RunBlock(const WorkerScratch& scratch, int row_start, int col_start) const {
    const KernelFormat& format = kernel.format;
    const int rows = std::min(blocking.rows, lhs.rows - row_start);
    const int cols = std::min(blocking.cols, rhs_transposed.rows - col_start);
    const int depth = lhs.cols;
    // The accumulator block covers whole register tiles; entries past rows x cols are unused.
    const int acc_stride = RoundUp(cols, format.rhs_cols);
    std::memset(scratch.row_sums, 0, sizeof(std::int32_t) * rows);
    std::memset(scratch.col_sums, 0, sizeof(std::int32_t) * cols);
    if (depth == 0) {
      std::memset(scratch.acc, 0,
                  sizeof(std::int32_t) * RoundUp(rows, format.lhs_rows) * acc_stride);
    }
    for (int depth_start = 0; depth_start < depth; depth_start += blocking.depth) {
      const int block_depth = std::min(blocking.depth, depth - depth_start);
      const int padded_depth = RoundUp(block_depth, format.depth_group);
      kernel.pack_lhs(lhs, row_start, rows, depth_start, block_depth, scratch.packed_lhs,
                      scratch.row_sums);
      kernel.pack_rhs(rhs_transposed, col_start, cols, depth_start, block_depth, scratch.packed_rhs,
                      scratch.col_sums);
      const std::size_t lhs_panel_bytes =
          static_cast<std::size_t>(format.lhs_rows) * padded_depth * PackedSize(format.packed_type);
      const std::size_t rhs_panel_bytes =
          static_cast<std::size_t>(format.rhs_cols) * padded_depth * PackedSize(format.packed_type);
      for (int j = 0; j < cols; j += format.rhs_cols) {
        const char* rhs_panel =
            static_cast<const char*>(scratch.packed_rhs) + (j / format.rhs_cols) * rhs_panel_bytes;
        for (int i = 0; i < rows; i += format.lhs_rows) {
          const char* lhs_panel = static_cast<const char*>(scratch.packed_lhs) +
                                  (i / format.lhs_rows) * lhs_panel_bytes;
          kernel.micro_kernel(lhs_panel, rhs_panel, padded_depth,
                              scratch.acc + static_cast<std::ptrdiff_t>(i) * acc_stride + j,
                              acc_stride, depth_start > 0);
        }
      }
    }
    AddOffsetTerms(offset_terms, row_start, rows, col_start, cols, scratch.row_sums,
                   scratch.col_sums, scratch.acc, acc_stride);
    consumer(closure, AccumulatorBlock{row_start, col_start, rows, cols, scratch.acc, acc_stride});
  }

  // Worker w runs blocks w, w + workers, ...: a fixed assignment, so worker w alone uses
  // scratch slot w.
  void RunWorker(int worker) const {
    const WorkerScratch worker_scratch = layout.ForWorker(scratch, worker);
    for (int block = worker; block < row_blocks * col_blocks; block += workers) {
      RunBlock(worker_scratch, (block / col_blocks) * blocking.rows,
               (block % col_blocks) * blocking.cols);
    }
  }

  static void RunWorkerThunk(void* task, std::size_t worker) {
    static_cast<const GemmTask*>(task)->RunWorker(static_cast<int>(worker));
  }
};

}  // namespace

void RunGemm(Context& context, const MatrixView& lhs, const MatrixView& rhs,
             const Offsets& lhs_offset, const Offsets& rhs_offset, BlockConsumer consumer,
             const void* closure) {
  ContextState& state = context.state();
  const KernelImplementation& kernel = GetKernelImplementation(context.ResolvedKernel());
  const KernelFormat& format = kernel.format;
  const Blocking blocking = ComputeBlocking(format, state.caches, lhs.rows, rhs.cols, lhs.cols);
  const OffsetTerms offset_terms{lhs_offset, rhs_offset,
                                 PackedValueShift(format.packed_type, lhs.type),
                                 PackedValueShift(format.packed_type, rhs.type), lhs.cols};
  const int row_blocks = (lhs.rows + blocking.rows - 1) / blocking.rows;
  const int col_blocks = (rhs.cols + blocking.cols - 1) / blocking.cols;
  const int workers = std::min(state.max_num_threads, row_blocks * col_blocks);
  const ScratchLayout layout(format, blocking);
  void* scratch = state.Scratch(layout.PerWorker() * workers);
  GemmTask task{kernel,     lhs,     Transposed(rhs), offset_terms, blocking, row_blocks,
                col_blocks, workers, layout,          scratch,      consumer, closure};
  pthreadpool_t pool = workers > 1 ? state.ThreadPool() : nullptr;
  if (pool == nullptr) {
    task.RunWorker(0);
  } else {
    pthreadpool_parallelize_1d(pool, &GemmTask::RunWorkerThunk, &task, workers, 0);
  }
}

}  // namespace internal
}  // namespace lowbit
