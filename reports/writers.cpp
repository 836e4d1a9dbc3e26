#include "reports/writers.hpp"

#include <fmt/format.h>

#include <cmath>

#include "sim/block_mask.hpp"
#include "sim/block_table.hpp"

namespace iosim {
namespace {

using nlohmann::json;

json problem_json(const AttentionProblem& p) {
  return {{"batch", p.batch},
          {"heads", p.heads},
          {"seq", p.seq},
          {"seq_kv", p.seq_kv},
          {"head_dim", p.head_dim},
          {"dtype", std::string(dtype_name(p.dtype))},
          {"causal", p.causal},
          {"mask", p.mask},
          {"dropout", p.dropout},
          {"pass", pass_name(p.pass)},
          {"pattern", p.pattern ? json(p.pattern->spec) : json(nullptr)},
          {"kv_heads", p.kv_head_count()},
          {"page_tokens", p.page_tokens > 0 ? json(p.page_tokens) : json(nullptr)},
          {"block_table", p.block_table ? json(p.block_table->source) : json(nullptr)}};
}

json counters_json(const Counters& c) {
  json per_tensor = json::object();
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    const std::uint64_t v[] = {c.hbm.read_bytes[i], c.hbm.write_bytes[i], c.l2.read_bytes[i],
                               c.l2.write_bytes[i]};
    if (v[0] + v[1] + v[2] + v[3] == 0) continue;
    per_tensor[std::string(tensor_name(static_cast<TensorId>(i)))] = {{"hbm_read_bytes", v[0]},
                                                                      {"hbm_write_bytes", v[1]},
                                                                      {"l2_read_bytes", v[2]},
                                                                      {"l2_write_bytes", v[3]}};
  }
  return {{"hbm_read_bytes", c.hbm.read_total()},
          {"hbm_write_bytes", c.hbm.write_total()},
          {"hbm_write_dirty_at_end_bytes", c.l2_dirty_at_end_bytes},
          {"l2_read_bytes", c.l2.read_total()},
          {"l2_write_bytes", c.l2.write_total()},
          {"smem_read_bytes", c.smem_read_bytes},
          {"smem_write_bytes", c.smem_write_bytes},
          {"flops", c.flops()},
          {"tensor_flops", c.tensor_flops},
          {"fp32_flops", c.fp32_flops},
          {"sfu_ops", c.sfu_ops},
          {"int32_ops", c.int32_ops},
          {"per_tensor", per_tensor}};
}

json tiling_json(const Report& r) {
  json t = {{"block_q", r.tiling.block_q},
            {"block_kv", r.tiling.block_kv},
            {"threads", r.tiling.threads},
            {"pipeline_stages", r.tiling.pipeline_stages},
            {"sram_bytes", r.sram_bytes}};
  if (r.density) t["density"] = *r.density;  // block-sparse: s, the fraction of blocks computed
  if (r.tiling.splits > 0) t["splits"] = r.tiling.splits;  // split-KV decoding
  return t;
}

std::string grid_text(const Dim3& g) {
  return fmt::format("{}x{}x{}", g.x, g.y, g.z);
}

}  // namespace

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (std::abs(b) >= 1000.0 && u < 5) {
    b /= 1000.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.3g} {}", b, units[u]);
}

std::string human_seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

json report_to_json(const Report& r) {
  json j = {{"profile", r.profile},
            {"algorithm", r.request.algorithm},
            {"problem", problem_json(r.request.problem)},
            {"tiling", tiling_json(r)},
            {"l2", r.request.engine.l2_enabled ? "on" : "off"},
            {"feasible", r.feasible()}};
  if (!r.feasible()) {
    j["infeasible_reason"] = r.infeasible_reason;
    return j;
  }
  json kernels = json::array();
  for (const KernelResult& k : r.engine.kernels) {
    kernels.push_back({{"name", k.spec.name},
                       {"grid", {k.spec.grid.x, k.spec.grid.y, k.spec.grid.z}},
                       {"ctas", k.spec.grid.count()},
                       {"threads_per_cta", k.spec.threads_per_cta},
                       {"registers_per_thread", k.spec.registers_per_thread},
                       {"smem_bytes_per_cta", k.spec.smem_bytes_per_cta},
                       {"pipeline_stages", k.spec.pipeline_stages},
                       {"ctas_per_sm", k.occupancy.ctas_per_sm},
                       {"occupancy_limiter", k.occupancy.limiter},
                       {"waves", k.waves},
                       {"idle_sm_fraction", k.idle_sm_fraction},
                       {"time_s", k.time_s},
                       {"bound", k.bound},
                       {"achieved_hbm_gbps", k.achieved_hbm_gbps},
                       {"achieved_l2_gbps", k.achieved_l2_gbps},
                       {"counters", counters_json(k.counters)}});
  }
  j["kernels"] = kernels;
  j["counters"] = counters_json(r.engine.total);
  j["time_s"] = r.engine.time_s;
  j["bound"] = r.bound;
  j["bounds"] = {{"compulsory_bytes", r.bounds.compulsory_bytes},
                 {"closed_form_bytes", r.bounds.closed_form_bytes},
                 {"closed_form_read_bytes", r.bounds.closed_form_read_bytes},
                 {"closed_form_write_bytes", r.bounds.closed_form_write_bytes},
                 {"lower_bound_bytes", r.bounds.lower_bound_bytes},
                 {"lower_bound_formula", r.bounds.lower_bound_formula}};
  j["numerics"] = {
      {"executed", r.numerics.executed},
      {"max_abs_error",
       r.numerics.max_abs_error.has_value() ? json(*r.numerics.max_abs_error) : json(nullptr)}};
  j["sm_clock_mhz"] = r.request.engine.sm_clock_mhz;
  j["simulation_wall_s"] = r.simulation_wall_s;
  return j;
}

std::string format_table(const Report& r) {
  const AttentionProblem& p = r.request.problem;
  std::string s =
      fmt::format("iosim: {} on {} ({}), L2 {}\n", r.request.algorithm, r.profile_description,
                  r.profile, r.request.engine.l2_enabled ? "on" : "off (two-level model)");
  s += fmt::format("problem  B={} H={}{} N={} N_kv={} d={} {}{}{}{} pass={}\n", p.batch, p.heads,
                   p.kv_head_count() != p.heads ? fmt::format(" H_kv={}", p.kv_head_count()) : "",
                   p.seq, p.seq_kv, p.head_dim, dtype_name(p.dtype), p.causal ? " causal" : "",
                   p.mask ? " mask" : "",
                   p.dropout > 0 ? fmt::format(" dropout={}", p.dropout) : "", pass_name(p.pass));
  if (p.page_tokens > 0) {
    s += fmt::format("pages    {} tokens per page, block table {}\n", p.page_tokens,
                     p.block_table ? p.block_table->source : "-");
  }
  s += fmt::format(
      "tiling   block_q={} block_kv={} threads={} stages={}{}  (M = {} B of SRAM per CTA)\n",
      r.tiling.block_q, r.tiling.block_kv, r.tiling.threads, r.tiling.pipeline_stages,
      r.tiling.splits > 0 ? fmt::format(" splits={}", r.tiling.splits) : "", r.sram_bytes);
  if (r.density) {
    s += fmt::format("blocks   pattern {}, density s = {:.4g} of the blocks computed\n",
                     p.pattern ? p.pattern->spec : "all", *r.density);
  }
  if (!r.feasible()) return s + "infeasible: " + r.infeasible_reason + "\n";
  s += fmt::format("\n{:<12} {:>14} {:>9} {:>7} {:>9} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10}\n",
                   "kernel", "grid", "CTAs/SM", "waves", "idle SMs", "time", "bound", "HBM read",
                   "HBM write", "L2 read", "L2 write");
  for (const KernelResult& k : r.engine.kernels) {
    const Counters& c = k.counters;
    s += fmt::format(
        "{:<12} {:>14} {:>9} {:>7.2f} {:>8.0f}% {:>10} {:>8} {:>10} {:>10} {:>10} {:>10}\n",
        k.spec.name, grid_text(k.spec.grid), k.occupancy.ctas_per_sm, k.waves,
        100.0 * k.idle_sm_fraction, human_seconds(k.time_s), k.bound,
        human_bytes(static_cast<double>(c.hbm.read_total())),
        human_bytes(static_cast<double>(c.hbm.write_total())),
        human_bytes(static_cast<double>(c.l2.read_total())),
        human_bytes(static_cast<double>(c.l2.write_total())));
  }
  const Counters& t = r.engine.total;
  const double hbm = static_cast<double>(t.hbm.read_total() + t.hbm.write_total());
  s += fmt::format("\ntotal    time {} ({}-bound), HBM {} ({:.0f} GB/s), L2 {}, smem {}\n",
                   human_seconds(r.engine.time_s), r.bound, human_bytes(hbm),
                   hbm / r.engine.time_s / 1e9,
                   human_bytes(static_cast<double>(t.l2.read_total() + t.l2.write_total())),
                   human_bytes(static_cast<double>(t.smem_read_bytes + t.smem_write_bytes)));
  if (r.request.engine.l2_enabled) {
    s += fmt::format("         dirty in L2 at the end (not yet written to HBM): {}\n",
                     human_bytes(static_cast<double>(t.l2_dirty_at_end_bytes)));
  }
  s += fmt::format("         FLOPs {:.4g} G (tensor-core {:.4g} G, FP32 {:.4g} G, SFU {:.4g} G)\n",
                   static_cast<double>(t.flops()) / 1e9, static_cast<double>(t.tensor_flops) / 1e9,
                   static_cast<double>(t.fp32_flops) / 1e9, static_cast<double>(t.sfu_ops) / 1e9);
  s += fmt::format("bounds   compulsory {}, closed form (two-level) {}, lower bound {} [{}]\n",
                   human_bytes(static_cast<double>(r.bounds.compulsory_bytes)),
                   human_bytes(static_cast<double>(r.bounds.closed_form_bytes)),
                   human_bytes(static_cast<double>(r.bounds.lower_bound_bytes)),
                   r.bounds.lower_bound_formula);
  s += fmt::format("\n{:<13} {:>10} {:>10} {:>10} {:>10}\n", "tensor", "HBM read", "HBM write",
                   "L2 read", "L2 write");
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    const std::uint64_t v[] = {t.hbm.read_bytes[i], t.hbm.write_bytes[i], t.l2.read_bytes[i],
                               t.l2.write_bytes[i]};
    if (v[0] + v[1] + v[2] + v[3] == 0) continue;
    s +=
        fmt::format("{:<13} {:>10} {:>10} {:>10} {:>10}\n", tensor_name(static_cast<TensorId>(i)),
                    human_bytes(static_cast<double>(v[0])), human_bytes(static_cast<double>(v[1])),
                    human_bytes(static_cast<double>(v[2])), human_bytes(static_cast<double>(v[3])));
  }
  if (r.numerics.executed) {
    s += fmt::format("\nnumerics max |O - O_ref| and |L - L_ref|{} = {:.3g}\n",
                     p.pass == Pass::fwd   ? ""
                     : p.pass == Pass::bwd ? " (gradients dQ, dK, dV)"
                                           : ", dQ, dK, dV",
                     r.numerics.max_abs_error.value_or(NAN));
  }
  return s;
}

std::string csv_header() {
  return "profile,algorithm,batch,heads,seq,seq_kv,head_dim,dtype,causal,mask,dropout,block_q,"
         "block_kv,l2,feasible,hbm_read_bytes,hbm_write_bytes,l2_read_bytes,l2_write_bytes,"
         "flops,tensor_flops,time_s,bound,compulsory_bytes,closed_form_bytes,lower_bound_bytes,"
         "max_abs_error,infeasible_reason,pass,kv_heads,pattern,page_tokens,block_table,splits";
}

namespace {

// A CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string q = "\"";
  for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// The columns after infeasible_reason (added later, so that the first columns keep their
// places): what else tells a sweep's rows apart.
std::string csv_problem_extras(const Report& r) {
  const AttentionProblem& p = r.request.problem;
  return fmt::format(",{},{},{},{},{},{}", pass_name(p.pass), p.kv_head_count(),
                     p.pattern ? csv_field(p.pattern->spec) : "",
                     p.page_tokens > 0 ? std::to_string(p.page_tokens) : "",
                     p.block_table ? csv_field(p.block_table->source) : "",
                     r.tiling.splits > 0 ? std::to_string(r.tiling.splits) : "");
}

}  // namespace

std::string csv_row(const Report& r) {
  const AttentionProblem& p = r.request.problem;
  std::string s =
      fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", r.profile, r.request.algorithm,
                  p.batch, p.heads, p.seq, p.seq_kv, p.head_dim, dtype_name(p.dtype), p.causal,
                  p.mask, p.dropout, r.tiling.block_q, r.tiling.block_kv,
                  r.request.engine.l2_enabled ? "on" : "off", r.feasible());
  if (!r.feasible()) {
    std::string reason = r.infeasible_reason;
    for (char& ch : reason)
      if (ch == '"') ch = '\'';
    return s + ",,,,,,,,,,,,," + "\"" + reason + "\"" + csv_problem_extras(r);
  }
  const Counters& t = r.engine.total;
  s += fmt::format(",{},{},{},{},{},{},{:.9g},{},{},{},{},", t.hbm.read_total(),
                   t.hbm.write_total(), t.l2.read_total(), t.l2.write_total(), t.flops(),
                   t.tensor_flops, r.engine.time_s, r.bound, r.bounds.compulsory_bytes,
                   r.bounds.closed_form_bytes, r.bounds.lower_bound_bytes);
  if (r.numerics.max_abs_error) s += fmt::format("{:.6g}", *r.numerics.max_abs_error);
  return s + "," + csv_problem_extras(r);
}

std::string format_comparison(const std::vector<Report>& two_level,
                              const std::vector<Report>& three_level) {
  std::string s = fmt::format("{:<10} {:>14} {:>10} {:>14} {:>12} {:>10} {:>10} {:>8}\n",
                              "algorithm", "HBM (2-level)", "vs std", "HBM (L2 on)", "L2 traffic",
                              "GFLOPs", "time", "bound");
  double standard_bytes = 0;
  for (std::size_t i = 0; i < two_level.size() && i < three_level.size(); ++i) {
    const Report& a = two_level[i];
    const Report& b = three_level[i];
    if (!a.feasible() || !b.feasible()) {
      s += fmt::format("{:<10} infeasible: {}\n", a.request.algorithm, a.infeasible_reason);
      continue;
    }
    const double two =
        static_cast<double>(a.engine.total.hbm.read_total() + a.engine.total.hbm.write_total());
    if (builtin_registry().get(a.request.algorithm).capabilities.materializes_scores) {
      standard_bytes = two;
    }
    const Counters& t = b.engine.total;
    s += fmt::format("{:<10} {:>14} {:>10} {:>14} {:>12} {:>10.1f} {:>10} {:>8}\n",
                     a.request.algorithm, human_bytes(two),
                     standard_bytes > 0 ? fmt::format("{:.2f}x", standard_bytes / two) : "-",
                     human_bytes(static_cast<double>(t.hbm.read_total() + t.hbm.write_total())),
                     human_bytes(static_cast<double>(t.l2.read_total() + t.l2.write_total())),
                     static_cast<double>(t.flops()) / 1e9, human_seconds(b.engine.time_s), b.bound);
  }
  return s;
}

}  // namespace iosim
