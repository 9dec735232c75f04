// What a Context keeps between calls: settings, the thread pool and grow-only scratch memory, and
// the lock that lets one GEMM at a time use them.
#ifndef LOWBIT_INTERNAL_DRIVER_CONTEXT_STATE_H_
#define LOWBIT_INTERNAL_DRIVER_CONTEXT_STATE_H_

#include <pthreadpool.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "lowbit/internal/driver/blocking.h"
#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/driver/measured_choice.h"
#include "lowbit/public/context.h"

namespace lowbit {
namespace internal {

// The cores this process may run on (its CPU affinity), at least 1.
int UsableCores();

// The blocks' phases of requantized operands' lines (HashPhases, bit_depth.h), one operand of
// each side, kept between GEMMs: a program calls GEMMs of the same shapes with the same seed
// over and over, and hashing the phases again took 2 to 5% of a requantized GEMM at 256^3.
class PhaseCache {
 public:
  // The phases of every line of `lines` (row-major) of `operand` for `seed`, hashed with
  // `kernel`'s function unless the last call for the operand had them.
  const std::uint8_t* For(Kernel kernel, const MatrixView& lines, std::uint32_t seed,
                          Operand operand);

 private:
  struct Entry {
    std::uint32_t seed = 0;
    int lines = 0;
    int depth = 0;
    std::vector<std::uint8_t> phases;
  };
  Entry entries_[2];
};

class ContextState {
 public:
  ContextState();
  ~ContextState();

  // Settings: written by the Context's setters from any thread, read once per GEMM.
  std::atomic<int> max_num_threads{1};
  std::atomic<Kernel> kernel{Kernel::kAuto};

  // Everything below is used only by the GEMM that holds the context (ContextUse).
  // Detected once; the tests shrink them to force many small blocks on small shapes.
  CacheSizes caches;
  // A GEMM uses no more threads than this (UsableCores()): more would only wait for a core. The
  // tests raise it to check the partitioning of every thread count on any machine.
  int cores;
  // Timed choices between two ways of running a GEMM (measured_choice.h): threads or one
  // thread, and, where GetTimedAlternativeImplementation names one, the kernel.
  MeasuredChoice thread_choice;
  MeasuredChoice kernel_choice;
  // Both always take the preferred way: the tests' thread counts and kernels must hold.
  void DisableMeasuredChoices() {
    thread_choice = MeasuredChoice(false);
    kernel_choice = MeasuredChoice(false);
  }
  BlockingCache blocking;
  PhaseCache phases;

  // A pool of at least `threads` (>= 2) threads, created on first use and re-created only to
  // grow, so that GEMMs of different sizes do not churn threads.
  pthreadpool_t ThreadPool(int threads);
  // The pool's thread count, or 0 before a GEMM has used threads.
  int PoolThreads() const;

  // At least `bytes` of 64-byte aligned memory, valid until the next call.
  void* Scratch(std::size_t bytes) { return scratch_.Get(bytes); }
  // The most any GEMM on the context has asked Scratch for.
  std::size_t ScratchBytes() const { return scratch_.bytes(); }

  // The same, separate from Scratch: the rescale terms of requantized operands live here while
  // the GEMM on them uses Scratch.
  void* RequantizeScratch(std::size_t bytes) { return requantize_scratch_.Get(bytes); }

 private:
  friend class ContextUse;

  class GrowOnlyMemory {
   public:
    void* Get(std::size_t bytes);
    std::size_t bytes() const { return bytes_; }

   private:
    struct FreeDeleter {
      void operator()(void* p) const { std::free(p); }
    };
    std::unique_ptr<void, FreeDeleter> memory_;
    std::size_t bytes_ = 0;
  };

  std::mutex in_use_;
  pthreadpool_t pool_ = nullptr;
  GrowOnlyMemory scratch_;
  GrowOnlyMemory requantize_scratch_;
};

// Marks a pool thread, for the part of a GEMM it runs, as running that GEMM's context (see
// ContextUse).
class WorkerOfContext {
 public:
  explicit WorkerOfContext(const ContextState& state);
  ~WorkerOfContext();
  WorkerOfContext(const WorkerOfContext&) = delete;
  WorkerOfContext& operator=(const WorkerOfContext&) = delete;

 private:
  const ContextState* outer_;
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_DRIVER_CONTEXT_STATE_H_
