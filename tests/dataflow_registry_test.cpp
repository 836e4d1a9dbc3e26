// The dataflow registry (algorithms/dataflow.hpp): a preset's description and its built-in name are
// one kernel, down to the paper lines `iosim explain` gives each operation.
#include <doctest/doctest.h>

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
    const Algorithm described = described_algorithm(preset, h100, builtin_registry());
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
      for (const auto& [kernel, op] : cta0_ops(*planned.schedule)) {
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
