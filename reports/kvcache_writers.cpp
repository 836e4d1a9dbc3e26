#include "reports/kvcache_writers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "api/schema_version.hpp"
#include "reports/writers.hpp"

namespace iosim {
namespace {

using kvcache::KvCacheResult;
using kvcache::StepTotals;
using nlohmann::json;

// A named number; the JSON and CSV writers share these lists so their columns cannot drift.
using Field = std::pair<const char*, double>;

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

// Means per step of a window's or run's sums.
std::vector<Field> means(const StepTotals& t) {
  const double n = t.steps;
  return {{"tokens_per_step", ratio(t.generated_tokens, n)},
          {"running_mean", ratio(t.running, n)},
          {"sequences_mean", ratio(t.sequences, n)},
          {"waiting_mean", ratio(t.waiting, n)},
          {"kv_utilization", ratio(t.token_bytes, t.reserved_bytes)},
          {"reserved_bytes_mean", ratio(t.reserved_bytes, n)},
          {"token_bytes_mean", ratio(t.token_bytes, n)},
          {"reserved_unused_bytes_mean", ratio(t.reserved_bytes - t.token_bytes, n)},
          {"future_token_bytes_mean", ratio(t.future_bytes, n)},
          {"internal_fragmentation_bytes_mean", ratio(t.internal_frag_bytes, n)},
          {"internal_fragmentation_fraction", ratio(t.internal_frag_bytes, t.reserved_bytes)},
          {"external_fragmentation_bytes_mean", ratio(t.external_frag_bytes, n)},
          {"external_fragmentation_fraction", ratio(t.external_frag_bytes, t.free_bytes)},
          {"free_bytes_mean", ratio(t.free_bytes, n)},
          {"saved_by_sharing_bytes_mean", ratio(t.saved_by_sharing_bytes, n)},
          {"saved_by_sharing_fraction",
           ratio(t.saved_by_sharing_bytes, t.reserved_bytes + t.saved_by_sharing_bytes)}};
}

std::vector<Field> overall_fields(const KvCacheResult& r) {
  const kvcache::KvCacheSummary& s = r.summary;
  std::vector<Field> f = {{"steps", static_cast<double>(s.steps)},
                          {"requests", static_cast<double>(s.requests)},
                          {"finished", static_cast<double>(s.finished)},
                          {"rejected", static_cast<double>(s.rejected)},
                          {"admissions", static_cast<double>(s.admissions)},
                          {"preemptions", static_cast<double>(s.preemptions)},
                          {"prefill_tokens", static_cast<double>(s.prefill_tokens)},
                          {"recomputed_tokens", static_cast<double>(s.recomputed_tokens)},
                          {"cow_copies", static_cast<double>(s.cow_copies)},
                          {"cow_copied_bytes", static_cast<double>(s.cow_copied_bytes)},
                          {"generated_tokens", static_cast<double>(s.generated_tokens)}};
  for (const Field& m : means(s.totals)) f.push_back(m);
  f.push_back({"running_max", s.max_running});
  f.push_back({"waiting_max", s.max_waiting});
  f.push_back({"reserved_bytes_max", s.max_reserved_bytes});
  f.push_back({"saved_by_sharing_bytes_max", s.max_saved_bytes});
  f.push_back({"queue_delay_steps_mean", s.queue_delay_steps_mean});
  f.push_back({"latency_steps_mean", s.latency_steps_mean});
  return f;
}

std::vector<Field> series_fields(const kvcache::SeriesPoint& p) {
  std::vector<Field> f = {{"start_step", static_cast<double>(p.start_step)},
                          {"steps", p.totals.steps}};
  for (const Field& m : means(p.totals)) f.push_back(m);
  f.push_back({"running_max", p.max_running});
  return f;
}

json number(double v) {
  // Counts stay integers in the JSON; means keep their fraction.
  if (v == static_cast<double>(static_cast<std::int64_t>(v)) && std::abs(v) < 9e15) {
    return static_cast<std::int64_t>(v);
  }
  return v;
}

json fields_json(const std::vector<Field>& fields) {
  json j = json::object();
  for (const auto& [name, v] : fields) j[name] = number(v);
  return j;
}

std::string csv_number(double v) {
  if (v == static_cast<double>(static_cast<std::int64_t>(v)) && std::abs(v) < 9e15) {
    return fmt::format("{}", static_cast<std::int64_t>(v));
  }
  return fmt::format("{:.6g}", v);
}

json policy_config_json(const KvCacheResult& r) {
  json j = {{"policy", std::string(kvcache::policy_name(r.config.policy))},
            {"capacity_bytes", r.capacity_bytes},
            {"capacity_tokens", r.capacity_tokens},
            {"max_running", r.config.max_running}};
  if (r.config.policy == kvcache::Policy::paged) {
    j["block_tokens"] = r.config.block_tokens;
    j["blocks"] = r.blocks;
    j["watermark"] = r.config.watermark;
  }
  return j;
}

std::string dist_line(const std::string& text, double mean, std::int64_t max) {
  return fmt::format("{} (mean {:.0f}, max {})", text, mean, max);
}

}  // namespace

json kvcache_to_json(const KvCacheRun& run) {
  const kvcache::ModelShape& m =
      run.results.empty() ? kvcache::ModelShape{} : run.results.front().config.model;
  json model = {{"layers", m.layers},
                {"kv_heads", m.kv_heads},
                {"head_dim", m.head_dim},
                {"dtype", run.dtype},
                {"bytes_per_token", m.bytes_per_token()}};
  if (m.latent_dim > 0) model["latent_dim"] = m.latent_dim;
  if (!run.model.empty()) model["name"] = run.model;
  json budget = {{"kv_budget_bytes", run.budget_bytes}};
  if (!run.profile.empty()) {
    budget["profile"] = run.profile;
    budget["hbm_bytes"] = run.hbm_bytes;
    budget["weights_bytes"] = run.weights_bytes;
  }
  const kvcache::StreamStats& st = run.stream;
  json stream = {{"origin", st.origin},
                 {"requests", st.requests},
                 {"samples", st.samples_per_request},
                 {"prompt_tokens_mean", st.prompt_tokens_mean},
                 {"prompt_tokens_max", st.prompt_tokens_max},
                 {"output_tokens_mean", st.output_tokens_mean},
                 {"output_tokens_max", st.output_tokens_max},
                 {"last_arrival_step", st.last_arrival_step},
                 {"clamped_requests", st.clamped_requests},
                 {"shared_prefix_tokens", run.spec.shared_prefix_tokens},
                 {"prompt_groups", run.spec.prompt_groups},
                 {"max_prompt_tokens", run.spec.max_prompt_tokens},
                 {"max_output_tokens", run.spec.max_output_tokens},
                 {"seed", run.spec.seed}};
  if (!run.from_trace) {
    stream["prompt_len"] = run.spec.prompt_len.text;
    stream["output_len"] = run.spec.output_len.text;
    stream["arrivals"] = run.spec.arrivals.text;
  }
  json policies = json::array();
  for (const KvCacheResult& r : run.results) {
    json p = policy_config_json(r);
    p["overall"] = fields_json(overall_fields(r));
    json series = json::array();
    for (const kvcache::SeriesPoint& pt : r.series)
      series.push_back(fields_json(series_fields(pt)));
    p["series"] = std::move(series);
    policies.push_back(std::move(p));
  }
  json doc = {{"schema_version", kSchemaVersion},
              {"model", model},
              {"budget", budget},
              {"stream", stream},
              {"policies", policies}};
  if (!run.notes.empty()) doc["notes"] = run.notes;
  return doc;
}

std::string kvcache_summary_csv(const KvCacheRun& run) {
  std::string out;
  for (std::size_t i = 0; i < run.results.size(); ++i) {
    const KvCacheResult& r = run.results[i];
    const std::vector<Field> f = overall_fields(r);
    if (i == 0) {
      out += "policy,block_tokens,capacity_bytes";
      for (const Field& x : f) out += fmt::format(",{}", x.first);
      out += "\n";
    }
    out += fmt::format("{},{},{}", kvcache::policy_name(r.config.policy),
                       r.config.policy == kvcache::Policy::paged ? r.config.block_tokens : 0,
                       r.capacity_bytes);
    for (const Field& x : f) out += fmt::format(",{}", csv_number(x.second));
    out += "\n";
  }
  return out;
}

std::string kvcache_series_csv(const KvCacheRun& run) {
  std::string out;
  bool header = false;
  for (const KvCacheResult& r : run.results) {
    for (const kvcache::SeriesPoint& pt : r.series) {
      const std::vector<Field> f = series_fields(pt);
      if (!header) {
        out += "policy";
        for (const Field& x : f) out += fmt::format(",{}", x.first);
        out += "\n";
        header = true;
      }
      out += std::string(kvcache::policy_name(r.config.policy));
      for (const Field& x : f) out += fmt::format(",{}", csv_number(x.second));
      out += "\n";
    }
  }
  return out;
}

std::string kvcache_table(const KvCacheRun& run, bool series) {
  std::string out;
  if (run.results.empty()) return out;
  const kvcache::ModelShape& m = run.results.front().config.model;
  if (!run.model.empty()) out += fmt::format("Model: {}\n", run.model);
  if (m.latent_dim > 0) {
    out += fmt::format(
        "KV cache per token: {} layers x {} latent row{} x {} head dim (V its first {}) x {} = {} "
        "B\n",
        m.layers, m.kv_heads, m.kv_heads == 1 ? "" : "s", m.head_dim, m.latent_dim, run.dtype,
        m.bytes_per_token());
  } else {
    out +=
        fmt::format("KV cache per token: 2 x {} layers x {} KV heads x {} head dim x {} = {} B\n",
                    m.layers, m.kv_heads, m.head_dim, run.dtype, m.bytes_per_token());
  }
  if (!run.profile.empty()) {
    out += fmt::format("Budget: {} HBM {} - weights {} = {}\n", run.profile,
                       human_bytes(static_cast<double>(run.hbm_bytes)),
                       human_bytes(static_cast<double>(run.weights_bytes)),
                       human_bytes(static_cast<double>(run.budget_bytes)));
  } else {
    out += fmt::format("Budget: {}\n", human_bytes(static_cast<double>(run.budget_bytes)));
  }
  const kvcache::StreamStats& st = run.stream;
  if (run.from_trace) {
    out += fmt::format(
        "Stream: {} requests from {}; prompt mean {:.0f} max {}; output mean {:.0f} "
        "max {}\n",
        st.requests, st.origin, st.prompt_tokens_mean, st.prompt_tokens_max, st.output_tokens_mean,
        st.output_tokens_max);
  } else {
    out += fmt::format(
        "Stream: {} requests, arrivals {}, seed {}\n  prompt {}\n  output {}\n", st.requests,
        run.spec.arrivals.text, run.spec.seed,
        dist_line(run.spec.prompt_len.text, st.prompt_tokens_mean, st.prompt_tokens_max),
        dist_line(run.spec.output_len.text, st.output_tokens_mean, st.output_tokens_max));
  }
  if (st.samples_per_request > 1 || run.spec.shared_prefix_tokens > 0) {
    out +=
        fmt::format("  {} samples per request; shared prefix {} tokens over {} prompt groups\n",
                    st.samples_per_request, run.spec.shared_prefix_tokens, run.spec.prompt_groups);
  }
  if (st.clamped_requests > 0) {
    out += fmt::format("  {} requests clamped to --max-prompt-tokens {} / --max-output-tokens {}\n",
                       st.clamped_requests, run.spec.max_prompt_tokens, run.spec.max_output_tokens);
  }
  for (const std::string& note : run.notes) out += fmt::format("Note: {}\n", note);
  out += "\n";

  std::vector<std::string> names;
  for (const KvCacheResult& r : run.results) {
    names.push_back(r.config.policy == kvcache::Policy::paged
                        ? fmt::format("paged ({} tok/block)", r.config.block_tokens)
                        : "contiguous");
  }
  const auto row = [&](const std::string& label, auto cell) {
    out += fmt::format("{:<40}", label);
    for (const KvCacheResult& r : run.results) out += fmt::format(" {:>22}", cell(r));
    out += "\n";
  };
  const auto pct = [](double x) { return fmt::format("{:.1f}%", 100.0 * x); };
  const auto bytes = [](double x) { return human_bytes(x); };
  const auto mean_of = [](const KvCacheResult& r, double sum_field) {
    return ratio(sum_field, r.summary.totals.steps);
  };
  out += fmt::format("{:<40}", "policy");
  for (const std::string& n : names) out += fmt::format(" {:>22}", n);
  out += "\n";
  row("capacity", [&](const KvCacheResult& r) {
    return fmt::format("{} ({} tok)", bytes(static_cast<double>(r.capacity_bytes)),
                       r.capacity_tokens);
  });
  row("KV utilization (tokens / reserved)",
      [&](const KvCacheResult& r) { return pct(r.summary.utilization()); });
  row("requests resident, mean / max", [&](const KvCacheResult& r) {
    return fmt::format("{:.1f} / {:.0f}", mean_of(r, r.summary.totals.running),
                       r.summary.max_running);
  });
  row("throughput (tokens / step)", [&](const KvCacheResult& r) {
    return fmt::format("{:.1f}", mean_of(r, r.summary.totals.generated_tokens));
  });
  row("steps to drain the stream",
      [&](const KvCacheResult& r) { return fmt::format("{}", r.summary.steps); });
  row("reserved, mean / max", [&](const KvCacheResult& r) {
    return fmt::format("{} / {}", bytes(mean_of(r, r.summary.totals.reserved_bytes)),
                       bytes(r.summary.max_reserved_bytes));
  });
  row("  holding tokens, mean",
      [&](const KvCacheResult& r) { return bytes(mean_of(r, r.summary.totals.token_bytes)); });
  row("  reserved for tokens to come, mean",
      [&](const KvCacheResult& r) { return bytes(mean_of(r, r.summary.totals.future_bytes)); });
  row("  internal fragmentation, mean", [&](const KvCacheResult& r) {
    return fmt::format(
        "{} ({})", bytes(mean_of(r, r.summary.totals.internal_frag_bytes)),
        pct(ratio(r.summary.totals.internal_frag_bytes, r.summary.totals.reserved_bytes)));
  });
  row("external fragmentation, mean (of free)", [&](const KvCacheResult& r) {
    return fmt::format(
        "{} ({})", bytes(mean_of(r, r.summary.totals.external_frag_bytes)),
        pct(ratio(r.summary.totals.external_frag_bytes, r.summary.totals.free_bytes)));
  });
  row("saved by sharing, mean / max", [&](const KvCacheResult& r) {
    return fmt::format("{} / {}", bytes(mean_of(r, r.summary.totals.saved_by_sharing_bytes)),
                       bytes(r.summary.max_saved_bytes));
  });
  row("waiting, mean / max", [&](const KvCacheResult& r) {
    return fmt::format("{:.1f} / {:.0f}", mean_of(r, r.summary.totals.waiting),
                       r.summary.max_waiting);
  });
  row("queue delay / latency, mean steps", [&](const KvCacheResult& r) {
    return fmt::format("{:.0f} / {:.0f}", r.summary.queue_delay_steps_mean,
                       r.summary.latency_steps_mean);
  });
  row("finished / rejected", [&](const KvCacheResult& r) {
    return fmt::format("{} / {}", r.summary.finished, r.summary.rejected);
  });
  row("preemptions (recomputed tokens)", [&](const KvCacheResult& r) {
    return fmt::format("{} ({})", r.summary.preemptions, r.summary.recomputed_tokens);
  });
  row("copy-on-write block copies",
      [&](const KvCacheResult& r) { return fmt::format("{}", r.summary.cow_copies); });

  if (series) {
    for (std::size_t i = 0; i < run.results.size(); ++i) {
      const KvCacheResult& r = run.results[i];
      out += fmt::format("\n{} over time (means per window)\n", names[i]);
      out += fmt::format("{:>10} {:>8} {:>9} {:>9} {:>8} {:>11} {:>11} {:>11} {:>10}\n", "step",
                         "steps", "running", "waiting", "util", "reserved", "int. frag",
                         "ext. frag", "tok/step");
      for (const kvcache::SeriesPoint& p : r.series) {
        const StepTotals& t = p.totals;
        out += fmt::format(
            "{:>10} {:>8} {:>9.1f} {:>9.1f} {:>8} {:>11} {:>11} {:>11} {:>10.1f}\n", p.start_step,
            t.steps, ratio(t.running, t.steps), ratio(t.waiting, t.steps),
            pct(ratio(t.token_bytes, t.reserved_bytes)), bytes(ratio(t.reserved_bytes, t.steps)),
            bytes(ratio(t.internal_frag_bytes, t.steps)),
            bytes(ratio(t.external_frag_bytes, t.steps)), ratio(t.generated_tokens, t.steps));
      }
    }
  }
  return out;
}

}  // namespace iosim
