// The Context a caller keeps across GEMM calls: thread count, kernel choice, and the scratch
// memory and thread pool that are reused from one call to the next.
#ifndef LOWBIT_PUBLIC_CONTEXT_H_
#define LOWBIT_PUBLIC_CONTEXT_H_

#include <memory>
#include <vector>

namespace lowbit {

namespace internal {
class ContextState;
}

/// Which micro-kernel runs. kAuto takes LOWBIT_KERNEL from the environment when it is set
/// (reference, sse41, avx2, avx512vnni, amx, neon), and otherwise the fastest kernel this CPU
/// supports. Every value exists on every platform; choosing one this CPU or build lacks is an
/// error. kAvx512Vnni needs AVX-512 F, BW and VNNI (and AVX2 with FMA3, for its output stages);
/// kAmx needs those and AMX-TILE and AMX-INT8, with an OS that lets the process use the tile
/// registers (Linux 5.16 or later).
enum class Kernel { kAuto, kReference, kSse41, kAvx2, kNeon, kAvx512Vnni, kAmx };

const char* KernelName(Kernel kernel);

/// The kernels this CPU can run (never kAuto), fastest last.
std::vector<Kernel> AvailableKernels();

/// Threads may share a Context: their GEMMs take turns with its scratch memory and thread pool,
/// each exact (doc/design.md, "Sharing a context"). For GEMMs side by side, give each thread its
/// own. A GEMM inside a GEMM on the same context (from an output stage) throws lowbit::Error.
class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The number of threads a GEMM may use (1 by default). A GEMM uses fewer where its work or
  /// the cores this process may run on cannot use them all, and the pool never holds more.
  /// Results are bit-identical for every thread count. Throws lowbit::Error unless
  /// 1 <= threads <= 1024. Waits for a GEMM running on this context to return.
  void set_max_num_threads(int threads);
  int max_num_threads() const;

  /// Throws lowbit::Error if this CPU (or this build) has no such kernel. Waits for a GEMM
  /// running on this context to return.
  void set_kernel(Kernel kernel);
  Kernel kernel() const;

  /// The kernel a GEMM on this context runs: kernel() with kAuto resolved. Throws lowbit::Error
  /// for an unknown LOWBIT_KERNEL value.
  Kernel ResolvedKernel() const;

  internal::ContextState& state() { return *state_; }

 private:
  std::unique_ptr<internal::ContextState> state_;
};

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_CONTEXT_H_
