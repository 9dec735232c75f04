// Context and its state: settings, the lazily created thread pool and reusable scratch memory.
#include "public/context.h"

#include <pthreadpool.h>

#include <new>
#include <string>

#include "internal/context_state.h"
#include "public/checks.h"

namespace lowbit {
namespace internal {

ContextState::ContextState() : caches(DetectCacheSizes()) {}

ContextState::~ContextState() {
  if (pool_ != nullptr) pthreadpool_destroy(pool_);
}

pthreadpool_t ContextState::ThreadPool() {
  if (max_num_threads <= 1) return nullptr;
  if (pool_ != nullptr &&
      static_cast<int>(pthreadpool_get_threads_count(pool_)) != max_num_threads) {
    pthreadpool_destroy(pool_);
    pool_ = nullptr;
  }
  if (pool_ == nullptr) {
    pool_ = pthreadpool_create(static_cast<std::size_t>(max_num_threads));
    if (pool_ == nullptr) throw std::bad_alloc();
  }
  return pool_;
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

}  // namespace internal

Context::Context() : state_(new internal::ContextState()) {}
Context::~Context() = default;

void Context::set_max_num_threads(int threads) {
  checks::CheckInRange("threads", threads, 1, 1024);
  state_->max_num_threads = threads;
}
int Context::max_num_threads() const { return state_->max_num_threads; }

Kernel Context::kernel() const { return state_->kernel; }

}  // namespace lowbit
