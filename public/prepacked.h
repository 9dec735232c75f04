// Prepacked operands: pack a weight matrix once, for the kernel a Context runs, and use it as
// the rhs of many GEMMs (the ruy / XNNPACK pattern). Packing is most of a matrix-vector
// product's cost, so this is what makes small batches fast.
#ifndef LOWBIT_PUBLIC_PREPACKED_H_
#define LOWBIT_PUBLIC_PREPACKED_H_

#include <cstdint>
#include <memory>
#include <type_traits>

#include "internal/driver.h"
#include "public/context.h"
#include "public/map.h"

namespace lowbit {

// A depth x cols uint8 or int8 matrix, packed. It owns its memory (the source may be freed),
// copies share it, and it is immutable, so any number of GEMMs on any threads may use it. Using
// it on a context that runs another kernel, or against an lhs of another depth, is an error.
class PrepackedRhs {
 public:
  // Throws lowbit::Error for a null context or a malformed map, before packing anything.
  template <typename Scalar>
  PrepackedRhs(Context* context, const MatrixMap<Scalar>& rhs)
      : PrepackedRhs(context, internal::ViewOf(rhs)) {
    static_assert(std::is_same<std::remove_const_t<Scalar>, std::uint8_t>::value ||
                      std::is_same<std::remove_const_t<Scalar>, std::int8_t>::value,
                  "rhs must be uint8_t or int8_t");
  }

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  Kernel kernel() const { return kernel_; }
  const internal::PackedOperand& packed() const { return *packed_; }

 private:
  PrepackedRhs(Context* context, const internal::MatrixView& rhs);

  std::shared_ptr<const internal::PackedOperand> packed_;
  int rows_;
  int cols_;
  Kernel kernel_;
};

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_PREPACKED_H_
