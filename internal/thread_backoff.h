// When other work holds the cores a GEMM's threads need: how many GEMMs run on one thread before
// threads are tried again. Results are the same bits for every thread count, so the choice may
// follow timing.
#ifndef LOWBIT_INTERNAL_THREAD_BACKOFF_H_
#define LOWBIT_INTERNAL_THREAD_BACKOFF_H_

#include <algorithm>

namespace lowbit {
namespace internal {

// A GEMM on several threads returns only when every worker has come and gone, and a worker whose
// core another process holds comes a scheduler time slice (milliseconds) late. With both cores
// of this host busy, 2-thread 1024^3 GEMMs of the AVX-512 VNNI kernel (about 2 ms of work) ran
// at 130 to 490 GOPS against 530 to 650 on one thread (doc/performance.md, "Oversubscribed").
// So a GEMM whose threads' parts took, added up, less than kMinSpeedup times the time the GEMM
// waited for them, sends the next GEMMs to one thread: 1, then 2, 4, ... up to
// kMaxSingleThreaded while threads keep losing, and back to threads the first time they do not.
// The parts' time is wall time, so a worker stalled within its part still counts as working and
// the speedup reads high under contention; on an idle machine it is the speedup over one thread.
class ThreadBackoff {
 public:
  static constexpr double kMinSpeedup = 1.2;
  static constexpr int kMaxSingleThreaded = 64;

  // Disabled, it always allows threads: the tests' thread counts must hold however busy the
  // machine running them is.
  explicit ThreadBackoff(bool enabled = true) : enabled_(enabled) {}

  // Whether a GEMM that would use several threads may; when not, it counts as one of those owed
  // to a single thread.
  bool AllowsThreads() {
    if (!enabled_ || single_threaded_left_ == 0) return true;
    --single_threaded_left_;
    return false;
  }

  // After a GEMM on several threads whose parts took `speedup` times its wall time, added up.
  void Record(double speedup) {
    if (!enabled_ || speedup >= kMinSpeedup) {
      next_backoff_ = 1;
      return;
    }
    single_threaded_left_ = next_backoff_;
    next_backoff_ = std::min(2 * next_backoff_, kMaxSingleThreaded);
  }

 private:
  bool enabled_;
  int single_threaded_left_ = 0;
  int next_backoff_ = 1;
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_THREAD_BACKOFF_H_
