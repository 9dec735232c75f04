// oneDNN's int8 matmul primitive (uint8 source, int8 weights: it has no exact path for
// full-range uint8 weights) with output scale and zero points, on the same cases:
// onednn/u8s8/<M>x<N>x<K>/threads:<t>. Debian's oneDNN runs on OpenMP threads.
#include <omp.h>

#include <cstdint>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "bench/bench_common.h"

namespace lowbit_bench {
namespace {

struct OnednnProblem {
  std::vector<std::uint8_t> src;
  std::vector<std::int8_t> weights;
  std::vector<std::uint8_t> dst;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul matmul;
  dnnl::memory src_memory, weights_memory, dst_memory;
};

std::function<void()> SetUpOnednn(const Case& c) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const Shape& s = c.shape;
  omp_set_num_threads(c.threads);
  auto problem = std::make_shared<OnednnProblem>();
  problem->src = RandomValues<std::uint8_t>(static_cast<std::size_t>(s.rows) * s.depth, 0, 255, 1);
  problem->weights =
      RandomValues<std::int8_t>(static_cast<std::size_t>(s.depth) * s.cols, -128, 127, 2);
  problem->dst.resize(static_cast<std::size_t>(s.rows) * s.cols);
  // Row-major weights and destination: with column-major ones this oneDNN falls back to its
  // reference int8 matmul (ref_int8, ~1000x slower), which would be no comparison at all.
  const dnnl::memory::desc src_md({s.rows, s.depth}, dt::u8, tag::ab);
  const dnnl::memory::desc weights_md({s.depth, s.cols}, dt::s8, tag::ab);
  const dnnl::memory::desc dst_md({s.rows, s.cols}, dt::u8, tag::ab);
  dnnl::primitive_attr attr;
  attr.set_output_scales(0, {1.0f / 65536});
  attr.set_zero_points(DNNL_ARG_SRC, 0, {128});
  attr.set_zero_points(DNNL_ARG_DST, 0, {128});
  const dnnl::matmul::primitive_desc primitive(dnnl::matmul::desc(src_md, weights_md, dst_md), attr,
                                               problem->engine);
  problem->matmul = dnnl::matmul(primitive);
  problem->src_memory = dnnl::memory(src_md, problem->engine, problem->src.data());
  problem->weights_memory = dnnl::memory(weights_md, problem->engine, problem->weights.data());
  problem->dst_memory = dnnl::memory(dst_md, problem->engine, problem->dst.data());
  return [problem] {
    problem->matmul.execute(problem->stream, {{DNNL_ARG_SRC, problem->src_memory},
                                              {DNNL_ARG_WEIGHTS, problem->weights_memory},
                                              {DNNL_ARG_DST, problem->dst_memory}});
    problem->stream.wait();
  };
}

const Registration registration([] { RegisterCases("onednn", "u8s8", SetUpOnednn); });

}  // namespace
}  // namespace lowbit_bench
