#include "api/run_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "sim/base/errors.hpp"
#include "sim/base/yaml_reader.hpp"
#include "sim/schedule/block_mask.hpp"
#include "sim/schedule/block_table.hpp"

namespace iosim {

namespace {

// What --stages counts, per algorithm, from their capabilities.
std::string stages_help() {
  std::map<StagesCount, std::vector<std::string>> by_meaning;
  for (const std::string& n : builtin_registry().names()) {
    by_meaning[builtin_registry().get(n).capabilities.forward_stages].push_back(n);
  }
  std::string help = "copy pipeline stages of the main kernel";
  const char* sep = ": ";
  for (const auto& [meaning, names] : by_meaning) {
    const char* what = meaning == StagesCount::kv_buffer_pairs ? "K/V buffer pairs"
                       : meaning == StagesCount::q_o_stages    ? "Q/O tiles in flight"
                                                               : "GEMM operand stages";
    help += fmt::format("{}{} ({})", sep, what, fmt::join(names, ", "));
    sep = "; ";
  }
  return help;
}

std::vector<ProblemFlag> make_problem_flags() {
  const std::string algos = fmt::format("{}", fmt::join(builtin_registry().names(), " | "));
  return {
      {"--profile", "built-in profile name or path to a YAML profile", &RunFlags::profile},
      {"--algo", algos, &RunFlags::algorithm},
      {"--kernel",
       "a kernel description (YAML: dataflow, tiles, mechanisms, launch facts; docs/kernels.md) "
       "or a preset's name (iosim kernels), run in place of --algo",
       &RunFlags::kernel, false, true},
      {"--dtype", "fp16 | bf16 | fp32 | fp8 (e4m3, --algo flash3 forward)", &RunFlags::dtype},
      {"--kv-dtype",
       "the type K and V are stored in: fp8 (an e4m3 K/V cache, converted on chip to --dtype fp16 "
       "or bf16; flash-decoding, paged) | --dtype's (the default)",
       &RunFlags::kv_dtype, false, true},
      {"--pass", "fwd | bwd | fwdbwd", &RunFlags::pass},
      {"--pattern",
       "block-sparse blocks: local:W | strided:S | random:DENSITY:SEED | causal | file:PATH "
       "(default: all)",
       &RunFlags::pattern},
      {"--l2", "on: three-level model; off: two-level HBM<->SRAM model", &RunFlags::l2},
      {"--sm-clock-mhz", "SM clock (0: the profile's boost clock)", &RunFlags::sm_clock_mhz},
      {"--dropout", "dropout probability in [0, 1)", &RunFlags::dropout},
      {"--batch", "batch size B", &RunFlags::batch},
      {"--heads", "attention heads H", &RunFlags::heads},
      {"--kv-heads", "K/V heads H_kv, dividing --heads: grouped-query attention (default: --heads)",
       &RunFlags::kv_heads, false, true},
      {"--head-dim", "head dimension d", &RunFlags::head_dim},
      {"--latent-dim",
       "multi-head latent attention (DeepSeek-V2/V3's absorbed decode, FlashMLA): K is a latent "
       "cache of --head-dim columns a token (latent + RoPE: 512 + 64 = 576), V its first "
       "--latent-dim columns, O as wide; its query heads share one latent, so --kv-heads "
       "defaults to 1 (flash-decoding, paged; default: none)",
       &RunFlags::latent_dim, false, true},
      {"--seq", "query length N", &RunFlags::seq, true},
      {"--seq-kv", "key/value length (0: --seq)", &RunFlags::seq_kv},
      {"--seq-lens",
       "a ragged (varlen) batch: query tokens per sequence, e.g. 512,1024,3000 (--batch is their "
       "count, --seq if given their sum); forward, flash2, flash3 and query_stationary kernels",
       &RunFlags::seq_lens, false, true},
      {"--seq-kv-lens", "a ragged batch: keys per sequence (default: --seq-lens)",
       &RunFlags::seq_kv_lens, false, true},
      {"--block-q", "query rows per tile Br (0: the algorithm's)", &RunFlags::block_q},
      {"--block-kv", "key/value rows per tile Bc (0: the algorithm's)", &RunFlags::block_kv},
      {"--splits",
       "flash-decoding, paged: K/V chunks per query tile (0, the default: FlashAttention's "
       "heuristic, filling the SMs)",
       &RunFlags::splits, false, true},
      {"--page-tokens", "paged: tokens per K/V page (default: 16)", &RunFlags::page_tokens, false,
       true},
      {"--block-table",
       "paged: file of physical page ids, one line per sequence (default: a random permutation "
       "from --seed)",
       &RunFlags::block_table, false, true},
      {"--threads", "threads per CTA of the main kernel (0: the algorithm's)", &RunFlags::threads},
      {"--stages", stages_help(), &RunFlags::stages},
      {"--warpgroups",
       "flash3: pingpong (consumer warpgroups take turns on the tensor cores, one's softmax under "
       "another's GEMMs) | cooperative (their pipes overlap as warps per scheduler allow) "
       "(default: FlashAttention-3's choice)",
       &RunFlags::warpgroups, false, true},
      {"--pack-gqa",
       "grouped-query attention, forward: on packs a K/V head's query heads as the rows of one "
       "query tile at any --seq (as FlashAttention-3's PackGQA and our decode kernel) | off | auto "
       "(the default: at --seq 1 only, as FlashAttention-2)",
       &RunFlags::pack_gqa, false, true},
      {"--backward-block-q",
       "flash3 --pass fwdbwd: query rows per tile of the backward, whose --block-q tiles the "
       "forward (default: FlashAttention-3's backward tiles)",
       &RunFlags::backward_block_q, false, true},
      {"--backward-block-kv", "flash3 --pass fwdbwd: key/value rows per tile of the backward",
       &RunFlags::backward_block_kv, false, true},
      {"--window",
       "sliding window of W keys: with --causal query i sees keys i-W < j <= i (Mistral's), "
       "without it |j - i| < W (bottom-right aligned); K/V blocks outside it skipped, its edge "
       "blocks masked (flash2, flash3; default: none)",
       &RunFlags::window, false, true},
      {"--causal", "causal mask (bottom-right aligned), masked blocks skipped", &RunFlags::causal},
      {"--mask", "an elementwise mask computed from indices", &RunFlags::mask},
      {"--cold-l2", "flush the L2 before every kernel, as Nsight Compute does", &RunFlags::cold_l2},
      {"--execute", "run the schedule numerically and report the max error", &RunFlags::execute},
      {"--seed", "seed of the random inputs, dropout and the paged block table", &RunFlags::seed},
      {"--exact",
       "simulate every CTA and step, and every trial of the power model's clock solve (default: "
       "in runs estimated to take over ~1 s, repetitions of a steady state are extrapolated, and "
       "the solve's trials replay one run's timeline at their clocks)",
       &RunFlags::exact, false, true},
  };
}

}  // namespace

const std::vector<ProblemFlag>& problem_flags() {
  static const std::vector<ProblemFlag> flags = make_problem_flags();
  return flags;
}

std::optional<std::pair<std::int64_t, std::int64_t>> problem_flag_range(const std::string& flag) {
  // validate_problem()'s sizes and to_request()'s tiling (tests/cli_test.sh, section contract).
  constexpr std::int64_t kInt = std::numeric_limits<int>::max();
  constexpr std::int64_t kInt64 = std::numeric_limits<std::int64_t>::max();
  static const std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges = {
      {"--batch", {1, kMaxBatch}},
      {"--heads", {1, kMaxHeads}},
      {"--seq", {1, kMaxSeq}},
      {"--seq-kv", {0, kMaxSeq}},
      {"--head-dim", {1, kMaxHeadDim}},
      {"--block-q", {0, 1 << 20}},
      {"--block-kv", {0, 1 << 20}},
      {"--threads", {0, 1024}},
      {"--kv-heads", {1, kMaxHeads}},
      {"--page-tokens", {1, 1 << 20}},
      {"--window", {1, kMaxSeq}},
      {"--latent-dim", {1, kMaxHeadDim}},
      {"--backward-block-q", {1, 1 << 20}},
      {"--backward-block-kv", {1, 1 << 20}},
      {"--stages", {0, kInt}},
      {"--splits", {0, kInt64}}};
  const auto it = ranges.find(flag);
  return it == ranges.end() ? std::nullopt : std::optional(it->second);
}

// "512,1024,3000" as lengths; each must be a decimal integer (its range is validate_problem()'s).
std::shared_ptr<const std::vector<std::int64_t>> parse_lengths(const std::string& flag,
                                                               const std::string& text) {
  auto out = std::make_shared<std::vector<std::int64_t>>();
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    std::size_t used = 0;
    std::int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size()) {
      throw ConfigError(fmt::format(
          "{} '{}': '{}' is not a length; give one integer per sequence, e.g. 512,1024,3000", flag,
          text, item));
    }
    if (v < 1 || v > kMaxSeq) {
      throw ConfigError(
          fmt::format("{}: length {} is out of range: it must be in [1, {}]", flag, v, kMaxSeq));
    }
    out->push_back(v);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

namespace {

// --seq-lens and --seq-kv-lens into the problem: batch their count, seq and seq_kv their largest
// (the padded layout, AttentionProblem::seq_lens). --batch and --seq, when given, must agree.
void set_ragged(const RunFlags& f, AttentionProblem& p) {
  if (f.seq_lens.empty()) {
    if (!f.seq_kv_lens.empty()) throw ConfigError("--seq-kv-lens needs --seq-lens");
    return;
  }
  p.seq_lens = parse_lengths("--seq-lens", f.seq_lens);
  p.seq_kv_lens =
      f.seq_kv_lens.empty() ? p.seq_lens : parse_lengths("--seq-kv-lens", f.seq_kv_lens);
  const std::vector<std::int64_t>& q = *p.seq_lens;
  const std::vector<std::int64_t>& kv = *p.seq_kv_lens;
  if (kv.size() != q.size()) {
    throw ConfigError(
        fmt::format("--seq-kv-lens gives {} lengths and --seq-lens {}: one key length per sequence",
                    kv.size(), q.size()));
  }
  const auto count = static_cast<std::int64_t>(q.size());
  if (f.batch != 1 && f.batch != count) {
    throw ConfigError(fmt::format(
        "--batch {} with --seq-lens of {} sequences: the batch is their count (leave --batch out)",
        f.batch, count));
  }
  std::int64_t total = 0;
  for (const std::int64_t v : q) total += v;
  if (f.seq != 0 && f.seq != total) {
    throw ConfigError(fmt::format(
        "--seq {} with --seq-lens: --seq is then the packed total of the query tokens, {} (leave "
        "it out)",
        f.seq, total));
  }
  if (f.seq_kv != 0) {
    throw ConfigError("--seq-kv with --seq-lens: give each sequence's keys with --seq-kv-lens");
  }
  p.batch = count;
  p.seq = *std::max_element(q.begin(), q.end());
  p.seq_kv = *std::max_element(kv.begin(), kv.end());
}

}  // namespace

void check_latent_dim_flag(std::int64_t latent_dim) {
  if (latent_dim >= 1) return;
  throw ConfigError(fmt::format(
      "--latent-dim {} must be at least 1 (V's columns of the latent cache); leave it out for "
      "separate K and V",
      latent_dim));
}

RunRequest to_request(const RunFlags& f) {
  RunRequest r;
  r.algorithm = f.algorithm;
  if (!f.kernel.empty()) {
    r.kernel = kernel_flag_description(f.kernel);
    r.algorithm = r.kernel->name;
  }
  AttentionProblem& p = r.problem;
  p.batch = f.batch;
  p.heads = f.heads;
  p.seq = f.seq;
  p.seq_kv = f.seq_kv;  // 0: the problem's default, --seq
  if (f.seq_kv < 0) throw ConfigError(fmt::format("--seq-kv {} must be positive", f.seq_kv));
  p.head_dim = f.head_dim;
  p.dtype = parse_dtype(f.dtype);
  if (!f.kv_dtype.empty()) p.kv_dtype = parse_kv_dtype(f.kv_dtype);
  p.causal = f.causal;
  p.mask = f.mask;
  p.dropout = f.dropout;
  p.pass = parse_pass(f.pass);
  if (!f.pattern.empty()) {
    p.pattern = std::make_shared<const BlockPattern>(parse_block_pattern(f.pattern));
  }
  for (auto [name, v] : {std::pair{"--block-q", f.block_q}, std::pair{"--block-kv", f.block_kv},
                         std::pair{"--threads", std::int64_t{f.threads}},
                         std::pair{"--stages", std::int64_t{f.stages}}}) {
    if (v < 0) throw ConfigError(fmt::format("{} {} must be positive", name, v));
  }
  // Named by its flag (issue #50's probe: "block sizes 9223372036854775807 x 0 are absurd"
  // named none).
  for (auto [name, v] : {std::pair{"--block-q", f.block_q}, std::pair{"--block-kv", f.block_kv}}) {
    if (v > (1 << 20)) {
      throw ConfigError(fmt::format(
          "{} {} is out of range: it must be in [0, 1048576] (0: the algorithm's)", name, v));
    }
  }
  if (f.threads > 1024) throw ConfigError(fmt::format("--threads {} exceeds 1024", f.threads));
  const auto given = [](auto v) { return v > 0 ? std::optional(v) : std::nullopt; };
  r.tiling.block_q = given(f.block_q);
  r.tiling.block_kv = given(f.block_kv);
  r.tiling.threads = given(f.threads);
  r.tiling.pipeline_stages = given(f.stages);
  for (auto [name, v] :
       {std::pair{"--kv-heads", f.kv_heads}, std::pair{"--page-tokens", f.page_tokens}}) {
    if (v && *v < 1) throw ConfigError(fmt::format("{} {} must be at least 1", name, *v));
  }
  if (f.splits && *f.splits < 0) {
    throw ConfigError(fmt::format("--splits {} must be 0 (the heuristic) or more", *f.splits));
  }
  if (f.latent_dim) {
    check_latent_dim_flag(*f.latent_dim);
    p.latent_dim = *f.latent_dim;
  }
  // Left out, kv_head_count() picks the default (one latent for --latent-dim, else --heads).
  if (f.kv_heads) p.kv_heads = *f.kv_heads;
  // The problem's 0 is "no window"; a window of no key is a mistake, not a way to say none.
  if (f.window && *f.window < 1) {
    throw ConfigError(fmt::format(
        "--window {} must be at least 1 (the keys a query sees); leave it out for no window",
        *f.window));
  }
  if (f.window) p.window = *f.window;
  set_ragged(f, p);
  // 0 asks for the default, FlashAttention's heuristic, as --block-kv 0 asks for the default
  // tiles: so a sweep can put the heuristic beside fixed split counts (--splits 0,2,8).
  r.tiling.splits = f.splits && *f.splits > 0 ? f.splits : std::nullopt;
  for (auto [name, v] : {std::pair{"--backward-block-q", f.backward_block_q},
                         std::pair{"--backward-block-kv", f.backward_block_kv}}) {
    if (v && (*v < 1 || *v > (1 << 20))) {
      throw ConfigError(fmt::format("{} {} must be in [1, 1048576]", name, *v));
    }
  }
  r.tiling.backward_block_q = f.backward_block_q;
  r.tiling.backward_block_kv = f.backward_block_kv;
  if (!f.warpgroups.empty()) {
    r.tiling.warpgroups = warpgroup_arrangement(f.warpgroups);
    if (!r.tiling.warpgroups) {
      throw ConfigError(
          fmt::format("--warpgroups must be 'pingpong' or 'cooperative', not '{}'", f.warpgroups));
    }
  }
  if (f.pack_gqa == "on") {
    p.pack_gqa = GqaPacking::on;
  } else if (f.pack_gqa == "off") {
    p.pack_gqa = GqaPacking::off;
  } else if (!f.pack_gqa.empty() && f.pack_gqa != "auto") {
    throw ConfigError(
        fmt::format("--pack-gqa must be 'auto', 'on' or 'off', not '{}'", f.pack_gqa));
  }
  if (f.page_tokens) p.page_tokens = *f.page_tokens;
  if (!f.block_table.empty()) {
    p.block_table = std::make_shared<const BlockTable>(load_block_table(f.block_table));
  }
  if (f.l2 != "on" && f.l2 != "off") {
    throw ConfigError(fmt::format("--l2 must be 'on' or 'off', not '{}'", f.l2));
  }
  r.engine.l2_enabled = f.l2 == "on";
  r.engine.flush_l2_between_kernels = f.cold_l2;
  r.engine.exact = f.exact;
  r.engine.sm_clock_mhz = f.sm_clock_mhz;
  r.execute = f.execute;
  r.seed = f.seed;
  check_request_values(r);
  return r;
}

std::shared_ptr<const KernelDescription> kernel_flag_description(const std::string& text) {
  // A description inline ("{...}": YAML's flow map, JSON, what the Python package passes for a
  // dict), a file, or else the name of a built-in preset.
  std::error_code ec;
  if (text.front() == '{') {
    return std::make_shared<const KernelDescription>(parse_kernel_description(
        read_yaml_json(text, "--kernel", "kernel description"), "the kernel given inline"));
  }
  if (std::filesystem::exists(text, ec) || text.find('/') != std::string::npos ||
      text.find('.') != std::string::npos) {
    return std::make_shared<const KernelDescription>(load_kernel_description(text));
  }
  return std::make_shared<const KernelDescription>(kernel_preset(text));
}

Dtype parse_kv_dtype(const std::string& text) {
  try {
    return parse_dtype(text);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("--kv-dtype: {}", e.what()));
  }
}

void check_request_values(const RunRequest& r) {
  // 0 means the profile's clock; anything else is a clock a GPU can run at (NaN fails too).
  const double clock = r.engine.sm_clock_mhz;
  if (!(clock == 0 || (clock >= 1 && clock <= 1e4))) {
    throw ConfigError(fmt::format(
        "--sm-clock-mhz {} is out of range: it must be 0 (the profile's clock) or in [1, 10000]",
        clock));
  }
  // Each value's own range, before any run: a sweep makes every point's request first, so a
  // list with one value out of range is refused whole, as the value alone is (it was a row).
  check_problem_values(r.problem);
}

}  // namespace iosim
