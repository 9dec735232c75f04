// Non-owning views of caller memory: matrices (row- or column-major, explicit stride), vectors,
// and the lhs/rhs offsets (one scalar, or one value per row / per column).
#ifndef LOWBIT_PUBLIC_MAP_H_
#define LOWBIT_PUBLIC_MAP_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace lowbit {

enum class Order { kRowMajor, kColMajor };

/// A rows x cols matrix at `data`. Element (r, c) is data[r * stride + c] (row-major) or
/// data[r + c * stride] (column-major). The stride is in elements and must be at least the
/// length of a row (row-major) or of a column (column-major); the GEMM entry points check it.
template <typename Scalar>
class MatrixMap {
 public:
  MatrixMap(Scalar* data, int rows, int cols, Order order)
      : MatrixMap(data, rows, cols, order, order == Order::kRowMajor ? cols : rows) {}
  MatrixMap(Scalar* data, int rows, int cols, Order order, int stride)
      : data_(data), rows_(rows), cols_(cols), order_(order), stride_(stride) {}

  /// A map of mutable data converts to a map of const data.
  template <typename Other, typename = decltype(static_cast<Scalar*>(static_cast<Other*>(nullptr)))>
  MatrixMap(const MatrixMap<Other>& other)  // NOLINT(google-explicit-constructor)
      : MatrixMap(other.data(), other.rows(), other.cols(), other.order(), other.stride()) {}

  Scalar* data() const { return data_; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  Order order() const { return order_; }
  int stride() const { return stride_; }

  std::ptrdiff_t offset_of(int row, int col) const {
    return order_ == Order::kRowMajor ? static_cast<std::ptrdiff_t>(row) * stride_ + col
                                      : row + static_cast<std::ptrdiff_t>(col) * stride_;
  }
  Scalar& operator()(int row, int col) const { return data_[offset_of(row, col)]; }

 private:
  Scalar* data_;
  int rows_;
  int cols_;
  Order order_;
  int stride_;
};

/// A contiguous vector of `size` elements.
template <typename Scalar>
class VectorMap {
 public:
  VectorMap(Scalar* data, int size) : data_(data), size_(size) {}

  /// A map of mutable data converts to a map of const data, as MatrixMap does: a bias or an
  /// offsets vector held as VectorMap<std::int32_t> passes where VectorMap<const std::int32_t>
  /// is taken.
  template <typename Other, typename = decltype(static_cast<Scalar*>(static_cast<Other*>(nullptr)))>
  VectorMap(const VectorMap<Other>& other)  // NOLINT(google-explicit-constructor)
      : VectorMap(other.data(), other.size()) {}

  Scalar* data() const { return data_; }
  int size() const { return size_; }
  Scalar& operator()(int index) const { return data_[index]; }

 private:
  Scalar* data_;
  int size_;
};

/// Which result index a per-channel vector follows: kRow means one entry per result row (the
/// output channels of a weights-on-the-left layer), kCol one entry per result column.
enum class ChannelAxis { kRow, kCol };

/// The value added to every lhs (rhs) entry before multiplying: a zero point z is passed as -z.
/// Either one scalar for the whole matrix, or one value per lhs row (rhs column).
class Offsets {
 public:
  Offsets(std::int32_t value)  // NOLINT(google-explicit-constructor)
      : per_channel_(nullptr), size_(0), value_(value), is_per_channel_(false) {}
  /// A VectorMap<std::int32_t> or VectorMap<const std::int32_t>.
  template <typename Scalar, typename = std::enable_if_t<
                                 std::is_same<std::remove_const_t<Scalar>, std::int32_t>::value>>
  Offsets(VectorMap<Scalar> per_channel)  // NOLINT(google-explicit-constructor)
      : per_channel_(per_channel.data()),
        size_(per_channel.size()),
        value_(0),
        is_per_channel_(true) {}

  bool is_per_channel() const { return is_per_channel_; }
  const std::int32_t* per_channel_data() const { return per_channel_; }
  int size() const { return size_; }
  std::int32_t operator()(int index) const {
    return is_per_channel() ? per_channel_[index] : value_;
  }

 private:
  const std::int32_t* per_channel_;
  int size_;
  std::int32_t value_;
  bool is_per_channel_;
};

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_MAP_H_
