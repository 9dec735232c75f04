// A program written to gemmlowp's public API, built twice: against Debian's libgemmlowp-dev and,
// with LOWBIT_GEMMLOWP_COMPAT, against lowbit through lowbit/public/gemmlowp_compat.h (the only
// other difference is that include). It runs a seeded sweep of random GEMMs (shapes, storage
// orders, offsets, every output pipeline, EightBitIntGemm) and writes every result's bytes to the
// file named by its argument; test/gemmlowp_api_compare.cmake requires the two files to be
// identical.
#ifdef LOWBIT_GEMMLOWP_COMPAT
#include "lowbit/public/gemmlowp_compat.h"
#else
#include <gemmlowp/eight_bit_int_gemm/eight_bit_int_gemm.h>
#include <gemmlowp/public/gemmlowp.h>
#endif

#include <cstdint>
#include <cstdio>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

std::mt19937 generator(2026);

int Uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(generator); }

template <typename Scalar>
std::vector<Scalar> RandomVector(std::size_t size, int low, int high) {
  std::vector<Scalar> values(size);
  for (Scalar& value : values) value = static_cast<Scalar>(Uniform(low, high));
  return values;
}

std::FILE* output = nullptr;

template <typename Scalar>
void Emit(const std::vector<Scalar>& values) {
  std::fwrite(values.data(), sizeof(Scalar), values.size(), output);
}

// A matrix of `rows` x `cols` in `Order`, with a stride larger than needed half the time.
template <typename Scalar, gemmlowp::MapOrder Order>
struct Matrix {
  int rows, cols, stride;
  std::vector<Scalar> storage;
  Matrix(int r, int c, int low, int high)
      : rows(r),
        cols(c),
        stride((Order == gemmlowp::MapOrder::RowMajor ? c : r) + Uniform(0, 1) * Uniform(1, 5)),
        storage(RandomVector<Scalar>(
            static_cast<std::size_t>(stride) * (Order == gemmlowp::MapOrder::RowMajor ? r : c), low,
            high)) {}
  gemmlowp::MatrixMap<const Scalar, Order> ConstMap() const {
    return gemmlowp::MatrixMap<const Scalar, Order>(storage.data(), rows, cols, stride);
  }
  gemmlowp::MatrixMap<Scalar, Order> Map() {
    return gemmlowp::MatrixMap<Scalar, Order>(storage.data(), rows, cols, stride);
  }
};

// Every pipeline on one shape and one choice of storage orders.
template <gemmlowp::MapOrder LhsOrder, gemmlowp::MapOrder RhsOrder, gemmlowp::MapOrder ResultOrder>
void RunCase(gemmlowp::GemmContext* context) {
  using gemmlowp::VectorShape;
  const int rows = Uniform(1, 3) == 1 ? Uniform(1, 70) : Uniform(1, 20);
  const int depth = Uniform(1, 3) == 1 ? Uniform(1, 200) : Uniform(1, 20);
  const int cols = Uniform(1, 3) == 1 ? Uniform(1, 70) : Uniform(1, 20);
  const Matrix<std::uint8_t, LhsOrder> lhs(rows, depth, 0, 255);
  const Matrix<std::uint8_t, RhsOrder> rhs(depth, cols, 0, 255);
  const int lhs_offset = -Uniform(0, 255);
  const int rhs_offset = -Uniform(0, 255);
  const std::vector<std::int32_t> row_values = RandomVector<std::int32_t>(rows, -50000, 50000);
  const std::vector<std::int32_t> col_values = RandomVector<std::int32_t>(cols, -50000, 50000);
  const gemmlowp::VectorMap<const std::int32_t, VectorShape::Col> row_vector(row_values.data(),
                                                                             rows);
  const gemmlowp::VectorMap<const std::int32_t, VectorShape::Row> col_vector(col_values.data(),
                                                                             cols);
  const std::vector<std::int32_t> row_multipliers =
      RandomVector<std::int32_t>(rows, 1 << 28, 2147483647);
  const std::vector<std::int32_t> col_exponents = RandomVector<std::int32_t>(cols, -12, 2);
  const std::vector<std::int32_t> row_mult_ints = RandomVector<std::int32_t>(rows, 0, 4000);

  // The classic GEMM.
  {
    Matrix<std::uint8_t, ResultOrder> result(rows, cols, 0, 0);
    auto map = result.Map();
    gemmlowp::Gemm<std::uint8_t, gemmlowp::DefaultL8R8BitDepthParams>(
        context, lhs.ConstMap(), rhs.ConstMap(), &map, lhs_offset, rhs_offset,
        Uniform(-100000, 100000), Uniform(0, 3000), Uniform(0, 24));
    Emit(result.storage);
  }
  // No stage: the int32 accumulators.
  {
    Matrix<std::int32_t, ResultOrder> result(rows, cols, 0, 0);
    auto map = result.Map();
    gemmlowp::GemmWithOutputPipeline<std::uint8_t, std::int32_t,
                                     gemmlowp::DefaultL8R8BitDepthParams>(
        context, lhs.ConstMap(), rhs.ConstMap(), &map, lhs_offset, rhs_offset, std::make_tuple());
    Emit(result.storage);
  }
  // Bias per row, the fixed-point requantization, uint8.
  {
    Matrix<std::uint8_t, ResultOrder> result(rows, cols, 0, 0);
    auto map = result.Map();
    gemmlowp::OutputStageBiasAddition<std::remove_const_t<decltype(row_vector)>> bias;
    bias.bias_vector = row_vector;
    gemmlowp::OutputStageQuantizeDownInt32ByFixedPoint scale;
    scale.result_fixedpoint_multiplier = Uniform(1 << 28, 2147483647);
    scale.result_shift = Uniform(4, 14);
    scale.result_offset_after_shift = Uniform(-20, 150);
    gemmlowp::GemmWithOutputPipeline<std::uint8_t, std::uint8_t,
                                     gemmlowp::DefaultL8R8BitDepthParams>(
        context, lhs.ConstMap(), rhs.ConstMap(), &map, lhs_offset, rhs_offset,
        std::make_tuple(bias, scale, gemmlowp::OutputStageSaturatingCastToUint8()));
    Emit(result.storage);
  }
  // Bias per column, scale and exponent, a clamp, int16.
  {
    Matrix<std::int16_t, ResultOrder> result(rows, cols, 0, 0);
    auto map = result.Map();
    gemmlowp::OutputStageBiasAddition<std::remove_const_t<decltype(col_vector)>> bias;
    bias.bias_vector = col_vector;
    gemmlowp::OutputStageScaleInt32ByFixedPointAndExponent scale;
    scale.result_fixedpoint_multiplier = Uniform(1 << 28, 2147483647);
    scale.result_exponent = Uniform(-12, 3);
    scale.result_offset_after_shift = Uniform(-1000, 1000);
    gemmlowp::OutputStageClamp clamp;
    clamp.min = Uniform(-40000, 0);
    clamp.max = Uniform(0, 40000);
    gemmlowp::GemmWithOutputPipeline<std::uint8_t, std::int16_t,
                                     gemmlowp::DefaultL8R8BitDepthParams>(
        context, lhs.ConstMap(), rhs.ConstMap(), &map, lhs_offset, rhs_offset,
        std::make_tuple(bias, scale, clamp, gemmlowp::OutputStageSaturatingCastToInt16()));
    Emit(result.storage);
  }
  // The legacy scale per row, truncated to uint8.
  {
    Matrix<std::uint8_t, ResultOrder> result(rows, cols, 0, 0);
    auto map = result.Map();
    gemmlowp::OutputStageQuantizeDownInt32ToUint8ScalePC<VectorShape::Col> scale;
    scale.result_offset = row_vector;
    scale.result_mult_int =
        gemmlowp::VectorMap<const std::int32_t, VectorShape::Col>(row_mult_ints.data(), rows);
    scale.result_shift = Uniform(0, 20);
    gemmlowp::GemmWithOutputPipeline<std::uint8_t, std::uint8_t,
                                     gemmlowp::DefaultL8R8BitDepthParams>(
        context, lhs.ConstMap(), rhs.ConstMap(), &map, lhs_offset, rhs_offset,
        std::make_tuple(scale, gemmlowp::OutputStageTruncatingCastToUint8()));
    Emit(result.storage);
  }
  // Scale and exponent per column, int8, per-row and per-column operand offsets.
  {
    Matrix<std::int8_t, ResultOrder> result(rows, cols, 0, 0);
    auto map = result.Map();
    const std::vector<std::int32_t> multipliers =
        RandomVector<std::int32_t>(cols, 1 << 28, 2147483647);
    gemmlowp::OutputStageScaleInt32ByFixedPointAndExponentPC<VectorShape::Row> scale;
    scale.result_fixedpoint_multiplier =
        gemmlowp::VectorMap<const std::int32_t, VectorShape::Row>(multipliers.data(), cols);
    scale.result_exponent =
        gemmlowp::VectorMap<const std::int32_t, VectorShape::Row>(col_exponents.data(), cols);
    scale.result_offset_after_shift = Uniform(-20, 20);
    const std::vector<std::int32_t> lhs_offsets = RandomVector<std::int32_t>(rows, -255, 0);
    const std::vector<std::int32_t> rhs_offsets = RandomVector<std::int32_t>(cols, -255, 0);
    gemmlowp::GemmWithOutputPipelinePC<std::uint8_t, std::int8_t,
                                       gemmlowp::DefaultL8R8BitDepthParams>(
        context, lhs.ConstMap(), rhs.ConstMap(), &map,
        gemmlowp::VectorMap<const std::int32_t, VectorShape::Col>(lhs_offsets.data(), rows),
        gemmlowp::VectorMap<const std::int32_t, VectorShape::Row>(rhs_offsets.data(), cols),
        std::make_tuple(scale, gemmlowp::OutputStageSaturatingCastToInt8()));
    Emit(result.storage);
  }
  // Fixed-point requantization per row through ScaleInt32ByFixedPointAndExponentPC, then tanh.
  {
    Matrix<std::uint8_t, ResultOrder> result(rows, cols, 0, 0);
    auto map = result.Map();
    const std::vector<std::int32_t> exponents = RandomVector<std::int32_t>(rows, -14, -4);
    gemmlowp::OutputStageScaleInt32ByFixedPointAndExponentPC<VectorShape::Col> scale;
    scale.result_fixedpoint_multiplier =
        gemmlowp::VectorMap<const std::int32_t, VectorShape::Col>(row_multipliers.data(), rows);
    scale.result_exponent =
        gemmlowp::VectorMap<const std::int32_t, VectorShape::Col>(exponents.data(), rows);
    scale.result_offset_after_shift = 128;
    gemmlowp::OutputStageTanh tanh;
    tanh.real_zero_as_int32 = 128 + Uniform(-20, 20);
    tanh.real_amplitude_as_int32 = Uniform(1, 3) == 1 ? 1 << Uniform(0, 10) : Uniform(1, 3000);
    gemmlowp::GemmWithOutputPipeline<std::uint8_t, std::uint8_t,
                                     gemmlowp::DefaultL8R8BitDepthParams>(
        context, lhs.ConstMap(), rhs.ConstMap(), &map, lhs_offset, rhs_offset,
        std::make_tuple(scale, tanh, gemmlowp::OutputStageSaturatingCastToUint8()));
    Emit(result.storage);
  }
  // An lhs without zeros under L8R8WithLhsNonzeroBitDepthParams, and the deprecated L7R5 name.
  {
    const Matrix<std::uint8_t, LhsOrder> nonzero_lhs(rows, depth, 1, 255);
    Matrix<std::uint8_t, ResultOrder> nonzero(rows, cols, 0, 0);
    Matrix<std::uint8_t, ResultOrder> l7r5(rows, cols, 0, 0);
    auto nonzero_map = nonzero.Map();
    auto l7r5_map = l7r5.Map();
    const int result_offset = Uniform(-100000, 100000);
    const int mult = Uniform(0, 3000);
    const int shift = Uniform(0, 24);
    gemmlowp::Gemm<std::uint8_t, gemmlowp::L8R8WithLhsNonzeroBitDepthParams>(
        context, nonzero_lhs.ConstMap(), rhs.ConstMap(), &nonzero_map, lhs_offset, rhs_offset,
        result_offset, mult, shift);
    gemmlowp::Gemm<std::uint8_t, gemmlowp::DefaultL7R5BitDepthParams>(
        context, lhs.ConstMap(), rhs.ConstMap(), &l7r5_map, lhs_offset, rhs_offset, result_offset,
        mult, shift);
    Emit(nonzero.storage);
    Emit(l7r5.storage);
  }
}

// EightBitIntGemm, uint8 and float results, every combination of transposes.
void RunEightBitIntGemm() {
  using gemmlowp::eight_bit_int_gemm::BitDepthSetting;
  using gemmlowp::eight_bit_int_gemm::EightBitIntGemm;
  const int m = Uniform(1, 40), n = Uniform(1, 40), k = Uniform(1, 100);
  const bool transpose_a = Uniform(0, 1), transpose_b = Uniform(0, 1), transpose_c = Uniform(0, 1);
  const int lda = (transpose_a ? k : m) + Uniform(0, 3);
  const int ldb = (transpose_b ? n : k) + Uniform(0, 3);
  const int ldc = (transpose_c ? n : m) + Uniform(0, 3);
  const std::vector<std::uint8_t> a =
      RandomVector<std::uint8_t>(static_cast<std::size_t>(lda) * (transpose_a ? m : k), 0, 255);
  const std::vector<std::uint8_t> b =
      RandomVector<std::uint8_t>(static_cast<std::size_t>(ldb) * (transpose_b ? k : n), 0, 255);
  const std::size_t c_size = static_cast<std::size_t>(ldc) * (transpose_c ? m : n);
  std::vector<std::uint8_t> c(c_size, 0);
  std::vector<float> c_float(c_size, 0.0f);
  const int a_offset = -Uniform(0, 255), b_offset = -Uniform(0, 255);
  const BitDepthSetting setting = Uniform(0, 1) ? BitDepthSetting::A8B8 : BitDepthSetting::A5B7;
  EightBitIntGemm(transpose_a, transpose_b, transpose_c, m, n, k, a.data(), a_offset, lda, b.data(),
                  b_offset, ldb, c.data(), Uniform(-100000, 100000), Uniform(0, 3000),
                  Uniform(0, 24), ldc, setting);
  EightBitIntGemm(transpose_a, transpose_b, transpose_c, m, n, k, a.data(), a_offset, lda, b.data(),
                  b_offset, ldb, c_float.data(), 0.0078125f * Uniform(1, 100), ldc, setting);
  Emit(c);
  Emit(c_float);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_FILE\n", argv[0]);
    return 2;
  }
  output = std::fopen(argv[1], "wb");
  if (output == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  using gemmlowp::MapOrder;
  gemmlowp::GemmContext context;
  for (int trial = 0; trial < 400; ++trial) {
    context.set_max_num_threads(trial % 3 == 0 ? 2 : 1);
    switch (trial % 8) {
      case 0:
        RunCase<MapOrder::RowMajor, MapOrder::ColMajor, MapOrder::ColMajor>(&context);
        break;
      case 1:
        RunCase<MapOrder::RowMajor, MapOrder::RowMajor, MapOrder::RowMajor>(&context);
        break;
      case 2:
        RunCase<MapOrder::ColMajor, MapOrder::ColMajor, MapOrder::RowMajor>(&context);
        break;
      case 3:
        RunCase<MapOrder::ColMajor, MapOrder::RowMajor, MapOrder::ColMajor>(&context);
        break;
      case 4:
        RunCase<MapOrder::RowMajor, MapOrder::ColMajor, MapOrder::RowMajor>(&context);
        break;
      case 5:
        RunCase<MapOrder::RowMajor, MapOrder::RowMajor, MapOrder::ColMajor>(&context);
        break;
      case 6:
        RunCase<MapOrder::ColMajor, MapOrder::ColMajor, MapOrder::ColMajor>(&context);
        break;
      default:
        RunCase<MapOrder::ColMajor, MapOrder::RowMajor, MapOrder::RowMajor>(&context);
        break;
    }
    RunEightBitIntGemm();
  }
  return std::fclose(output) == 0 ? 0 : 1;
}
