// OpenBLAS single-precision GEMM on the same shapes, for scale: openblas/sgemm/... (its GOPS
// counter is GFLOPS).
#include <cblas.h>

#include <memory>
#include <vector>

#include "bench/bench_common.h"

extern "C" void openblas_set_num_threads(int threads);

namespace lowbit_bench {
namespace {

struct SgemmProblem {
  std::vector<float> lhs;
  std::vector<float> rhs;
  std::vector<float> result;
};

std::function<void()> SetUpSgemm(const Case& c) {
  const Shape& s = c.shape;
  auto problem = std::make_shared<SgemmProblem>();
  problem->lhs = RandomValues<float>(static_cast<std::size_t>(s.rows) * s.depth, -128, 127, 1);
  problem->rhs = RandomValues<float>(static_cast<std::size_t>(s.depth) * s.cols, -128, 127, 2);
  problem->result.resize(static_cast<std::size_t>(s.rows) * s.cols);
  openblas_set_num_threads(c.threads);
  return [problem, s] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.rows, s.cols, s.depth, 1.0f,
                problem->lhs.data(), s.depth, problem->rhs.data(), s.cols, 0.0f,
                problem->result.data(), s.cols);
  };
}

const Registration registration([] { RegisterCases("openblas", "sgemm", SetUpSgemm); });

}  // namespace
}  // namespace lowbit_bench
