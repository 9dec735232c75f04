// Prepacked operands: pack a weight matrix once, for the kernel a Context runs (and requantize
// it once for narrow GEMMs), and use it as the rhs of many GEMMs (the ruy / XNNPACK pattern).
// Packing is most of a matrix-vector product's cost, so this is what makes small batches fast.
#ifndef LOWBIT_PUBLIC_PREPACKED_H_
#define LOWBIT_PUBLIC_PREPACKED_H_

#include <cstdint>
#include <memory>
#include <type_traits>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/public/bit_depth.h"
#include "lowbit/public/context.h"
#include "lowbit/public/map.h"

namespace lowbit {

/// A depth x cols uint8 or int8 matrix, packed. It owns its memory (the source may be freed),
/// copies share it, and it is immutable, so any number of GEMMs on any threads may use it. Using
/// it on a context that runs another kernel, or against an lhs of another depth, is an error.
class PrepackedRhs {
 public:
  /// Throws lowbit::Error for a null context or a malformed map, before packing anything.
  template <typename Scalar>
  PrepackedRhs(Context* context, const MatrixMap<Scalar>& rhs)
      : PrepackedRhs(context, CheckedView(rhs), nullptr) {}

  /// For GEMMs with narrow operands (lowbit/public/bit_depth.h): in kRequantize mode the weights
  /// are requantized to bit_depth.rhs_bits once, here. A GEMM may use it only with BitDepthParams
  /// of the same mode and rhs_bits, and for kRequantize the same rounding and seed; lhs_bits may
  /// differ. Also throws lowbit::Error for invalid params, or in kDeclaredRange mode for a value
  /// that does not fit rhs_bits.
  template <typename Scalar>
  PrepackedRhs(Context* context, const MatrixMap<Scalar>& rhs, const BitDepthParams& bit_depth)
      : PrepackedRhs(context, CheckedView(rhs), &bit_depth) {}

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  Kernel kernel() const { return kernel_; }
  const internal::PackedOperand& packed() const { return *packed_; }
  /// The params it was packed with, or null.
  const BitDepthParams* bit_depth() const { return has_bit_depth_ ? &bit_depth_ : nullptr; }
  /// The matrix it was packed from, as the argument checks see it: its type and shape.
  internal::MatrixView view() const;
  /// In kRequantize mode, the sum of each column's requantized values.
  const std::int32_t* requantized_col_sums() const { return requantized_col_sums_.get(); }

 private:
  template <typename Scalar>
  static internal::MatrixView CheckedView(const MatrixMap<Scalar>& rhs) {
    static_assert(std::is_same<std::remove_const_t<Scalar>, std::uint8_t>::value ||
                      std::is_same<std::remove_const_t<Scalar>, std::int8_t>::value,
                  "rhs must be uint8_t or int8_t");
    return internal::ViewOf(rhs);
  }
  PrepackedRhs(Context* context, const internal::MatrixView& rhs, const BitDepthParams* bit_depth);

  std::shared_ptr<const internal::PackedOperand> packed_;
  std::shared_ptr<const std::int32_t> requantized_col_sums_;
  int rows_;
  int cols_;
  Kernel kernel_;
  internal::ElementType source_type_;
  bool has_bit_depth_ = false;
  BitDepthParams bit_depth_;
};

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_PREPACKED_H_
