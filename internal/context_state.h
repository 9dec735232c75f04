// What a Context keeps between calls: settings, the thread pool and grow-only scratch memory.
#ifndef LOWBIT_INTERNAL_CONTEXT_STATE_H_
#define LOWBIT_INTERNAL_CONTEXT_STATE_H_

#include <pthreadpool.h>

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "internal/blocking.h"
#include "internal/thread_backoff.h"
#include "public/context.h"

namespace lowbit {
namespace internal {

class ContextState {
 public:
  ContextState();
  ~ContextState();

  int max_num_threads = 1;
  Kernel kernel = Kernel::kAuto;
  // Detected once; the tests shrink them to force many small blocks on small shapes.
  CacheSizes caches;
  ThreadBackoff thread_backoff;

  // A pool of max_num_threads threads, created on first use and re-created when the count
  // changes; null when one thread is asked for.
  pthreadpool_t ThreadPool();

  // At least `bytes` of 64-byte aligned memory, valid until the next call.
  void* Scratch(std::size_t bytes) { return scratch_.Get(bytes); }

  // The same, separate from Scratch: requantized operands live here while the GEMM on them
  // uses Scratch.
  void* RequantizeScratch(std::size_t bytes) { return requantize_scratch_.Get(bytes); }

 private:
  class GrowOnlyMemory {
   public:
    void* Get(std::size_t bytes);

   private:
    struct FreeDeleter {
      void operator()(void* p) const { std::free(p); }
    };
    std::unique_ptr<void, FreeDeleter> memory_;
    std::size_t bytes_ = 0;
  };

  pthreadpool_t pool_ = nullptr;
  GrowOnlyMemory scratch_;
  GrowOnlyMemory requantize_scratch_;
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_CONTEXT_STATE_H_
