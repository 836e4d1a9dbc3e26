// The dataflow registry (algorithms/dataflow.hpp): a preset's description and its built-in name are
// one kernel, down to the paper lines `iosim explain` gives each operation.
#include <doctest/doctest.h>

#include "algorithms/dataflow.hpp"
#include "sim/schedule/block_mask.hpp"
#include "sim/schedule/block_table.hpp"
#include "test_support.hpp"

namespace iosim {
namespace {

// Every operation of CTA 0 of every kernel of `s`, with its kernel's name.
std::vector<std::pair<std::string, TileOp>> cta0_ops(const Schedule& s) {
  std::vector<std::pair<std::string, TileOp>> out;
  const std::vector<KernelSpec> kernels = s.kernels();
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    std::vector<TileOp> ops;
    for (std::size_t part = 0; s.emit_cta_part(k, 0, part, ops); ++part) {
    }
    for (const TileOp& op : ops) out.emplace_back(kernels[k].name, op);
  }
  return out;
}

}  // namespace

// `--kernel flash3` explained its forward with FlashAttention-2's lines, where `--algo flash3`
// (whose forward follows no paper's lines) gives none: the description took the paper lines of
// its forward dataflow's first preset, flash2, not its own.
TEST_CASE("a preset's description explains each operation with its algorithm's paper lines") {
  const HardwareProfile& h100 = test::profile("h100-sxm5-80gb");
  int compared = 0;
  for (const KernelDescription& preset : kernel_presets()) {
    const Algorithm& by_name = builtin_registry().get(preset.name);
    const Algorithm described = described_algorithm(preset, h100);
    REQUIRE(described.paper_step);
    for (const Pass pass : {Pass::fwd, Pass::bwd, Pass::fwdbwd}) {
      if (pass != Pass::fwd && preset.backward.empty()) continue;
      AttentionProblem p = test::request(preset.name, 1, 2, 96, 32).problem;
      if (preset.forward == "split_kv" || preset.forward == "paged") {
        p.seq_kv = 96;
        p.seq = 1;
      }
      if (by_name.capabilities.pages) {
        p.page_tokens = 16;
        p.block_table = std::make_shared<const BlockTable>(random_block_table(1, 6, 3));
      }
      p.causal = pass == Pass::fwdbwd;
      p.pass = pass;
      CAPTURE(preset.name);
      CAPTURE(pass_name(pass));
      const Planned planned = by_name.plan(with_defaults(p), h100, TilingRequest{});
      REQUIRE(planned.feasible());
      for (const auto& kernel_op : cta0_ops(*planned.schedule)) {
        // Not a structured binding: CAPTURE's lambda may not capture one before C++20 (clang).
        const auto& kernel = kernel_op.first;
        const auto& op = kernel_op.second;
        CAPTURE(kernel);
        const PaperStep want = by_name.paper_step(kernel, op);
        const PaperStep got = described.paper_step(kernel, op);
        CHECK(got.algorithm == want.algorithm);
        CHECK(got.line == want.line);
        CHECK(got.note == want.note);
        ++compared;
      }
    }
  }
  CHECK(compared > 100);
}

}  // namespace iosim

namespace iosim {

// A preset with both passes is its backward's kernels with their forward, planned together (one
// tiling for flash2's two passes): were its mechanisms to drift from its backward dataflow's,
// it would be planned apart, tiled otherwise, with nothing else failing.
TEST_CASE(
    "every preset with both passes runs its backward's fused kernels; other mechanisms do not") {
  int fused = 0;
  for (const KernelDescription& preset : kernel_presets()) {
    CAPTURE(preset.name);
    const Dataflow* f = find_dataflow(forward_dataflows(), preset.forward);
    const Dataflow* b = find_dataflow(backward_dataflows(), preset.backward);
    REQUIRE(f != nullptr);
    if (b == nullptr) {
      CHECK(fused_passes(preset) == nullptr);
      continue;
    }
    REQUIRE(fused_passes(preset) != nullptr);
    CHECK(fused_passes(preset) == &*b->fused);
    ++fused;
    KernelDescription other = preset;
    other.name = "other";
    other.mechanisms.load = LoadPath::plain;
    CHECK(fused_passes(other) == nullptr);
    other = preset;
    other.kv_order = KvOrder::descending;
    CHECK(fused_passes(other) == nullptr);
  }
  CHECK(fused == 5);
  // Each entry is in its pass's list once, under its own name.
  for (const Dataflow& d : dataflows()) {
    const auto& list = d.pass == Pass::fwd ? forward_dataflows() : backward_dataflows();
    CHECK(find_dataflow(list, d.name) == &d);
  }
  CHECK(forward_dataflows().size() + backward_dataflows().size() == dataflows().size());
}

}  // namespace iosim

namespace iosim {

// A description with a block mask planned apart (its forward alone, or with mechanisms or a
// backward other than block-sparse's) reported the dense closed form, while its schedule ran the
// mask's nonzero blocks only: 4.7 MB against 2.0 MB moved for local:2 at N = 1024, d = 64.
TEST_CASE("a block-mask description planned apart has the closed form of its blocks") {
  test::ShapeGen gen(48);
  const char* specs[] = {"local:2", "strided:2", "random:0.3:7", "causal"};
  const std::int64_t dims[] = {16, 32, 64, 128};
  const std::int64_t blocks[] = {16, 32, 64, 128};
  for (int i = 0; i < 24; ++i) {
    KernelDescription d;
    d.name = "masked";
    d.source = "test";
    d.forward = "query_stationary";
    d.block_mask = true;
    const bool with_backward = gen.coin();
    if (with_backward) d.backward = "two_pass";
    if (gen.coin()) d.mechanisms.load = LoadPath::tma;  // not flash2's kernels either way
    RunRequest r = test::request("flash2", gen.pick(1, 2), gen.pick(1, 3), gen.pick(1, 700),
                                 gen.pick(dims), gen.pick(blocks), gen.pick(blocks));
    r.problem.causal = gen.coin();
    r.problem.pass = with_backward && gen.coin() ? Pass::fwdbwd : Pass::fwd;
    r.problem.pattern = std::make_shared<const BlockPattern>(parse_block_pattern(gen.pick(specs)));
    r.engine.l2_enabled = false;
    r.kernel = std::make_shared<const KernelDescription>(d);
    const Report rep = simulate(test::profile("h100-sxm5-80gb"), r);
    // A tile whose fp32 accumulators alone pass a thread's 255 registers would spill: refused
    // without a compiler's report (tile_mechanisms_test.cpp), and no closed form to compare.
    if (!rep.feasible() && rep.infeasible_reason.find("registers a thread") != std::string::npos) {
      continue;
    }
    REQUIRE(rep.feasible());
    CAPTURE(with_backward);
    test::require_closed_form(r, rep);
  }
}

}  // namespace iosim

namespace iosim {

// An fp8 query-stationary description planned apart (wgmma, not flash3's exact kernels) reported
// O written in fp8, one byte an element, where its schedule writes it in bf16 as FlashAttention-3's
// FP8 forward does: 270336 against 532480 bytes written at N = 1024, d = 128, two heads.
TEST_CASE("an fp8 description's closed form writes O in bf16, as its schedule does") {
  test::ShapeGen gen(8);
  const std::int64_t dims[] = {64, 128};
  for (int i = 0; i < 12; ++i) {
    KernelDescription d;
    d.name = "fp8";
    d.source = "test";
    d.forward = "query_stationary";
    d.block_mask = gen.coin();
    d.mechanisms = {MmaFamily::wgmma_rs, LoadPath::tma, WarpRoles::uniform, false, MmaWait::step};
    RunRequest r = test::request("flash2", gen.pick(1, 2), gen.pick(1, 3), gen.pick(1, 700),
                                 gen.pick(dims), 128, gen.coin() ? 64 : 128);
    r.problem.dtype = Dtype::fp8;
    r.problem.causal = gen.coin();
    if (d.block_mask) {
      r.problem.pattern = std::make_shared<const BlockPattern>(parse_block_pattern("local:2"));
    }
    r.engine.l2_enabled = false;
    r.kernel = std::make_shared<const KernelDescription>(d);
    const Report rep = simulate(test::profile("h100-sxm5-80gb"), r);
    if (!rep.feasible() && rep.infeasible_reason.find("registers a thread") != std::string::npos) {
      continue;  // spills: refused without a compiler's report, as in the case above
    }
    REQUIRE(rep.feasible());
    CAPTURE(d.block_mask);
    test::require_closed_form(r, rep);
  }
}

}  // namespace iosim
