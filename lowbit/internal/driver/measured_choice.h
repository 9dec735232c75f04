// Which of two ways of running a GEMM to take, from how fast GEMMs of its shape ran each way: on
// one thread or on several, with the bit-serial kernel or the other one. Results are the same
// bits either way, so the choice may follow timing.
#ifndef LOWBIT_INTERNAL_DRIVER_MEASURED_CHOICE_H_
#define LOWBIT_INTERNAL_DRIVER_MEASURED_CHOICE_H_

#include <algorithm>
#include <array>
#include <cstdint>

namespace lowbit {
namespace internal {

// Whether threads pay depends on the host, on the kernel and on what else runs: idle, 128^3 GEMMs
// of the AVX-512 VNNI kernel ran 36% slower on two threads than on one, 1024^3 ones 1.6x faster,
// and 256^3 ones anywhere from 9% slower to 1.5x faster as the host's neighbours came and went;
// with both cores busy a worker whose core another process holds comes a scheduler time slice
// (milliseconds) late, and two threads ran at a fifth of one thread's speed. Whether the
// bit-serial kernel beats the AMX tile swings the same way with how much of the AMX unit other
// work leaves (doc/performance.md), and its close calls against the other kernels measured on
// one host need not hold on another. No threshold on the work holds for all of these, so each
// shape class (the rounded-down log2 of rows, columns and depth, and the caller's variant) keeps
// the time per multiply-add of its GEMMs each way, and runs the faster. The preferred way (threads;
// the kernel a fixed rule picks) is tried first and is the only one when disabled. The slower is
// tried again once the faster has run for a stretch of kFirstStretch times the slower's last run,
// then 2, 4, ... times that, up to kMaxStretch, while it keeps losing: at most 1/33 of the time
// goes to trying the slower, and a change of load is seen within 64 of its runs. The faster's time
// is a running average in which one run counts at most twice the average, so one preempted run
// does not flip the choice. The slower's is its last try: the faster of kTryRuns GEMMs in a row,
// because the first GEMM on one thread after GEMMs on two finds its data in the other core's
// cache, and ran 40% slower than the next (256^3). A try wins only when faster by kMargin: choices
// within a few percent of each other otherwise swapped at nearly every try, and each swap pays
// that first slow GEMM.
class MeasuredChoice {
 public:
  static constexpr std::int64_t kFirstStretch = 4;
  static constexpr std::int64_t kMaxStretch = 64;
  static constexpr int kShapeClasses = 64;
  static constexpr int kTryRuns = 2;
  static constexpr double kMargin = 0.05;

  // What Choose decided, to hand back to Record with the GEMM's time.
  struct Decision {
    int shape_class = -1;  // -1: disabled, nothing to record
    bool preferred = true;
    bool trial = false;  // a run of a try: of the slower choice, or the first of a choice
  };

  // Disabled, it always chooses the preferred way: the tests' thread counts and kernels must hold
  // however busy the machine running them is.
  explicit MeasuredChoice(bool enabled = true) : enabled_(enabled) {}

  // `variant` (below 2^14) separates GEMMs of one shape that run differently, such as operands
  // of other bit depths.
  Decision Choose(int rows, int cols, int depth, std::uint32_t variant = 0) {
    if (!enabled_) return Decision{};
    const std::uint32_t key =
        (variant << 18) | (Log2(rows) << 12) | (Log2(cols) << 6) | Log2(depth);
    const int index = static_cast<int>((key * 2654435761u) >> 26) % kShapeClasses;
    ShapeClass& shape = classes_[index];
    if (shape.key != key) shape = ShapeClass{key};
    Decision decision;
    decision.shape_class = index;
    if (shape.nanoseconds_per_mac[1] == 0 || shape.nanoseconds_per_mac[0] == 0) {
      decision.preferred = shape.nanoseconds_per_mac[1] == 0;
      decision.trial = true;
      return decision;
    }
    decision.trial = shape.owed_nanoseconds <= 0;
    decision.preferred = decision.trial ? !shape.preferred_chosen : shape.preferred_chosen;
    return decision;
  }

  // After the GEMM `decision` was for ran `nanoseconds` for `macs` multiply-adds.
  void Record(const Decision& decision, std::int64_t nanoseconds, double macs) {
    if (decision.shape_class < 0) return;
    ShapeClass& shape = classes_[decision.shape_class];
    const int ran = decision.preferred ? 1 : 0;
    double per_mac = static_cast<double>(std::max<std::int64_t>(nanoseconds, 1)) / macs;
    double& mine = shape.nanoseconds_per_mac[ran];
    const double other = shape.nanoseconds_per_mac[1 - ran];
    if (!decision.trial) {
      mine = 0.75 * mine + 0.25 * std::min(per_mac, 2 * mine);
      shape.owed_nanoseconds -= nanoseconds;
      // Slower than the other's last try by the margin: the other runs from now.
      if (mine > other * (1 + kMargin)) shape.Swap(mine * macs);
      return;
    }
    // Choose repeats the try until it is over: what it decides on has not changed.
    shape.try_best = shape.try_runs == 0 ? per_mac : std::min(shape.try_best, per_mac);
    if (++shape.try_runs < kTryRuns) return;
    per_mac = shape.try_best;
    shape.try_runs = 0;
    mine = per_mac;
    if (other == 0) return;  // the first try of the first choice: the other is tried next
    if (per_mac * (1 + kMargin) < other) {
      shape.Swap(other * macs);
    } else {
      // The try lost: the other runs for a longer stretch before the next one.
      shape.owed_nanoseconds = shape.stretch * static_cast<std::int64_t>(per_mac * macs);
      shape.stretch = std::min(2 * shape.stretch, kMaxStretch);
    }
  }

 private:
  struct ShapeClass {
    std::uint32_t key = ~0u;
    // [0] the other way, [1] the preferred; 0 until measured.
    double nanoseconds_per_mac[2] = {0, 0};
    // The choice that runs (the preferred is tried first, so it stays unless the other wins),
    // how long it runs before the other is tried again, and the stretch after the next lost try.
    bool preferred_chosen = true;
    std::int64_t owed_nanoseconds = 0;
    std::int64_t stretch = kFirstStretch;
    // The runs of the try under way so far, and the fastest of them.
    int try_runs = 0;
    double try_best = 0;

    // The other choice runs from now; the one it replaces, whose GEMMs take `nanoseconds`, is
    // tried again after the first stretch.
    void Swap(double nanoseconds) {
      preferred_chosen = !preferred_chosen;
      owed_nanoseconds = kFirstStretch * static_cast<std::int64_t>(nanoseconds);
      stretch = 2 * kFirstStretch;
    }
  };

  static std::uint32_t Log2(int n) {
    std::uint32_t log = 0;
    while (n > 1) {
      n >>= 1;
      ++log;
    }
    return log;
  }

  bool enabled_;
  std::array<ShapeClass, kShapeClasses> classes_{};
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_DRIVER_MEASURED_CHOICE_H_
