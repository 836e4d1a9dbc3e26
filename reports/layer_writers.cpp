#include "reports/layer_writers.hpp"

#include <fmt/format.h>

#include "api/schema_version.hpp"
#include "sim/base/csv_field.hpp"

namespace iosim {
namespace {

// HBM writes with the lines an op leaves dirty in L2 counted: each op runs alone, so what it
// leaves dirty is written back before (or while) the next op runs.
std::uint64_t hbm_written(const Counters& c) {
  return c.hbm.write_total() + c.l2_dirty_at_end_bytes;
}

nlohmann::json op_json(const LayerOp& op) {
  const Counters& c = op.counters;
  nlohmann::json j = {{"name", op.name},
                      {"kind", op.kind},
                      {"detail", op.detail},
                      {"hbm_read_bytes", c.hbm.read_total()},
                      {"hbm_write_bytes", hbm_written(c)},
                      {"l2_read_bytes", c.l2.read_total()},
                      {"l2_write_bytes", c.l2.write_total()},
                      {"smem_read_bytes", c.smem_read_bytes},
                      {"tensor_flops", c.tensor_flops},
                      {"flops", c.flops()},
                      {"time_s", op.time_s},
                      {"sm_clock_mhz", op.sm_clock_mhz},
                      {"bound", op.bound},
                      {"share", op.share}};
  if (op.kind == "gemm") {
    j["m"] = op.m;
    j["n"] = op.n;
    j["k"] = op.k;
    if (op.batch > 1) j["batch"] = op.batch;
  } else if (op.kind != "attention") {
    j["rows"] = op.m;
    j["cols"] = op.n;
  }
  return j;
}

nlohmann::json totals_json(const Counters& c, double time_s) {
  return {{"hbm_read_bytes", c.hbm.read_total()},
          {"hbm_write_bytes", hbm_written(c)},
          {"l2_read_bytes", c.l2.read_total()},
          {"l2_write_bytes", c.l2.write_total()},
          {"flops", c.flops()},
          {"time_s", time_s}};
}

std::string mib(std::uint64_t bytes) {
  return fmt::format("{:.2f}", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::string gemm_shape(const LayerOp& op) {
  if (op.kind == "gemm" && op.batch > 1) {
    return fmt::format("{}x({}x{}x{})", op.batch, op.m, op.n, op.k);
  }
  if (op.kind == "gemm") return fmt::format("{}x{}x{}", op.m, op.n, op.k);
  if (op.kind == "attention") return op.detail;
  return fmt::format("{}x{}", op.m, op.n);
}

std::string table_row(const LayerOp& op) {
  const Counters& c = op.counters;
  return fmt::format(
      "{:<15} {:<10} {:>22} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9.2f} {:<8} {:>6.1f}%\n", op.name,
      op.kind, gemm_shape(op), mib(c.hbm.read_total()), mib(hbm_written(c)),
      mib(c.l2.read_total() + c.l2.write_total()),
      fmt::format("{:.3f}", static_cast<double>(c.flops()) / 1e9),
      fmt::format("{:.0f}", op.sm_clock_mhz), op.time_s * 1e6, op.bound, 100.0 * op.share);
}

}  // namespace

nlohmann::json layer_to_json(const LayerReport& rep) {
  const LayerRequest& r = rep.request;
  const ModelConfig& m = r.model;
  nlohmann::json j;
  j["schema_version"] = kSchemaVersion;
  j["profile"] = rep.profile;
  j["model"] = {{"name", m.name},
                {"hidden_size", m.hidden_size},
                {"attention_heads", m.attention_heads},
                {"kv_heads", m.kv_heads},
                {"head_dim", m.head_dim},
                {"intermediate_size", m.intermediate_size},
                {"mlp", mlp_kind_name(m.mlp)},
                {"layers", m.layers},
                {"vocab_size", m.vocab_size},
                {"norm", norm_kind_name(m.norm)},
                {"qkv_bias", m.qkv_bias},
                {"sliding_window", m.sliding_window}};
  j["request"] = {{"phase", layer_phase_name(r.phase)},
                  {"batch", r.batch},
                  {"seq", r.seq},
                  {"seq_kv", rep.seq_kv},
                  {"tokens", rep.tokens},
                  {"tp", r.tp},
                  {"dtype", r.dtype},
                  {"l2", r.l2_enabled ? "on" : "off"},
                  {"launch", layer_launch_name(r.launch)},
                  {"mlp_activation", r.fused_activation ? "fused" : "eager"}};
  if (!r.kv_dtype.empty()) j["request"]["kv_dtype"] = r.kv_dtype;  // --kv-dtype, when given
  // A mixed step: its lists (batch their count, seq and seq_kv their longest).
  if (r.phase == LayerPhase::mixed) {
    j["request"]["seq_lens"] = r.seq_lens;
    j["request"]["context_lens"] = r.context_lens;
  }
  j["layer"] = nlohmann::json::array();
  for (const LayerOp& op : rep.ops) j["layer"].push_back(op_json(op));
  j["step_tail"] = nlohmann::json::array();
  for (const LayerOp& op : rep.tail) j["step_tail"].push_back(op_json(op));
  j["layer_total"] = totals_json(rep.layer_total, rep.layer_time_s);
  j["step_total"] = totals_json(rep.step_total, rep.step_time_s);
  j["notes"] = rep.notes;
  return j;
}

std::string layer_table(const LayerReport& rep) {
  const LayerRequest& r = rep.request;
  const std::string types =
      r.kv_dtype.empty() || r.kv_dtype == r.dtype ? r.dtype : r.dtype + ", K/V cache " + r.kv_dtype;
  std::string out =
      r.phase == LayerPhase::mixed
          ? fmt::format("{} on {}: mixed step: {}; {} tokens, tp {}, {}\n\n", r.model.name,
                        rep.profile, mixed_step_text(r.seq_lens, r.context_lens), rep.tokens, r.tp,
                        types)
          : fmt::format(
                "{} on {}: {} layer, batch {}, {} tokens, attention over {} keys, tp {}, {}\n\n",
                r.model.name, rep.profile, layer_phase_name(r.phase), r.batch, rep.tokens,
                rep.seq_kv, r.tp, types);
  out += fmt::format("{:<15} {:<10} {:>22} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:<8} {:>7}\n",
                     "op", "kind", "M x N x K", "HBM rd MiB", "HBM wr MiB", "L2 MiB", "GFLOP",
                     "clock MHz", "time us", "bound", "share");
  for (const LayerOp& op : rep.ops) out += table_row(op);
  const Counters& l = rep.layer_total;
  out += fmt::format(
      "{:<15} {:<10} {:>22} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9.2f}\n", "layer", "", "",
      mib(l.hbm.read_total()), mib(hbm_written(l)), mib(l.l2.read_total() + l.l2.write_total()),
      fmt::format("{:.3f}", static_cast<double>(l.flops()) / 1e9), "", rep.layer_time_s * 1e6);
  out += "\nstep tail (share of the step):\n";
  for (const LayerOp& op : rep.tail) out += table_row(op);
  const Counters& s = rep.step_total;
  out += fmt::format(
      "\nstep: {} layers x {:.2f} us + tail = {:.2f} us; HBM {} MiB read, {} MiB "
      "written; {:.1f} GFLOP\n",
      r.model.layers, rep.layer_time_s * 1e6, rep.step_time_s * 1e6, mib(s.hbm.read_total()),
      mib(hbm_written(s)), static_cast<double>(s.flops()) / 1e9);
  for (const std::string& note : rep.notes) out += "note: " + note + "\n";
  return out;
}

std::string layer_csv(const LayerReport& rep) {
  std::string out =
      "scope,op,kind,detail,m,n,k,hbm_read_bytes,hbm_write_bytes,l2_read_bytes,l2_write_bytes,"
      "flops,time_s,sm_clock_mhz,bound,share\n";
  const auto rows = [&](const char* scope, const std::vector<LayerOp>& ops) {
    for (const LayerOp& op : ops) {
      const Counters& c = op.counters;
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{:.9g},{:.6g},{},{:.6g}\n", scope,
                         csv_field(op.name), op.kind, csv_field(op.detail), op.m, op.n, op.k,
                         c.hbm.read_total(), hbm_written(c), c.l2.read_total(), c.l2.write_total(),
                         c.flops(), op.time_s, op.sm_clock_mhz, op.bound, op.share);
    }
  };
  rows("layer", rep.ops);
  rows("step", rep.tail);
  return out;
}

std::uint64_t layer_hbm_written(const Counters& c) {
  return hbm_written(c);
}

std::string layer_sweep_table(const LayerSweepRun& run) {
  std::string out;
  for (std::size_t i = 0; i < run.reports.size(); ++i) {
    if (!run.axes.empty()) {
      if (i > 0) out += "\n";
      std::string at;
      for (std::size_t a = 0; a < run.axes.size(); ++a) {
        at += fmt::format("{}{} {}", a > 0 ? ", " : "", run.axes[a], run.values[i][a]);
      }
      out += fmt::format("== point {} of {}: {}\n", i + 1, run.reports.size(), at);
    }
    out += layer_table(run.reports[i]);
  }
  return out;
}

std::string layer_sweep_csv(const LayerSweepRun& run) {
  std::string prefix_header;
  for (const std::string& a : run.axes) prefix_header += a.substr(2) + ",";
  std::string out;
  for (std::size_t i = 0; i < run.reports.size(); ++i) {
    std::string prefix;
    for (std::int64_t v : run.values[i]) prefix += fmt::format("{},", v);
    const std::string rows = layer_csv(run.reports[i]);
    // layer_csv's lines, each after the point's values; its header once, first.
    std::size_t start = 0;
    for (std::size_t end = rows.find('\n'); end != std::string::npos;
         start = end + 1, end = rows.find('\n', start)) {
      if (start == 0) {
        if (i == 0) out += prefix_header + rows.substr(0, end + 1);
        continue;
      }
      out += prefix + rows.substr(start, end + 1 - start);
    }
  }
  return out;
}

}  // namespace iosim
