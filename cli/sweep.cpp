// `iosim sweep`: run's flags with lists and ranges; the cartesian product, on --jobs threads.
#include "sweep/sweep.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <utility>

#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "cli/run_flags.hpp"
#include "reports/sweep_file.hpp"
#include "sim/errors.hpp"

namespace iosim::cli {
namespace {

// Every swept flag as the user typed it; parsed once the command runs.
struct SweepFlags {
  std::string profile = "h100-sxm5-80gb", algo = "flash2", batch = "1", heads = "1", seq,
              seq_kv = "0", head_dim = "64", dtype = "fp16", block_q = "0", block_kv = "0",
              threads = "0", stages = "0", pass = "fwd", dropout = "0", l2 = "on",
              sm_clock_mhz = "0", pattern;
  // Decoding; left out (empty): run's default, and no axis in the sweep file.
  std::string kv_heads, splits, page_tokens, block_table;
  bool causal = false, mask = false, cold_l2 = false, execute = false;
  std::uint64_t seed = 1;
  int jobs = 0;
  std::string out, format = "json", shard = "1/1";
};

// The swept axes in point order (outermost first). Each knows how to set its value on RunFlags.
struct Axis {
  std::string flag;
  std::vector<std::string> text;  // values as recorded in the sweep file
  std::function<void(RunFlags&, std::size_t)> apply;
  bool recorded = true;  // false: a flag left out, one point with run's default, not in the file
};

// An optional flag of run: left out, one value that leaves RunFlags as it is (so that sweeps
// without it write the same file as before the flag existed).
Axis optional_axis(const std::string& flag, const std::string& text,
                   Axis (*make)(const std::string&, const std::string&)) {
  if (!text.empty()) return make(flag, text);
  return {flag, {""}, [](RunFlags&, std::size_t) {}, false};
}

// `Field`: std::int64_t, or std::optional<std::int64_t> for a flag whose absence means a default.
template <typename Field>
Axis int_axis(const std::string& flag, const std::string& text, Field RunFlags::*field) {
  const std::vector<std::int64_t> v = parse_int_values(flag, text);
  Axis a{flag, {}, [v, field](RunFlags& f, std::size_t i) { f.*field = v[i]; }};
  for (std::int64_t x : v) a.text.push_back(std::to_string(x));
  return a;
}

Axis small_int_axis(const std::string& flag, const std::string& text, int RunFlags::*field) {
  const std::vector<std::int64_t> v = parse_int_values(flag, text);
  for (std::int64_t x : v) {
    if (x < -(1 << 30) || x > (1 << 30))
      throw ConfigError(fmt::format("{} {} is out of range", flag, x));
  }
  Axis a{flag, {}, [v, field](RunFlags& f, std::size_t i) { f.*field = static_cast<int>(v[i]); }};
  for (std::int64_t x : v) a.text.push_back(std::to_string(x));
  return a;
}

// Decode flags that are counts (at least 1; to_request checks).
Axis count_axis(const std::string& flag, const std::string& text) {
  std::optional<std::int64_t> RunFlags::*field = flag == "--kv-heads" ? &RunFlags::kv_heads
                                                 : flag == "--splits" ? &RunFlags::splits
                                                                      : &RunFlags::page_tokens;
  return int_axis(flag, text, field);
}

Axis double_axis(const std::string& flag, const std::string& text, double RunFlags::*field) {
  const std::vector<double> v = parse_double_values(flag, text);
  Axis a{flag, {}, [v, field](RunFlags& f, std::size_t i) { f.*field = v[i]; }};
  for (double x : v) a.text.push_back(fmt::format("{}", x));
  return a;
}

Axis string_axis(const std::string& flag, const std::string& text, std::string RunFlags::*field) {
  const std::vector<std::string> v = parse_string_values(flag, text);
  return {flag, v, [v, field](RunFlags& f, std::size_t i) { f.*field = v[i]; }};
}

Axis block_table_axis(const std::string& flag, const std::string& text) {
  return string_axis(flag, text, &RunFlags::block_table);
}

// Block-sparse patterns; not given: one point without a pattern (dense attention).
Axis pattern_axis(const std::string& text) {
  const std::vector<std::string> v =
      text.empty() ? std::vector<std::string>{""} : parse_string_values("--pattern", text);
  return {"--pattern", v, [v](RunFlags& f, std::size_t i) { f.pattern = v[i]; }};
}

std::vector<Axis> make_axes(const SweepFlags& s) {
  return {string_axis("--profile", s.profile, &RunFlags::profile),
          string_axis("--algo", s.algo, &RunFlags::algorithm),
          string_axis("--dtype", s.dtype, &RunFlags::dtype),
          string_axis("--pass", s.pass, &RunFlags::pass),
          pattern_axis(s.pattern),
          string_axis("--l2", s.l2, &RunFlags::l2),
          double_axis("--sm-clock-mhz", s.sm_clock_mhz, &RunFlags::sm_clock_mhz),
          double_axis("--dropout", s.dropout, &RunFlags::dropout),
          int_axis("--batch", s.batch, &RunFlags::batch),
          int_axis("--heads", s.heads, &RunFlags::heads),
          optional_axis("--kv-heads", s.kv_heads, count_axis),
          int_axis("--head-dim", s.head_dim, &RunFlags::head_dim),
          int_axis("--seq", s.seq, &RunFlags::seq),
          int_axis("--seq-kv", s.seq_kv, &RunFlags::seq_kv),
          int_axis("--block-q", s.block_q, &RunFlags::block_q),
          int_axis("--block-kv", s.block_kv, &RunFlags::block_kv),
          optional_axis("--splits", s.splits, count_axis),
          optional_axis("--page-tokens", s.page_tokens, count_axis),
          optional_axis("--block-table", s.block_table, block_table_axis),
          small_int_axis("--threads", s.threads, &RunFlags::threads),
          small_int_axis("--stages", s.stages, &RunFlags::stages)};
}

// A progress bar with an ETA on stderr, redrawn at most ten times a second.
class ProgressBar {
 public:
  void operator()(const SweepProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (p.done < p.total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double fraction = p.total_work > 0 ? p.done_work / p.total_work : 1.0;
    const int width = 30;
    const int filled = static_cast<int>(fraction * width);
    std::string eta = "--";
    if (p.done > 0 && fraction > 0) eta = duration_text(elapsed * (1.0 - fraction) / fraction);
    fmt::print(stderr, "\r[{}{}] {}/{} points  {:3.0f}%  elapsed {}  ETA {}   ",
               std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(width - filled), '-'), p.done, p.total,
               fraction * 100, duration_text(elapsed), eta);
    if (p.done == p.total) fmt::print(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  static std::string duration_text(double s) {
    if (s < 60) return fmt::format("{:.0f}s", s);
    return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  }
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

int run_sweep_command(const SweepFlags& s) {
  const auto started = std::chrono::steady_clock::now();
  std::string format = s.format;
  if (!s.out.empty()) {
    format = extension_of(s.out);
    if (format != "json" && format != "csv") {
      throw ConfigError(fmt::format("--out '{}': the file name must end in .json or .csv", s.out));
    }
    check_output_folder("--out", s.out);
  } else if (format != "json" && format != "csv") {
    throw ConfigError(fmt::format("--format must be json or csv, not '{}'", format));
  }
  if (s.jobs < 0) throw ConfigError(fmt::format("--jobs {} must be positive", s.jobs));
  const Shard shard = parse_shard(s.shard);

  const std::vector<Axis> axes = make_axes(s);
  std::vector<std::size_t> sizes;
  for (const Axis& a : axes) sizes.push_back(a.text.size());
  const std::size_t total = combination_count(sizes);

  // Bad names fail before anything runs: every algorithm, then every profile (loaded once).
  for (const std::string& algo : axes[1].text) builtin_registry().get(algo);
  std::map<std::string, HardwareProfile> profiles;
  for (const std::string& name : axes[0].text) profiles.emplace(name, load_profile(name));

  RunFlags base;
  base.causal = s.causal;
  base.mask = s.mask;
  base.cold_l2 = s.cold_l2;
  base.execute = s.execute;
  base.seed = s.seed;
  std::vector<SweepPoint> points;
  std::size_t index = 0;
  for_each_combination(sizes, [&](const std::vector<std::size_t>& idx) {
    if (shard.holds(index)) {
      RunFlags f = base;
      for (std::size_t a = 0; a < axes.size(); ++a) axes[a].apply(f, idx[a]);
      points.push_back({index, f.profile, to_request(f)});
    }
    ++index;
  });

  SweepOptions options;
  options.jobs = s.jobs;
  if (::isatty(STDERR_FILENO) && !points.empty()) options.on_progress = ProgressBar();
  const std::vector<Report> reports = run_sweep(points, profiles, options);

  SweepDescription description;
  description.total_points = total;
  description.shard = shard;
  for (const Axis& a : axes) {
    if (a.recorded) description.axes.push_back({a.flag, a.text});
  }
  for (auto [flag, on] : {std::pair{"--causal", s.causal}, std::pair{"--mask", s.mask},
                          std::pair{"--cold-l2", s.cold_l2}, std::pair{"--execute", s.execute}}) {
    if (on) description.axes.push_back({flag, {"true"}});
  }
  description.axes.push_back({"--seed", {std::to_string(s.seed)}});

  const std::string text = format == "csv" ? sweep_csv(points, reports)
                                           : sweep_json(description, points, reports, profiles);
  if (s.out.empty()) {
    std::cout << text;
  } else {
    write_file_atomically(s.out, text);
  }
  std::size_t infeasible = 0;
  for (const Report& r : reports) infeasible += r.feasible() ? 0 : 1;
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print(
      stderr, "iosim sweep: {} points{} ({} infeasible) in {:.1f} s on {} threads{}\n",
      points.size(),
      shard.count > 1 ? fmt::format(" of {} (shard {}/{})", total, shard.index, shard.count) : "",
      infeasible, wall_s, resolve_jobs(s.jobs), s.out.empty() ? "" : " -> " + s.out);
  return 0;
}

}  // namespace

Action add_sweep_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "simulate the cartesian product of run's flags; each takes a list (32,64,128) or a range "
      "(512:65536:x2, 64:256:+64)");
  auto s = std::make_shared<SweepFlags>();
  cmd->add_option("--profile", s->profile, "profile names or YAML paths")->capture_default_str();
  cmd->add_option("--algo", s->algo, "standard,flash1,flash2,block-sparse,flash-decoding,paged")
      ->capture_default_str();
  cmd->add_option("--batch", s->batch, "batch sizes B")->capture_default_str();
  cmd->add_option("--heads", s->heads, "attention heads H")->capture_default_str();
  cmd->add_option("--seq", s->seq, "query lengths N")->required();
  cmd->add_option("--seq-kv", s->seq_kv, "key/value lengths (0: --seq)")->capture_default_str();
  cmd->add_option("--head-dim", s->head_dim, "head dimensions d")->capture_default_str();
  cmd->add_option("--dtype", s->dtype, "fp16,bf16,fp32")->capture_default_str();
  cmd->add_option("--block-q", s->block_q, "query rows per tile Br (0: the algorithm's)")
      ->capture_default_str();
  cmd->add_option("--block-kv", s->block_kv, "key/value rows per tile Bc (0: the algorithm's)")
      ->capture_default_str();
  cmd->add_option("--threads", s->threads, "threads per CTA (0: the algorithm's)");
  cmd->add_option("--stages", s->stages, "copy pipeline stages (0: the algorithm's)");
  cmd->add_option("--pass", s->pass, "fwd,bwd,fwdbwd")->capture_default_str();
  cmd->add_option("--pattern", s->pattern,
                  "block-sparse patterns, e.g. local:256,strided:4 (default: all blocks)");
  cmd->add_flag("--causal", s->causal, "causal mask in every point");
  cmd->add_flag("--mask", s->mask, "an elementwise index mask in every point");
  cmd->add_option("--dropout", s->dropout, "dropout probabilities")->capture_default_str();
  cmd->add_option("--l2", s->l2, "on,off")->capture_default_str();
  cmd->add_flag("--cold-l2", s->cold_l2, "flush the L2 before every kernel");
  cmd->add_option("--sm-clock-mhz", s->sm_clock_mhz, "SM clocks (0: boost)");
  cmd->add_flag("--execute", s->execute, "run every point numerically (small problems only)");
  cmd->add_option("--seed", s->seed, "seed of the random inputs and dropout")
      ->capture_default_str();
  cmd->add_option("--kv-heads", s->kv_heads,
                  "K/V heads H_kv, each dividing --heads (default: --heads)");
  cmd->add_option("--splits", s->splits,
                  "flash-decoding, paged: K/V chunks per query tile (default: the heuristic)");
  cmd->add_option("--page-tokens", s->page_tokens, "paged: tokens per K/V page (default: 16)");
  cmd->add_option("--block-table", s->block_table,
                  "paged: block-table files, one line per sequence (default: random from --seed)");
  cmd->add_option("--jobs,-j", s->jobs, "threads (default: all cores)");
  cmd->add_option("--out,-o", s->out, "output file; .json or .csv (default: JSON on stdout)");
  cmd->add_option("--format", s->format, "json | csv, for stdout")->capture_default_str();
  cmd->add_option("--shard", s->shard, "run part K of N (points i with i % N == K-1)")
      ->capture_default_str();
  return [s] { return run_sweep_command(*s); };
}

}  // namespace iosim::cli
