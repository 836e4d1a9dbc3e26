// The layer's elementwise schedules (transformer/elementwise_schedule.*): with the L2 off each
// moves exactly its closed form's HBM bytes (inputs once, output once, the norms' weight once per
// row) over random shapes, either loop, with the FP32/SFU work per element its comment counts.
#include "transformer/elementwise_schedule.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "sim/base/errors.hpp"
#include "sim/engine/engine.hpp"
#include "test_support.hpp"

using iosim::ElementwiseKind;
using iosim::ElementwiseProblem;

TEST_CASE("elementwise schedules: L2 off moves exactly the closed form's bytes") {
  iosim::test::ShapeGen gen(3301);
  const ElementwiseKind kinds[] = {ElementwiseKind::rms_norm,     ElementwiseKind::layer_norm,
                                   ElementwiseKind::residual_add, ElementwiseKind::gated_silu,
                                   ElementwiseKind::gelu,         ElementwiseKind::silu,
                                   ElementwiseKind::gate_mul};
  const iosim::HardwareProfile& hw = iosim::test::profile();
  for (int trial = 0; trial < 60; ++trial) {
    ElementwiseProblem p;
    p.kind = gen.pick(kinds);
    p.rows = gen.pick(1, 300);
    p.cols = gen.coin() ? gen.pick(1, 3000) : gen.pick(8000, 20000);  // below and past a chunk
    p.loop = gen.coin() ? iosim::ElementwiseLoop::serial : iosim::ElementwiseLoop::chunks;
    CAPTURE(static_cast<int>(p.kind));
    CAPTURE(static_cast<int>(p.loop));
    CAPTURE(p.rows);
    CAPTURE(p.cols);
    iosim::EngineOptions opt;
    opt.l2_enabled = false;
    opt.exact = true;
    const iosim::EngineResult r =
        iosim::run_schedule(hw, *iosim::make_elementwise_schedule(p), opt);
    const iosim::ElementwiseBytes want = iosim::elementwise_closed_form(p);
    CHECK(r.total.hbm.read_total() == want.read);
    CHECK(r.total.hbm.write_total() == want.write);
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    const std::uint64_t n = u(p.rows) * u(p.cols);
    // The output alone, from the sizes: one bf16 per element.
    CHECK(r.total.hbm.write_bytes[iosim::index_of(iosim::TensorId::Y)] == 2 * n);
    CHECK(r.total.tensor_flops == 0);
    switch (p.kind) {
      case ElementwiseKind::rms_norm:
        CHECK(r.total.fp32_flops == 3 * n + u(p.rows));
        CHECK(r.total.sfu_ops == u(p.rows));
        CHECK(r.kernels.at(0).spec.grid.count() == p.rows);  // a row per CTA
        break;
      case ElementwiseKind::layer_norm:
        CHECK(r.total.fp32_flops == 6 * n + 2 * u(p.rows));
        CHECK(r.kernels.at(0).spec.grid.count() == p.rows);
        break;
      case ElementwiseKind::residual_add:
        CHECK(r.total.fp32_flops == n);
        CHECK(r.total.hbm.read_bytes[iosim::index_of(iosim::TensorId::R)] == 2 * n);
        break;
      case ElementwiseKind::gated_silu:
        CHECK(r.total.fp32_flops == 3 * n);
        CHECK(r.total.sfu_ops == 2 * n);
        CHECK(r.total.hbm.read_bytes[iosim::index_of(iosim::TensorId::X)] == 4 * n);
        break;
      case ElementwiseKind::gelu:
        CHECK(r.total.sfu_ops == n);
        break;
      case ElementwiseKind::silu:
        CHECK(r.total.fp32_flops == 2 * n);
        CHECK(r.total.sfu_ops == 2 * n);
        CHECK(r.total.hbm.read_bytes[iosim::index_of(iosim::TensorId::X)] == 2 * n);  // the gate
        break;
      case ElementwiseKind::gate_mul:
        CHECK(r.total.fp32_flops == n);
        CHECK(r.total.hbm.read_bytes[iosim::index_of(iosim::TensorId::X)] == 2 * n);  // up
        CHECK(r.total.hbm.read_bytes[iosim::index_of(iosim::TensorId::R)] == 2 * n);  // SiLU's
        break;
    }
    // The serial loop's CTA: 128 threads over 512 elements of the output (whole rows when a row
    // is shorter); the norms keep their row per CTA.
    if (p.loop == iosim::ElementwiseLoop::serial && p.kind != ElementwiseKind::rms_norm &&
        p.kind != ElementwiseKind::layer_norm) {
      CHECK(r.kernels.at(0).spec.threads_per_cta == 128);
      const std::int64_t rows_per_cta = std::max<std::int64_t>(1, 512 / p.cols);
      const std::int64_t cols_per_cta = std::min<std::int64_t>(p.cols, 512);
      CHECK(r.kernels.at(0).spec.grid.count() == ((p.rows + rows_per_cta - 1) / rows_per_cta) *
                                                     ((p.cols + cols_per_cta - 1) / cols_per_cta));
    }
  }
}

TEST_CASE("elementwise schedules: a large residual add is memory bound near HBM bandwidth") {
  ElementwiseProblem p;
  p.kind = ElementwiseKind::residual_add;
  p.rows = 8192;
  p.cols = 4096;
  const iosim::HardwareProfile& hw = iosim::test::profile();
  const iosim::EngineResult r =
      iosim::run_schedule(hw, *iosim::make_elementwise_schedule(p), iosim::EngineOptions{});
  CHECK(r.kernels.at(0).bound == "memory");
  // 192 MiB moved: no faster than the profile's HBM bandwidth allows.
  const double floor_s = 3.0 * 8192 * 4096 * 2 / (hw.hbm.bandwidth_gbps.value * 1e9);
  CHECK(r.time_s >= floor_s);
  CHECK(r.time_s < 2 * floor_s);
  p.rows = 0;
  CHECK_THROWS_AS(iosim::make_elementwise_schedule(p), iosim::ConfigError);
}
