// Shared by the suites: random operands in caller-style storage (any order, padded strides),
// the plain 64-bit triple-loop reference every path must match, and the kernel x thread grid.
#ifndef LOWBIT_TEST_TEST_UTIL_H_
#define LOWBIT_TEST_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "lowbit/internal/driver/context_state.h"
#include "lowbit/lowbit.h"

namespace lowbit {
namespace test {

struct Shape {
  int rows;
  int depth;
  int cols;
};

// Runs `call` and expects lowbit::Error for `argument`, with `rule` in its message.
inline void ExpectError(const std::function<void()>& call, const std::string& argument,
                        const std::string& rule) {
  try {
    call();
    ADD_FAILURE() << "no error for " << argument;
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(rule), std::string::npos)
        << "message '" << error.what() << "' lacks '" << rule << "'";
  }
}

// A matrix with its own storage; the map may have a padded stride, and the padding holds
// values the GEMM must never read into a result.
template <typename Scalar>
struct OwnedMatrix {
  std::vector<Scalar> storage;
  MatrixMap<Scalar> map;

  // Every stored value, padding included, is uniform over Scalar's range.
  OwnedMatrix(int rows, int cols, Order order, int padding, std::mt19937* random)
      : storage(static_cast<std::size_t>(StrideFor(rows, cols, order, padding)) *
                    (order == Order::kRowMajor ? rows : cols) +
                1),
        map(storage.data(), rows, cols, order, StrideFor(rows, cols, order, padding)) {
    std::uniform_int_distribution<int> value(std::numeric_limits<Scalar>::min(),
                                             std::numeric_limits<Scalar>::max());
    for (auto& entry : storage) entry = static_cast<Scalar>(value(*random));
  }
  OwnedMatrix(const OwnedMatrix&) = delete;
  OwnedMatrix& operator=(const OwnedMatrix&) = delete;

  static int StrideFor(int rows, int cols, Order order, int padding) {
    return (order == Order::kRowMajor ? cols : rows) + padding;
  }
  MatrixMap<const Scalar> const_map() const { return map; }
};

// The reference's dot product of `count` entries of `a` and `b`, in int64. Test code, not what
// the sanitizers are there to check, so left uninstrumented: instrumented, the reference of the
// multi-threaded large-shape tests took most of the ThreadSanitizer suite's time.
__attribute__((no_sanitize("address", "thread", "undefined"))) inline std::int64_t DotProduct(
    const std::int64_t* a, const std::int64_t* b, int count) {
  std::int64_t sum = 0;
  for (int k = 0; k < count; ++k) sum += a[k] * b[k];
  return sum;
}

// The dot products of the first `rows` of `lhs_rows` with each of the `cols` of `rhs_cols`, both
// `depth` long and contiguous: entry (r, c) at r * cols + c.
inline std::vector<std::int64_t> DotProducts(const std::vector<std::int64_t>& lhs_rows,
                                             const std::vector<std::int64_t>& rhs_cols, int rows,
                                             int cols, int depth) {
  std::vector<std::int64_t> products(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      products[static_cast<std::size_t>(r) * cols + c] =
          DotProduct(lhs_rows.data() + static_cast<std::size_t>(r) * depth,
                     rhs_cols.data() + static_cast<std::size_t>(c) * depth, depth);
    }
  }
  return products;
}

// acc[r][c] = sum_k (lhs(r,k) + lhs_offset(r)) * (rhs(k,c) + rhs_offset(c)), in int64: the
// operands with their offsets are copied to lhs rows and rhs columns first, each contiguous.
template <typename Lhs, typename Rhs>
std::vector<std::int64_t> ReferenceAccumulators(const MatrixMap<Lhs>& lhs,
                                                const MatrixMap<Rhs>& rhs,
                                                const Offsets& lhs_offset,
                                                const Offsets& rhs_offset) {
  const int rows = lhs.rows(), depth = lhs.cols(), cols = rhs.cols();
  std::vector<std::int64_t> lhs_rows(static_cast<std::size_t>(rows) * depth);
  std::vector<std::int64_t> rhs_cols(static_cast<std::size_t>(cols) * depth);
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < depth; ++k) {
      lhs_rows[static_cast<std::size_t>(r) * depth + k] =
          static_cast<std::int64_t>(lhs(r, k)) + lhs_offset(r);
    }
  }
  for (int c = 0; c < cols; ++c) {
    for (int k = 0; k < depth; ++k) {
      rhs_cols[static_cast<std::size_t>(c) * depth + k] =
          static_cast<std::int64_t>(rhs(k, c)) + rhs_offset(c);
    }
  }
  return DotProducts(lhs_rows, rhs_cols, rows, cols, depth);
}

// A (kernel, thread count, blocking) a GEMM must give the same bits on. Tiny caches force
// blocks of a few rows, columns and depth values, so that small shapes cross block edges.
struct PathSetting {
  Kernel kernel;
  int threads;
  bool tiny_blocks;
};
inline void Configure(Context* context, const PathSetting& setting) {
  context->set_kernel(setting.kernel);
  context->set_max_num_threads(setting.threads);
  context->state().DisableMeasuredChoices();
  // Every thread count runs as asked, beyond this machine's cores too: each partitions the work
  // its own way.
  context->state().cores = std::max(context->state().cores, setting.threads);
  if (setting.tiny_blocks) context->state().caches = internal::CacheSizes{256, 2048};
}
inline std::vector<PathSetting> PathSettings(std::initializer_list<int> thread_counts) {
  std::vector<PathSetting> settings;
  for (Kernel kernel : AvailableKernels()) {
    for (int threads : thread_counts) {
      for (bool tiny_blocks : {false, true}) settings.push_back({kernel, threads, tiny_blocks});
    }
  }
  return settings;
}
inline void PrintTo(const PathSetting& setting, std::ostream* out) {
  *out << KernelName(setting.kernel) << ", " << setting.threads << " threads"
       << (setting.tiny_blocks ? ", tiny blocks" : "");
}
inline std::string PathSettingName(const testing::TestParamInfo<PathSetting>& info) {
  return std::string(KernelName(info.param.kernel)) + "_threads" +
         std::to_string(info.param.threads) + (info.param.tiny_blocks ? "_tinyblocks" : "");
}

}  // namespace test
}  // namespace lowbit

#endif  // LOWBIT_TEST_TEST_UTIL_H_
