// When other work holds the cores a GEMM's threads need: how long GEMMs run on one thread before
// threads are tried again. Results are the same bits for every thread count, so the choice may
// follow timing.
#ifndef LOWBIT_INTERNAL_THREAD_BACKOFF_H_
#define LOWBIT_INTERNAL_THREAD_BACKOFF_H_

#include <algorithm>
#include <cstdint>

namespace lowbit {
namespace internal {

// A GEMM on several threads returns only when every worker has come and gone, and a worker whose
// core another process holds comes a scheduler time slice (milliseconds) late. With both cores
// of this host busy, 2-thread 1024^3 GEMMs of the AVX-512 VNNI kernel (about 2 ms of work) ran
// at 130 to 490 GOPS against 530 to 650 on one thread (doc/performance.md, "Oversubscribed").
// So a GEMM whose threads' parts took, added up, less than kMinSpeedup times the time the GEMM
// waited for them sends the GEMMs after it that would use threads to one thread, until those
// have run for a stretch of kFirstStretch times the losing GEMM's wall time; then 2, 4, ... times
// that, up to kMaxStretch, while threads keep losing; and back to threads the first time they
// do not. The stretch is time, not a count of GEMMs: one late worker costs a 60 us GEMM as much
// as dozens of its runs, and stretches of at most 64 GEMMs left 256^3 GEMMs on two threads of a
// busy machine at a fifth of their one-thread speed. A stretch of 64 times the losing GEMM, which
// includes the wait, spends at most 1/65 of the time trying threads that lose. The parts' time is
// wall time, so a worker stalled within its part still counts as working and the speedup reads
// high under contention; on an idle machine it is the speedup over one thread.
class ThreadBackoff {
 public:
  static constexpr double kMinSpeedup = 1.2;
  static constexpr std::int64_t kFirstStretch = 4;
  static constexpr std::int64_t kMaxStretch = 64;

  // Disabled, it always allows threads: the tests' thread counts must hold however busy the
  // machine running them is.
  explicit ThreadBackoff(bool enabled = true) : enabled_(enabled) {}

  // Whether a GEMM that would use several threads may; when not, it runs on one thread and
  // reports its time to RecordSingleThreaded.
  bool AllowsThreads() const { return !enabled_ || owed_nanoseconds_ <= 0; }

  // After a GEMM that would have used threads ran on one for `nanoseconds`.
  void RecordSingleThreaded(std::int64_t nanoseconds) { owed_nanoseconds_ -= nanoseconds; }

  // After a GEMM on several threads whose parts took `speedup` times its wall time, added up.
  void Record(double speedup, std::int64_t wall_nanoseconds) {
    if (!enabled_ || speedup >= kMinSpeedup) {
      next_stretch_ = kFirstStretch;
      owed_nanoseconds_ = 0;
      return;
    }
    owed_nanoseconds_ = next_stretch_ * std::max<std::int64_t>(wall_nanoseconds, 1);
    next_stretch_ = std::min(2 * next_stretch_, kMaxStretch);
  }

 private:
  bool enabled_;
  std::int64_t owed_nanoseconds_ = 0;
  std::int64_t next_stretch_ = kFirstStretch;
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_THREAD_BACKOFF_H_
