// Packing an rhs once (public/prepacked.h): the whole matrix in the layout of one kernel, with
// its column sums, exactly as the driver would pack it chunk by chunk.
#include "public/prepacked.h"

#include <cstdlib>
#include <new>

#include "internal/kernel.h"
#include "public/error.h"

namespace lowbit {
namespace internal {

PackedOperand PackRhs(Kernel kernel, const MatrixView& rhs) {
  const KernelImplementation& implementation = GetPrepackedRhsKernelImplementation(kernel);
  const KernelFormat& format = implementation.format;
  const int padded_cols = RoundUp(rhs.cols, format.rhs_cols);
  const std::size_t bytes = static_cast<std::size_t>(padded_cols) *
                            RoundUp(rhs.rows, format.depth_group) * PackedSize(format.rhs_type);
  void* memory = std::aligned_alloc(64, (bytes + 64) / 64 * 64);
  if (memory == nullptr) throw std::bad_alloc();
  std::shared_ptr<char> data(static_cast<char*>(memory), [](char* p) { std::free(p); });
  std::shared_ptr<std::int32_t> col_sums(new std::int32_t[padded_cols + 1](),
                                         std::default_delete<std::int32_t[]>());
  if (rhs.rows > 0 && rhs.cols > 0) {
    implementation.pack_rhs(Transposed(rhs), 0, rhs.cols, 0, rhs.rows, data.get(), col_sums.get());
  }
  return {kernel, rhs.type, rhs.rows, rhs.cols, data, col_sums};
}

}  // namespace internal

PrepackedRhs::PrepackedRhs(Context* context, const internal::MatrixView& rhs) {
  if (context == nullptr) throw Error("context", "must not be null");
  internal::ValidateMatrix("rhs", rhs);
  kernel_ = context->ResolvedKernel();
  packed_ = std::make_shared<const internal::PackedOperand>(internal::PackRhs(kernel_, rhs));
  rows_ = rhs.rows;
  cols_ = rhs.cols;
}

}  // namespace lowbit
