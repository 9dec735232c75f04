// Context and its state: settings, the lazily created thread pool, reusable scratch memory, and
// the lock under which one GEMM at a time uses them.
#include "lowbit/public/context.h"

#include <pthreadpool.h>
#include <sched.h>

#include <algorithm>
#include <new>
#include <string>
#include <thread>

#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/internal/driver/context_state.h"
#include "lowbit/internal/driver/driver.h"
#include "lowbit/public/checks.h"
#include "lowbit/public/error.h"

namespace lowbit {
namespace internal {

namespace {
// The context whose GEMM this thread is running, as its caller or as one of its pool's workers:
// a second GEMM on it from here would wait for the first, which waits for this thread.
thread_local const ContextState* running_gemm_context = nullptr;
}  // namespace

int UsableCores() {
  cpu_set_t cores;
  if (sched_getaffinity(0, sizeof(cores), &cores) == 0) return std::max(1, CPU_COUNT(&cores));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

ContextState::ContextState() : caches(DetectCacheSizes()), cores(UsableCores()) {}

const std::uint8_t* PhaseCache::For(Kernel kernel, const MatrixView& lines, std::uint32_t seed,
                                    Operand operand) {
  Entry& entry = entries_[operand == Operand::kLhs ? 0 : 1];
  // A line's phases do not depend on how many lines there are: fewer lines read the first ones.
  if (entry.phases.empty() || entry.seed != seed || entry.depth != lines.cols ||
      entry.lines < lines.rows) {
    entry.phases.resize(PhasesBytes(lines));
    HashPhases(kernel, lines, seed, operand, entry.phases.data());
    entry.seed = seed;
    entry.lines = lines.rows;
    entry.depth = lines.cols;
  }
  return entry.phases.data();
}

ContextState::~ContextState() {
  if (pool_ != nullptr) pthreadpool_destroy(pool_);
}

pthreadpool_t ContextState::ThreadPool(int threads) {
  if (pool_ != nullptr && PoolThreads() < threads) {
    pthreadpool_destroy(pool_);
    pool_ = nullptr;
  }
  if (pool_ == nullptr) {
    pool_ = pthreadpool_create(static_cast<std::size_t>(threads));
    if (pool_ == nullptr) throw std::bad_alloc();
  }
  return pool_;
}

int ContextState::PoolThreads() const {
  return pool_ == nullptr ? 0 : static_cast<int>(pthreadpool_get_threads_count(pool_));
}

void* ContextState::GrowOnlyMemory::Get(std::size_t bytes) {
  if (bytes > bytes_) {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* memory = std::aligned_alloc(64, rounded);
    if (memory == nullptr) throw std::bad_alloc();
    memory_.reset(memory);
    bytes_ = rounded;
  }
  return memory_.get();
}

ContextUse::ContextUse(Context& context) : state_(context.state()), outer_(running_gemm_context) {
  if (running_gemm_context == &state_) {
    throw Error("context",
                "is in use by a GEMM running on this thread (an output stage calling back into "
                "the context that runs it?): the context can be used again once that GEMM returns");
  }
  state_.in_use_.lock();
  running_gemm_context = &state_;
}

ContextUse::~ContextUse() {
  running_gemm_context = outer_;
  state_.in_use_.unlock();
}

WorkerOfContext::WorkerOfContext(const ContextState& state) : outer_(running_gemm_context) {
  running_gemm_context = &state;
}
WorkerOfContext::~WorkerOfContext() { running_gemm_context = outer_; }

}  // namespace internal

Context::Context() : state_(new internal::ContextState()) {}
Context::~Context() = default;

void Context::set_max_num_threads(int threads) {
  checks::CheckInRange("threads", threads, 1, 1024);
  const internal::ContextUse use(*this);
  state_->max_num_threads = threads;
}
int Context::max_num_threads() const { return state_->max_num_threads; }

Kernel Context::kernel() const { return state_->kernel; }

}  // namespace lowbit
