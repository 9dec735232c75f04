// gemmlowp's public API on lowbit: a program written against gemmlowp (GemmContext, Gemm,
// GemmWithOutputPipeline[PC], MatrixMap, VectorMap, VectorDup, the OutputStage structs, the
// BitDepthParams names, eight_bit_int_gemm::EightBitIntGemm) builds against lowbit by including
// this header instead of gemmlowp's, and gives gemmlowp's bytes (doc/gemmlowp-migration.md).
#ifndef LOWBIT_PUBLIC_GEMMLOWP_COMPAT_H_
#define LOWBIT_PUBLIC_GEMMLOWP_COMPAT_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "lowbit/lowbit.h"

namespace gemmlowp {

// --- Maps (gemmlowp's lowbit/public/map.h) ---

enum class MapOrder { ColMajor, RowMajor };

template <typename tScalar, MapOrder tOrder>
class MatrixMap {
 public:
  typedef tScalar Scalar;
  static constexpr MapOrder kOrder = tOrder;

  MatrixMap() : data_(nullptr), rows_(0), cols_(0), stride_(0) {}
  MatrixMap(Scalar* data, int rows, int cols)
      : MatrixMap(data, rows, cols, kOrder == MapOrder::ColMajor ? rows : cols) {}
  MatrixMap(Scalar* data, int rows, int cols, int stride)
      : data_(data), rows_(rows), cols_(cols), stride_(stride) {}

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  int stride() const { return stride_; }
  int rows_stride() const { return kOrder == MapOrder::ColMajor ? 1 : stride_; }
  int cols_stride() const { return kOrder == MapOrder::RowMajor ? 1 : stride_; }
  Scalar* data() const { return data_; }
  Scalar* data(int row, int col) const { return data_ + row * rows_stride() + col * cols_stride(); }
  Scalar& operator()(int row, int col) const { return *data(row, col); }
  MatrixMap block(int start_row, int start_col, int block_rows, int block_cols) const {
    return MatrixMap(data(start_row, start_col), block_rows, block_cols, stride_);
  }

 private:
  Scalar* data_;
  int rows_, cols_, stride_;
};

/// Col: one entry per result row; Row: one per result column.
enum class VectorShape { Col, Row };

template <typename tScalar, VectorShape tShape>
class VectorMap {
 public:
  typedef tScalar Scalar;
  static constexpr VectorShape kShape = tShape;

  VectorMap() : data_(nullptr), size_(0) {}
  VectorMap(Scalar* data, int size) : data_(data), size_(size) {}

  int size() const { return size_; }
  Scalar* data() const { return data_; }
  Scalar* data(int index) const { return data_ + index; }
  Scalar& operator()(int index) const { return *data(index); }
  VectorMap block(int start, int length) const { return VectorMap(data(start), length); }

 private:
  Scalar* data_;
  int size_;
};

/// A vector of `size` copies of one value.
template <typename tScalar, VectorShape tShape>
class VectorDup {
 public:
  typedef tScalar Scalar;
  static constexpr VectorShape kShape = tShape;

  VectorDup() : data_(0), size_(0) {}
  VectorDup(Scalar data, int size) : data_(data), size_(size) {}

  int size() const { return size_; }
  Scalar operator()(int) const { return data_; }
  VectorDup block(int, int length) const { return VectorDup(data_, length); }

 private:
  Scalar data_;
  int size_;
};

// --- Bit depths (gemmlowp's lowbit/public/bit_depth.h). Every setting is exact, as in gemmlowp,
// whose DefaultL7R5BitDepthParams is the 8-bit setting. ---

template <int tMinValue, int tMaxValue>
struct OperandRange {
  static constexpr int kMinValue = tMinValue;
  static constexpr int kMaxValue = tMaxValue;
};
using Uint8Range = OperandRange<0, 255>;
using Uint8RangeExcludingZero = OperandRange<1, 255>;
using Int8Range = OperandRange<-128, 127>;
using Int8RangeExcludingLow = OperandRange<-127, 127>;

template <typename tLhsRange, typename tRhsRange>
struct BitDepthParams {
  using LhsRange = tLhsRange;
  using RhsRange = tRhsRange;
};
using DefaultL8R8BitDepthParams = BitDepthParams<Uint8Range, Uint8Range>;
using L8R8WithLhsNonzeroBitDepthParams = BitDepthParams<Uint8RangeExcludingZero, Uint8Range>;
using SignedL8R8WithLhsNonzeroBitDepthParams = BitDepthParams<Int8RangeExcludingLow, Int8Range>;
using DefaultL7R5BitDepthParams = DefaultL8R8BitDepthParams;

// --- Output stages (gemmlowp's lowbit/public/output_stages.h), computed by lowbit's stages of the
// same names, which give gemmlowp's bits. ---

struct OutputStageQuantizeDownInt32ToUint8Scale {
  std::int32_t result_offset;
  std::int32_t result_mult_int;
  std::int32_t result_shift;
};

template <VectorShape tShape>
struct OutputStageQuantizeDownInt32ToUint8ScalePC {
  VectorMap<const std::int32_t, tShape> result_offset;
  VectorMap<const std::int32_t, tShape> result_mult_int;
  std::int32_t result_shift;
};

struct OutputStageQuantizeDownInt32ByFixedPoint {
  std::int32_t result_fixedpoint_multiplier;
  std::int32_t result_shift;
  std::int32_t result_offset_after_shift;
};
using OutputStageQuantizeDownInt32ToUint8ScaleByFixedPoint =
    OutputStageQuantizeDownInt32ByFixedPoint;

struct OutputStageScaleInt32ByFixedPointAndExponent {
  std::int32_t result_fixedpoint_multiplier;
  std::int32_t result_exponent;
  std::int32_t result_offset_after_shift;
};

template <VectorShape tShape>
struct OutputStageScaleInt32ByFixedPointAndExponentPC {
  VectorMap<const std::int32_t, tShape> result_fixedpoint_multiplier;
  VectorMap<const std::int32_t, tShape> result_exponent;
  std::int32_t result_offset_after_shift;
};

struct OutputStageSaturatingCastToUint8 {};
struct OutputStageSaturatingCastToInt8 {};
struct OutputStageTruncatingCastToUint8 {};
struct OutputStageSaturatingCastToInt16 {};

template <typename VectorType>
struct OutputStageBiasAddition {
  VectorType bias_vector;
};

struct OutputStageClamp {
  std::int32_t min;
  std::int32_t max;
};

struct OutputStageTanh {
  std::int32_t real_zero_as_int32;
  std::int32_t real_amplitude_as_int32;
};

inline std::tuple<OutputStageQuantizeDownInt32ToUint8Scale, OutputStageSaturatingCastToUint8>
MakeStandardOutputPipeline(std::int32_t result_offset, std::int32_t result_mult_int,
                           std::int32_t result_shift) {
  return std::make_tuple(
      OutputStageQuantizeDownInt32ToUint8Scale{result_offset, result_mult_int, result_shift},
      OutputStageSaturatingCastToUint8{});
}

template <VectorShape tShape>
std::tuple<OutputStageQuantizeDownInt32ToUint8ScalePC<tShape>, OutputStageSaturatingCastToUint8>
MakeStandardOutputPipeline(const VectorMap<const std::int32_t, tShape>& result_offset,
                           const VectorMap<const std::int32_t, tShape>& result_mult_int,
                           std::int32_t result_shift) {
  return std::make_tuple(
      OutputStageQuantizeDownInt32ToUint8ScalePC<tShape>{result_offset, result_mult_int,
                                                         result_shift},
      OutputStageSaturatingCastToUint8{});
}

// --- Contexts and entry points (gemmlowp's public/gemmlowp.h) ---

/// gemmlowp's GemmContext: a lowbit::Context. Like gemmlowp's, one context runs one GEMM at a
/// time, and a thread count of 0 (the default) means the machine's hardware threads.
class GemmContext {
 public:
  GemmContext() { set_max_num_threads(0); }
  void set_max_num_threads(int n) {
    const unsigned hardware = std::thread::hardware_concurrency();
    context_.set_max_num_threads(n > 0 ? n
                                       : static_cast<int>(std::min(std::max(hardware, 1U), 1024U)));
  }
  int max_num_threads() const { return context_.max_num_threads(); }
  lowbit::Context* lowbit_context() { return &context_; }

 private:
  lowbit::Context context_;
};

namespace compat_detail {

template <typename Scalar, MapOrder Order>
lowbit::MatrixMap<Scalar> ToLowbit(const MatrixMap<Scalar, Order>& map) {
  return lowbit::MatrixMap<Scalar>(
      map.data(), map.rows(), map.cols(),
      Order == MapOrder::RowMajor ? lowbit::Order::kRowMajor : lowbit::Order::kColMajor,
      map.stride());
}

template <VectorShape Shape>
constexpr lowbit::ChannelAxis AxisOf() {
  return Shape == VectorShape::Col ? lowbit::ChannelAxis::kRow : lowbit::ChannelAxis::kCol;
}

template <VectorShape Shape>
lowbit::VectorMap<const std::int32_t> ToLowbit(const VectorMap<const std::int32_t, Shape>& map) {
  return lowbit::VectorMap<const std::int32_t>(map.data(), map.size());
}

template <VectorShape Shape>
lowbit::Offsets ToOffsets(const VectorMap<const std::int32_t, Shape>& offsets) {
  return lowbit::Offsets(ToLowbit(offsets));
}
template <VectorShape Shape>
lowbit::Offsets ToOffsets(const VectorDup<const std::int32_t, Shape>& offsets) {
  return lowbit::Offsets(offsets(0));
}

inline lowbit::OutputStageQuantizeDownInt32ToUint8Scale ToLowbitStage(
    const OutputStageQuantizeDownInt32ToUint8Scale& stage) {
  return {stage.result_offset, stage.result_mult_int, stage.result_shift};
}
template <VectorShape Shape>
lowbit::OutputStageQuantizeDownInt32ToUint8ScalePerChannel ToLowbitStage(
    const OutputStageQuantizeDownInt32ToUint8ScalePC<Shape>& stage) {
  return {ToLowbit(stage.result_offset), ToLowbit(stage.result_mult_int), stage.result_shift,
          AxisOf<Shape>()};
}
inline lowbit::OutputStageQuantizeDownInt32ByFixedPoint ToLowbitStage(
    const OutputStageQuantizeDownInt32ByFixedPoint& stage) {
  return {stage.result_fixedpoint_multiplier, stage.result_shift, stage.result_offset_after_shift};
}
inline lowbit::OutputStageScaleInt32ByFixedPointAndExponent ToLowbitStage(
    const OutputStageScaleInt32ByFixedPointAndExponent& stage) {
  return {stage.result_fixedpoint_multiplier, stage.result_exponent,
          stage.result_offset_after_shift};
}
template <VectorShape Shape>
lowbit::OutputStageScaleInt32ByFixedPointAndExponentPerChannel ToLowbitStage(
    const OutputStageScaleInt32ByFixedPointAndExponentPC<Shape>& stage) {
  return {ToLowbit(stage.result_fixedpoint_multiplier), ToLowbit(stage.result_exponent),
          stage.result_offset_after_shift, AxisOf<Shape>()};
}
inline lowbit::OutputStageSaturatingCastToUint8 ToLowbitStage(
    const OutputStageSaturatingCastToUint8&) {
  return {};
}
inline lowbit::OutputStageSaturatingCastToInt8 ToLowbitStage(
    const OutputStageSaturatingCastToInt8&) {
  return {};
}
inline lowbit::OutputStageTruncatingCastToUint8 ToLowbitStage(
    const OutputStageTruncatingCastToUint8&) {
  return {};
}
inline lowbit::OutputStageSaturatingCastToInt16 ToLowbitStage(
    const OutputStageSaturatingCastToInt16&) {
  return {};
}
template <VectorShape Shape>
lowbit::OutputStageBiasAddition ToLowbitStage(
    const OutputStageBiasAddition<VectorMap<const std::int32_t, Shape>>& stage) {
  return {ToLowbit(stage.bias_vector), AxisOf<Shape>()};
}
inline lowbit::OutputStageClamp ToLowbitStage(const OutputStageClamp& stage) {
  return {stage.min, stage.max};
}
inline lowbit::OutputStageTanh ToLowbitStage(const OutputStageTanh& stage) {
  return {stage.real_zero_as_int32, stage.real_amplitude_as_int32};
}

template <typename... Stages>
auto ToLowbitPipeline(const std::tuple<Stages...>& pipeline) {
  return std::apply([](const auto&... stages) { return std::make_tuple(ToLowbitStage(stages)...); },
                    pipeline);
}

template <typename InputScalar, typename BitDepthParams>
constexpr void CheckInputType() {
  static_assert(std::is_same<InputScalar, std::uint8_t>::value ||
                    std::is_same<InputScalar, std::int8_t>::value,
                "gemmlowp operands are uint8_t or int8_t");
  static_assert(
      std::is_same<InputScalar, std::int8_t>::value == (BitDepthParams::LhsRange::kMinValue < 0),
      "the BitDepthParams' ranges must be of the operands' type");
}

}  // namespace compat_detail

/// result = pipeline((lhs + lhs_offset) * (rhs + rhs_offset)) with per-row lhs offsets and
/// per-column rhs offsets (VectorMap or VectorDup).
template <typename InputScalar, typename OutputScalar, typename BitDepthParams, MapOrder LhsOrder,
          MapOrder RhsOrder, MapOrder ResultOrder, typename LhsOffset, typename RhsOffset,
          typename OutputPipelineType, typename GemmContextType>
void GemmWithOutputPipelinePC(GemmContextType* context,
                              const MatrixMap<const InputScalar, LhsOrder>& lhs,
                              const MatrixMap<const InputScalar, RhsOrder>& rhs,
                              MatrixMap<OutputScalar, ResultOrder>* result,
                              const LhsOffset& lhs_offset, const RhsOffset& rhs_offset,
                              const OutputPipelineType& output_pipeline) {
  compat_detail::CheckInputType<InputScalar, BitDepthParams>();
  lowbit::MatrixMap<OutputScalar> lowbit_result = compat_detail::ToLowbit(*result);
  lowbit::GemmWithOutputPipeline(
      context->lowbit_context(), compat_detail::ToLowbit(lhs), compat_detail::ToLowbit(rhs),
      &lowbit_result, compat_detail::ToOffsets(lhs_offset), compat_detail::ToOffsets(rhs_offset),
      compat_detail::ToLowbitPipeline(output_pipeline));
}

template <typename InputScalar, typename OutputScalar, typename BitDepthParams, MapOrder LhsOrder,
          MapOrder RhsOrder, MapOrder ResultOrder, typename OutputPipelineType,
          typename GemmContextType>
void GemmWithOutputPipeline(GemmContextType* context,
                            const MatrixMap<const InputScalar, LhsOrder>& lhs,
                            const MatrixMap<const InputScalar, RhsOrder>& rhs,
                            MatrixMap<OutputScalar, ResultOrder>* result, int lhs_offset,
                            int rhs_offset, const OutputPipelineType& output_pipeline) {
  const VectorDup<const std::int32_t, VectorShape::Col> lhs_offsets(lhs_offset, lhs.rows());
  const VectorDup<const std::int32_t, VectorShape::Row> rhs_offsets(rhs_offset, rhs.cols());
  GemmWithOutputPipelinePC<InputScalar, OutputScalar, BitDepthParams>(
      context, lhs, rhs, result, lhs_offsets, rhs_offsets, output_pipeline);
}

/// gemmlowp's classic GEMM: MakeStandardOutputPipeline's requantization to uint8.
template <typename Scalar, typename BitDepthParams, MapOrder LhsOrder, MapOrder RhsOrder,
          MapOrder ResultOrder, typename GemmContextType>
void Gemm(GemmContextType* context, const MatrixMap<const Scalar, LhsOrder>& lhs,
          const MatrixMap<const Scalar, RhsOrder>& rhs, MatrixMap<Scalar, ResultOrder>* result,
          int lhs_offset, int rhs_offset, int result_offset, int result_mult_int,
          int result_shift) {
  GemmWithOutputPipeline<Scalar, Scalar, BitDepthParams>(
      context, lhs, rhs, result, lhs_offset, rhs_offset,
      MakeStandardOutputPipeline(result_offset, result_mult_int, result_shift));
}

// --- gemmlowp's eight_bit_int_gemm/eight_bit_int_gemm.h: BLAS-style entry points on one global
// context, serialized by a lock as gemmlowp's are. a is m x k, b k x n, c m x n, each row-major
// when its transpose flag is set and column-major otherwise, with leading dimensions lda, ldb,
// ldc. ---
namespace eight_bit_int_gemm {

/// Both settings are exact 8-bit GEMMs, as in gemmlowp.
enum class BitDepthSetting { A8B8, A5B7 };

namespace compat_detail {

struct GlobalContext {
  std::mutex lock;
  std::unique_ptr<GemmContext> context;
  GemmContext* Get() {
    if (!context) context = std::make_unique<GemmContext>();
    return context.get();
  }
};
inline GlobalContext& Global() {
  static GlobalContext global;
  return global;
}

template <typename Scalar>
lowbit::MatrixMap<Scalar> Map(Scalar* data, int rows, int cols, int leading, bool row_major) {
  return lowbit::MatrixMap<Scalar>(
      data, rows, cols, row_major ? lowbit::Order::kRowMajor : lowbit::Order::kColMajor, leading);
}

}  // namespace compat_detail

inline void EightBitIntGemm(bool transpose_a, bool transpose_b, bool transpose_c, int m, int n,
                            int k, const std::uint8_t* a, std::int32_t a_offset, int lda,
                            const std::uint8_t* b, std::int32_t b_offset, int ldb, std::uint8_t* c,
                            std::int32_t c_offset, std::int32_t c_mult_int, std::int32_t c_shift,
                            int ldc, BitDepthSetting) {
  compat_detail::GlobalContext& global = compat_detail::Global();
  const std::lock_guard<std::mutex> hold(global.lock);
  lowbit::MatrixMap<std::uint8_t> result = compat_detail::Map(c, m, n, ldc, transpose_c);
  lowbit::Gemm(global.Get()->lowbit_context(), compat_detail::Map(a, m, k, lda, transpose_a),
               compat_detail::Map(b, k, n, ldb, transpose_b), &result, a_offset, b_offset, c_offset,
               c_mult_int, c_shift);
}

/// c = float(acc) * c_offset (gemmlowp's name for the scale).
inline void EightBitIntGemm(bool transpose_a, bool transpose_b, bool transpose_c, int m, int n,
                            int k, const std::uint8_t* a, std::int32_t a_offset, int lda,
                            const std::uint8_t* b, std::int32_t b_offset, int ldb, float* c,
                            float c_offset, int ldc, BitDepthSetting) {
  compat_detail::GlobalContext& global = compat_detail::Global();
  const std::lock_guard<std::mutex> hold(global.lock);
  std::vector<std::int32_t> acc(static_cast<std::size_t>(m) * n);
  lowbit::MatrixMap<std::int32_t> acc_map(acc.data(), m, n, lowbit::Order::kRowMajor);
  lowbit::GemmWithOutputPipeline(global.Get()->lowbit_context(),
                                 compat_detail::Map(a, m, k, lda, transpose_a),
                                 compat_detail::Map(b, k, n, ldb, transpose_b), &acc_map, a_offset,
                                 b_offset, std::make_tuple());
  for (int row = 0; row < m; ++row) {
    for (int col = 0; col < n; ++col) {
      float* entry = transpose_c ? c + row * ldc + col : c + col * ldc + row;
      *entry = static_cast<float>(acc[static_cast<std::size_t>(row) * n + col]) * c_offset;
    }
  }
}

inline void SetMaxNumThreads(int n) {
  compat_detail::GlobalContext& global = compat_detail::Global();
  const std::lock_guard<std::mutex> hold(global.lock);
  global.Get()->set_max_num_threads(n);
}

inline void FreePersistentResources() {
  compat_detail::GlobalContext& global = compat_detail::Global();
  const std::lock_guard<std::mutex> hold(global.lock);
  global.context.reset();
}

}  // namespace eight_bit_int_gemm
}  // namespace gemmlowp

#endif  // LOWBIT_PUBLIC_GEMMLOWP_COMPAT_H_
