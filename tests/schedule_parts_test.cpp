// Schedules emit a CTA in parts (one outer iteration at a time, to bound the engine's memory); a
// part boundary must never cut one of the engine's stages in two.
#include <doctest/doctest.h>

#include "sim/schedule/block_mask.hpp"
#include "tests/test_support.hpp"

using namespace iosim;

namespace {

bool prefetched_load(const TileOp& op) {
  return op.kind == OpKind::load && !op.in_step;
}

}  // namespace

TEST_CASE("a CTA's parts split where the engine's stages end") {
  for (const std::string& algo : builtin_registry().names()) {
    for (const char* pattern : {"local:2", "random:0.3:5", "causal"}) {
      for (bool causal : {true, false}) {
        for (Pass pass : {Pass::fwd, Pass::bwd, Pass::fwdbwd}) {
          const Capabilities& caps = builtin_registry().get(algo).capabilities;
          if (caps.splits) continue;  // decode schedules have their own tests
          if (!caps.backward && pass != Pass::fwd) continue;
          if (!caps.block_pattern && std::string(pattern) != "local:2") continue;
          AttentionProblem p;
          p.batch = 1;
          p.heads = 2;
          p.seq = 300;
          p.seq_kv = 333;
          p.head_dim = 32;
          p.causal = causal;
          p.pass = pass;
          if (caps.block_pattern) {
            p.pattern = std::make_shared<const BlockPattern>(parse_block_pattern(pattern));
          }
          Planned planned =
              builtin_registry().get(algo).plan(p, test::profile(), test::blocks(64, 64));
          REQUIRE_MESSAGE(planned.feasible(), planned.infeasible_reason);
          const Schedule& s = *planned.schedule;
          const std::vector<KernelSpec> kernels = s.kernels();
          for (std::size_t k = 0; k < kernels.size(); ++k) {
            for (std::int64_t cta = 0; cta < std::min<std::int64_t>(kernels[k].grid.count(), 5);
                 ++cta) {
              std::vector<TileOp> parts;
              CAPTURE(algo);
              CAPTURE(pattern);
              CAPTURE(causal);
              CAPTURE(kernels[k].name);
              CAPTURE(cta);
              // The engine runs a stage as the prefetched loads at its start, then everything up to
              // the next prefetched load; a stage that spanned two parts would be cut in two (or a
              // part's compute run apart from its loads). So a non-empty part after the first
              // starts with a prefetched load, and one before it does not end with one.
              std::size_t previous_end = 0;
              for (std::size_t part = 0;; ++part) {
                const std::size_t begin = parts.size();
                const bool more = s.emit_cta_part(k, cta, part, parts);
                if (parts.size() > begin) {
                  if (begin > 0) {
                    CHECK(prefetched_load(parts[begin]));
                    CHECK_FALSE(prefetched_load(parts[previous_end - 1]));
                  }
                  previous_end = parts.size();
                }
                if (!more) break;
                REQUIRE(part < 100000);
              }
            }
          }
        }
      }
    }
  }
}
