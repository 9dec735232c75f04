// Packing an rhs once (lowbit/public/prepacked.h): the whole matrix in the layout of one kernel,
// with its column sums, exactly as the driver would pack it chunk by chunk; for narrow GEMMs,
// requantized first.
#include "lowbit/public/prepacked.h"

#include <cstdlib>
#include <new>
#include <vector>

#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/public/error.h"

namespace lowbit {
namespace internal {

PackedOperand PackRhs(Kernel kernel, const MatrixView& rhs, int lhs_bits) {
  const KernelImplementation& implementation =
      GetPrepackedRhsKernelImplementation(kernel, lhs_bits, rhs.bits);
  const KernelFormat& format = implementation.format;
  const int padded_cols = RoundUp(rhs.cols, format.rhs_cols);
  const std::size_t bytes = PackedBytes(format.rhs_type, static_cast<std::int64_t>(padded_cols) *
                                                             RoundUp(rhs.rows, format.depth_group));
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

PrepackedRhs::PrepackedRhs(Context* context, const internal::MatrixView& rhs,
                           const BitDepthParams* bit_depth) {
  if (context == nullptr) throw Error("context", "must not be null");
  internal::ValidateMatrix("rhs", rhs);
  if (bit_depth != nullptr) {
    internal::ValidateBitDepthParams(*bit_depth);
    if (bit_depth->mode == BitDepthMode::kDeclaredRange) {
      internal::CheckDeclaredRange(internal::RhsDeclaredRange(rhs, *bit_depth));
    }
    has_bit_depth_ = true;
    bit_depth_ = *bit_depth;
  }
  kernel_ = context->ResolvedKernel();
  rows_ = rhs.rows;
  cols_ = rhs.cols;
  source_type_ = rhs.type;
  const int lhs_bits = bit_depth != nullptr ? bit_depth->lhs_bits : 8;
  if (bit_depth == nullptr || bit_depth->mode == BitDepthMode::kDeclaredRange) {
    internal::MatrixView declared = rhs;
    if (bit_depth != nullptr) declared.bits = bit_depth->rhs_bits;
    packed_ = std::make_shared<const internal::PackedOperand>(
        internal::PackRhs(kernel_, declared, lhs_bits));
    return;
  }
  // The same requantization a GEMM applies to an rhs it is given: the columns are the lines.
  const internal::MatrixView columns = internal::Transposed(rhs);
  std::vector<std::uint8_t> requantized(static_cast<std::size_t>(rows_) * cols_);
  std::vector<std::uint32_t> work((internal::RequantizeWorkBytes(columns) + 3) / 4);
  std::shared_ptr<std::int32_t> col_sums(new std::int32_t[cols_ + 1](),
                                         std::default_delete<std::int32_t[]>());
  internal::RequantizeLines(
      kernel_, columns, bit_depth->rhs_bits, ResolveRounding(bit_depth->rounding, rows_),
      bit_depth->seed, internal::Operand::kRhs, requantized.data(), col_sums.get(), work.data());
  internal::MatrixView requantized_rhs =
      internal::Transposed(internal::RequantizedView(columns, requantized.data()));
  requantized_rhs.bits = bit_depth->rhs_bits;
  packed_ = std::make_shared<const internal::PackedOperand>(
      internal::PackRhs(kernel_, requantized_rhs, lhs_bits));
  requantized_col_sums_ = col_sums;
}

internal::MatrixView PrepackedRhs::view() const {
  internal::MatrixView view = internal::ViewOf(*packed_);
  view.type = source_type_;
  return view;
}

}  // namespace lowbit
