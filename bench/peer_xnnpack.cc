// XNNPACK's uint8 fully-connected operator (qu8, weights packed once at creation, as XNNPACK
// always does) on the same cases: xnnpack/qu8_prepacked/<M>x<N>x<K>/threads:<t>. Its
// requantization scale matches lowbit's pipeline (2^-16).
#include <pthreadpool.h>
#include <xnnpack.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "bench/bench_common.h"

namespace lowbit_bench {
namespace {

struct XnnpackProblem {
  // input: M x K row-major (lhs); weights: N x K row-major (rhs, column-major); output: M x N.
  explicit XnnpackProblem(const Shape& s) : operands(s) {}
  Uint8Operands operands;
  xnn_operator_t op = nullptr;
  pthreadpool_t pool = nullptr;
  ~XnnpackProblem() {
    if (op != nullptr) xnn_delete_operator(op);
    if (pool != nullptr) pthreadpool_destroy(pool);
  }
};

void Check(xnn_status status, const char* what) {
  if (status != xnn_status_success) throw std::runtime_error(what);
}

std::function<void()> SetUpXnnpack(const Case& c) {
  const Shape& s = c.shape;
  Check(xnn_initialize(nullptr), "xnn_initialize");
  auto problem = std::make_shared<XnnpackProblem>(s);
  if (c.threads > 1) problem->pool = pthreadpool_create(c.threads);
  Check(xnn_create_fully_connected_nc_qu8(s.depth, s.cols, s.depth, s.cols, 128, 1.0f, 128, 1.0f,
                                          problem->operands.rhs.data(), nullptr, 128, 65536.0f, 0,
                                          255, 0, &problem->op),
        "xnn_create_fully_connected_nc_qu8");
  Check(xnn_setup_fully_connected_nc_qu8(problem->op, s.rows, problem->operands.lhs.data(),
                                         problem->operands.result.data(), problem->pool),
        "xnn_setup_fully_connected_nc_qu8");
  return [problem] { Check(xnn_run_operator(problem->op, problem->pool), "xnn_run_operator"); };
}

const Registration registration([] { RegisterCases("xnnpack", "qu8_prepacked", SetUpXnnpack); });

}  // namespace
}  // namespace lowbit_bench
