#include "api/layer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "api/run_flags.hpp"
#include "api/simulate.hpp"
#include "sim/base/errors.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/power_model.hpp"
#include "transformer/elementwise_schedule.hpp"

namespace iosim {
namespace {

struct OpRun {
  EngineResult engine;
  double clock_mhz = 0.0;
};

// One op on the engine, at the clock simulate() times an attention call at
// (run_at_policy_clock): the request's; else, on a profile with a power limit, the clock the power
// model allows for this op (a GEMM draws more power than a norm); else the boost clock.
OpRun run_op(const HardwareProfile& hw, const Schedule& schedule, Dtype dtype,
             const LayerRequest& r) {
  EngineOptions engine;
  engine.l2_enabled = r.l2_enabled;
  engine.sm_clock_mhz = r.sm_clock_mhz;
  engine.exact = r.exact;
  // The one difference left from simulate(): every trial of the power model's clock is an engine
  // run, as since the layer was written (its copy of the policy left out the replays of issue
  // #33). Replaying, as an attention call does, changes the power-solved GEMMs' HBM bytes (the
  // boost-clock run's counters, up to 0.8%) and an op's clock where the replay moves the solve;
  // whether the layer should is issue #48's to decide.
  engine.replay_clock_trials = false;
  ClockedRun run = run_at_policy_clock(hw, schedule, engine, dtype);
  return {std::move(run.engine), run.clock_mhz};
}

LayerOp from_run(std::string name, std::string kind, const OpRun& run) {
  LayerOp op;
  op.name = std::move(name);
  op.kind = std::move(kind);
  op.counters = run.engine.total;
  op.time_s = run.engine.time_s;
  op.sm_clock_mhz = run.clock_mhz;
  // One kernel each: its bound is the op's.
  op.bound = run.engine.kernels.empty() ? "latency" : run.engine.kernels.front().bound;
  return op;
}

// The cluster in a GEMM's detail: "cluster 2 (W multicast)" as before where only W is shared,
// "cluster 2x4 (W, X multicast)" where both are.
std::string cluster_detail(const GemmTiling& t) {
  if (t.cluster_m <= 1 && t.cluster_n <= 1) return "";
  if (t.cluster_n <= 1) return fmt::format(" cluster {} (W multicast)", t.cluster_m);
  if (t.cluster_m <= 1) return fmt::format(" cluster 1x{} (X multicast)", t.cluster_n);
  return fmt::format(" cluster {}x{} (W, X multicast)", t.cluster_m, t.cluster_n);
}

LayerOp gemm_op(const HardwareProfile& hw, const LayerRequest& r, Dtype dtype, std::string name,
                std::int64_t m, std::int64_t n, std::int64_t k, bool bias) {
  GemmProblem p;
  p.name = name;
  p.m = m;
  p.n = n;
  p.k = k;
  p.dtype = dtype;
  p.bias = bias;
  const GemmTiling t = resolve_gemm_tiling(hw, p, r.gemm_tiling);
  LayerOp op = from_run(std::move(name), "gemm", run_op(hw, *make_gemm_schedule(p, t), dtype, r));
  op.m = m;
  op.n = n;
  op.k = k;
  op.detail = fmt::format("{}x{}x{} {}{}", t.bm, t.bn, t.bk,
                          t.instruction == TensorInstruction::wgmma ? "wgmma" : "mma.sync",
                          t.group_m > 0 ? fmt::format(" group {}", t.group_m) : "") +
              cluster_detail(t) + (t.split_k > 1 ? fmt::format(" split-K {}", t.split_k) : "");
  return op;
}

LayerOp elementwise_op(const HardwareProfile& hw, const LayerRequest& r, Dtype dtype,
                       std::string name, ElementwiseKind kind, std::int64_t rows, std::int64_t cols,
                       ElementwiseLoop loop = ElementwiseLoop::chunks) {
  ElementwiseProblem p;
  p.name = name;
  p.kind = kind;
  p.rows = rows;
  p.cols = cols;
  p.dtype = dtype;
  p.loop = loop;
  const char* k = kind == ElementwiseKind::rms_norm || kind == ElementwiseKind::layer_norm ? "norm"
                  : kind == ElementwiseKind::residual_add ? "residual"
                                                          : "activation";
  LayerOp op = from_run(std::move(name), k, run_op(hw, *make_elementwise_schedule(p), dtype, r));
  op.m = rows;
  op.n = cols;
  return op;
}

std::int64_t divided(std::int64_t value, std::int64_t tp, const char* what) {
  if (value % tp != 0) {
    throw ConfigError(fmt::format("--tp {} does not divide the model's {} ({})", tp, what, value));
  }
  return value / tp;
}

// Adds an op's counters to a total. Counters' += keeps the later run's dirty-at-end bytes (a state
// of one L2), but every op here runs on an L2 of its own, so what each leaves dirty is written
// back in the end: those bytes add up.
void add_op(Counters& total, const Counters& op) {
  const std::uint64_t dirty = total.l2_dirty_at_end_bytes + op.l2_dirty_at_end_bytes;
  PerTensor by_tensor = total.l2_dirty_at_end;
  for (std::size_t i = 0; i < kTensorCount; ++i) by_tensor[i] += op.l2_dirty_at_end[i];
  total += op;
  total.l2_dirty_at_end_bytes = dirty;
  total.l2_dirty_at_end = by_tensor;
}

void check_positive(const char* flag, std::int64_t v) {
  if (v <= 0) throw ConfigError(fmt::format("{} must be positive, got {}", flag, v));
}

// The tensor cores' K step for 16-bit types: mma.sync's m16n8k16 and wgmma's k16.
constexpr std::int64_t kMmaK = 16;
// The widest tile side: wgmma's largest N, and cuBLAS's and CUTLASS's largest tiles.
constexpr std::int64_t kMaxTileSide = 256;

// The GEMM flags against what the GPU can run, before any op is simulated, naming the flag and
// the values it may take (a K chunk whose stages overflow shared memory once crashed the tile
// choice).
void check_gemm_flags(const HardwareProfile& hw, Dtype dtype, const GemmTilingRequest& g) {
  const bool hopper = hw.compute.wgmma_latency_cycles.value > 0;
  // Tiles whole instructions make: wgmma is 64 rows (M) by a multiple of 8 columns (N), and
  // cuBLAS runs a tile with fewer rows as its transpose (the choice's 8-32 x 64k tiles), so one
  // side is a multiple of 64 and both of 8; mma.sync is m16n8. (--gemm-bm 3 built 3 x 3 tiles.)
  const std::int64_t bm = g.bm > 0 ? g.bm : GemmTiling{}.bm, bn = g.bn > 0 ? g.bn : GemmTiling{}.bn;
  for (const auto& [flag, v, step] :
       {std::tuple{"--gemm-bm", g.bm, hopper ? 8 : 16}, std::tuple{"--gemm-bn", g.bn, 8}}) {
    if (v != 0 && (v < step || v > kMaxTileSide || v % step != 0)) {
      throw ConfigError(fmt::format(
          "{} {} must be a multiple of {} from {} to {} on {} ({})", flag, v, step, step,
          kMaxTileSide, hw.name,
          hopper ? "wgmma: 64 x 8k tiles, or their transpose" : "mma.sync: m16n8 tiles"));
    }
  }
  if (hopper && (g.bm != 0 || g.bn != 0) && bm % 64 != 0 && bn % 64 != 0) {
    throw ConfigError(
        fmt::format("--gemm-bm {} --gemm-bn {}: on {} one side of a tile must be a multiple of 64 "
                    "(wgmma's M, or its transpose's)",
                    bm, bn, hw.name));
  }
  // Named by their flags ("GEMM split-K must be 0 (the default) or positive, got -1", from the
  // tiling, named none; issue #50's probe).
  for (const auto& [flag, v] : {std::pair{"--gemm-group-m", std::int64_t{g.group_m}},
                                std::pair{"--gemm-split-k", std::int64_t{g.split_k}}}) {
    if (v < 0) {
      throw ConfigError(fmt::format("{} {} must be 0 (the default) or positive", flag, v));
    }
  }
  // Clusters: Hopper's, of at most kMaxClusterCtas CTAs (0: the default).
  for (const auto& [flag, v] :
       {std::pair{"--gemm-cluster-m", g.cluster_m}, std::pair{"--gemm-cluster-n", g.cluster_n}}) {
    if (v == 0) continue;
    if (!hopper && v != 1) {
      throw ConfigError(fmt::format(
          "{} {}: {} has no thread-block clusters (TMA multicast is a Hopper feature); give 1 "
          "or leave it out",
          flag, v, hw.name));
    }
    if (v < 1 || v > kMaxClusterCtas) {
      throw ConfigError(
          fmt::format("{} {} must be in [1, {}]: a thread-block cluster holds at "
                      "most {} CTAs (CUDA's portable size)",
                      flag, v, kMaxClusterCtas, kMaxClusterCtas));
    }
  }
  if (static_cast<std::int64_t>(std::max(1, g.cluster_m)) * std::max(1, g.cluster_n) >
      kMaxClusterCtas) {
    throw ConfigError(fmt::format(
        "--gemm-cluster-m {} x --gemm-cluster-n {} is {} CTAs: a thread-block cluster holds at "
        "most {} (CUDA's portable size)",
        g.cluster_m, g.cluster_n, g.cluster_m * g.cluster_n, kMaxClusterCtas));
  }
  if (g.bk != 0) {
    const std::int64_t hi = max_gemm_bk(hw, dtype, g) / kMmaK * kMmaK;
    const std::string tiles =
        hopper && g.bm == 0 && g.bn == 0 && g.split_k == 0
            ? "two stages of the smallest tile the choice takes (8 x 64)"
            : fmt::format("one stage of {} x {} tiles", g.bm > 0 ? g.bm : GemmTiling{}.bm,
                          g.bn > 0 ? g.bn : GemmTiling{}.bn);
    if (hi < kMmaK) {
      throw ConfigError(fmt::format(
          "--gemm-bk {}: no K chunk fits: {} exceed {}'s {} bytes of shared memory per CTA", g.bk,
          tiles, hw.name, hw.sm.smem_per_cta_max_bytes.value));
    }
    if (g.bk < kMmaK || g.bk % kMmaK != 0 || g.bk > hi) {
      throw ConfigError(fmt::format(
          "--gemm-bk {}: the K chunk must be a multiple of {} (the tensor cores' K step) from {} "
          "to {} on {}, where {} must fit in {} bytes of shared memory per CTA",
          g.bk, kMmaK, kMmaK, hi, hw.name, tiles, hw.sm.smem_per_cta_max_bytes.value));
    }
  }
}

// "512,1024": a list as run's --seq-lens reads it.
std::string joined(const std::vector<std::int64_t>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

std::string range_text(std::int64_t lo, std::int64_t hi) {
  return lo == hi ? std::to_string(lo) : fmt::format("{} to {}", lo, hi);
}

// A mixed step's lengths checked, and the request's batch (their count), seq (the longest query)
// and context (the longest context) set from them, which the report and the step's tail use.
void resolve_mixed(LayerRequest& r) {
  if (r.seq_lens.empty()) throw ConfigError("a mixed step needs --seq-lens");
  if (r.context_lens.empty()) r.context_lens = r.seq_lens;
  if (r.context_lens.size() != r.seq_lens.size()) {
    throw ConfigError(
        fmt::format("--context-lens gives {} lengths and --seq-lens {}: one context per sequence",
                    r.context_lens.size(), r.seq_lens.size()));
  }
  if (r.seq_lens.size() > static_cast<std::size_t>(kMaxBatch)) {
    throw ConfigError(
        fmt::format("--seq-lens gives {} sequences: at most {}", r.seq_lens.size(), kMaxBatch));
  }
  for (std::size_t b = 0; b < r.seq_lens.size(); ++b) {
    const std::int64_t q = r.seq_lens[b], kv = r.context_lens[b];
    if (q < 1 || q > kMaxSeq || kv < 1 || kv > kMaxSeq) {
      throw ConfigError(
          fmt::format("--seq-lens and --context-lens: sequence {} has {} and {}; "
                      "each length must be in [1, {}]",
                      b, q, kv, kMaxSeq));
    }
    if (kv < q) {
      throw ConfigError(fmt::format(
          "--context-lens: sequence {} of {} attends over {} keys, fewer than its {} queries "
          "(--seq-lens): a context counts the cached keys and the new ones",
          b + 1, r.seq_lens.size(), kv, q));
    }
  }
  r.batch = static_cast<std::int64_t>(r.seq_lens.size());
  r.seq = *std::max_element(r.seq_lens.begin(), r.seq_lens.end());
  r.context = *std::max_element(r.context_lens.begin(), r.context_lens.end());
}

}  // namespace

const char* layer_phase_name(LayerPhase phase) {
  return phase == LayerPhase::prefill  ? "prefill"
         : phase == LayerPhase::decode ? "decode"
                                       : "mixed";
}

std::string mixed_step_text(const std::vector<std::int64_t>& seq_lens,
                            const std::vector<std::int64_t>& context_lens) {
  // Decode rows (one query each) and prefill chunks (the rest), each group's lengths as a range.
  std::int64_t rows = 0, chunks = 0;
  std::int64_t row_lo = kMaxSeq, row_hi = 0, q_lo = kMaxSeq, q_hi = 0, kv_lo = kMaxSeq, kv_hi = 0;
  for (std::size_t b = 0; b < seq_lens.size(); ++b) {
    const std::int64_t q = seq_lens[b], kv = b < context_lens.size() ? context_lens[b] : q;
    if (q == 1) {
      ++rows;
      row_lo = std::min(row_lo, kv);
      row_hi = std::max(row_hi, kv);
    } else {
      ++chunks;
      q_lo = std::min(q_lo, q);
      q_hi = std::max(q_hi, q);
      kv_lo = std::min(kv_lo, kv);
      kv_hi = std::max(kv_hi, kv);
    }
  }
  std::string s;
  if (rows > 0) {
    s = fmt::format("{} decode row{} over {} keys", rows, rows == 1 ? "" : "s",
                    range_text(row_lo, row_hi));
  }
  if (chunks > 0) {
    s += fmt::format("{}{} prefill chunk{} of {} over {}", s.empty() ? "" : ", ", chunks,
                     chunks == 1 ? "" : "s", range_text(q_lo, q_hi), range_text(kv_lo, kv_hi));
  }
  return s;
}

const char* layer_launch_name(LayerLaunch launch) {
  return launch == LayerLaunch::graph ? "graph" : "stream";
}

LayerReport simulate_layer(const HardwareProfile& profile, const LayerRequest& request) {
  // A decode step is one new token per sequence over the --context keys cached: --context alone
  // says it all (it was refused, "--seq is required"), and the request then records seq 1.
  // --seq, given instead, is the cached context (docs/layer.md).
  LayerRequest r = request;
  const bool mixed = r.phase == LayerPhase::mixed;
  if (mixed) resolve_mixed(r);
  if (r.phase == LayerPhase::decode && r.seq == 0) {
    if (r.context == 0) {
      throw ConfigError(
          "--phase decode needs --context: the keys cached per sequence (one new token each)");
    }
    r.seq = 1;
  }
  // The engine charges every kernel launch.kernel_overhead_us beyond its simulated work, as a
  // stream launches it: the profile as the step's launches cost. Replayed from a CUDA graph, the
  // gap between two kernels with work is shorter by the difference the profile's cuda_graph
  // section measured (0.79 us on the H200: cuda_validate/measurements/h200-sxm-141gb/
  // launch_gap_2026-11-28); the rest of the overhead (the kernel's start and drain) stays.
  HardwareProfile hw = profile;
  const bool graph_gap = r.launch == LayerLaunch::graph && profile.cuda_graph.present;
  if (graph_gap) {
    const CudaGraphSpec& g = profile.cuda_graph;
    hw.launch.kernel_overhead_us.value =
        std::max(0.0, profile.launch.kernel_overhead_us.value -
                          (g.stream_kernel_gap_us.value - g.kernel_gap_us.value));
    hw.launch.kernel_overhead_us.source = "launch.kernel_overhead_us less the graph's saving";
  }
  check_positive("--batch", r.batch);
  check_positive("--seq", r.seq);
  check_positive("--tp", r.tp);
  if (r.context < 0)
    throw ConfigError(fmt::format("--context must be positive, got {}", r.context));
  const ModelConfig& model = r.model;
  const Dtype dtype = parse_dtype(r.dtype);
  if (dtype != Dtype::fp16 && dtype != Dtype::bf16) {
    throw ConfigError(fmt::format("--dtype {}: iosim layer models fp16 and bf16", r.dtype));
  }
  check_gemm_flags(hw, dtype, r.gemm_tiling);
  const std::int64_t heads = divided(model.attention_heads, r.tp, "attention heads");
  const std::int64_t kv_heads = divided(model.kv_heads, r.tp, "K/V heads");
  const std::int64_t inter = divided(model.intermediate_size, r.tp, "intermediate (MLP) size");
  const std::int64_t vocab = divided(model.vocab_size, r.tp, "vocabulary");
  const std::int64_t h = model.hidden_size, d = model.head_dim;
  const bool prefill = r.phase == LayerPhase::prefill;

  LayerReport rep;
  rep.profile = hw.name;
  rep.request = r;
  rep.tokens = prefill ? r.batch * r.seq : r.batch;
  // A mixed step's GEMMs see the packed total of its query tokens, as the serving engine packs
  // them.
  if (mixed) {
    rep.tokens = 0;
    for (const std::int64_t q : r.seq_lens) rep.tokens += q;
  }
  rep.tensor_peak_tflops = hw.tensor_flops_per_s(dtype) / 1e12;
  rep.hbm_peak_gbps = hw.hbm.bandwidth_gbps.value;
  std::int64_t seq_kv = r.context > 0 ? r.context : r.seq;
  // (Past it, attention's own check named --seq-kv, a flag iosim layer does not have.)
  if (seq_kv > kMaxSeq) {
    throw ConfigError(fmt::format("{} {} is out of range: it must be in [1, {}]",
                                  r.context > 0 ? "--context" : "--seq", seq_kv, kMaxSeq));
  }
  if (prefill && seq_kv < r.seq) {
    throw ConfigError(
        fmt::format("--context {} is shorter than --seq {}: a prefill's queries see "
                    "their own keys",
                    seq_kv, r.seq));
  }
  // A prefill over more keys than the model's sliding window attends over the window's band
  // (--window, causal): each query sees its last W keys.
  const bool windowed_prefill =
      (prefill || mixed) && model.sliding_window > 0 && seq_kv > model.sliding_window;
  if (windowed_prefill) {
    rep.notes.push_back(fmt::format("attention over a sliding window of {} keys: {}'s",
                                    model.sliding_window, model.name));
  }
  if (!prefill && model.sliding_window > 0 && seq_kv > model.sliding_window) {
    // Decode over a rolling cache attends over the window's keys only (Mistral's rolling buffer).
    rep.notes.push_back(fmt::format("attention over the last {} keys: {}'s sliding window",
                                    model.sliding_window, model.name));
    seq_kv = model.sliding_window;
  }
  rep.seq_kv = seq_kv;
  const std::int64_t m = rep.tokens;
  const ElementwiseKind norm =
      model.norm == NormKind::rms_norm ? ElementwiseKind::rms_norm : ElementwiseKind::layer_norm;

  // Attention: one simulate() call, its flags checked as `iosim run`'s are.
  RunFlags flags;
  flags.profile = hw.name;
  // A mixed step takes flash2 too: flash-decoding has no ragged forward here.
  flags.algorithm = !r.algorithm.empty() ? r.algorithm
                    : prefill || mixed   ? "flash2"
                                         : "flash-decoding";
  flags.kernel = r.kernel;
  flags.batch = r.batch;
  flags.heads = heads;
  flags.kv_heads = kv_heads;
  flags.seq = prefill ? r.seq : 1;
  flags.seq_kv = seq_kv;
  flags.head_dim = d;
  flags.dtype = r.dtype;
  flags.kv_dtype = r.kv_dtype;
  flags.causal = prefill || mixed;  // a decode query sees every cached key
  if (mixed) {
    // One ragged launch (run's --seq-lens, --seq-kv-lens): causal bottom-right, so a decode row
    // sees its whole context and a chunk is causal within itself.
    flags.batch = 1;
    flags.seq = 0;
    flags.seq_kv = 0;
    flags.seq_lens = joined(r.seq_lens);
    flags.seq_kv_lens = joined(r.context_lens);
  }
  if (windowed_prefill) flags.window = model.sliding_window;
  flags.l2 = r.l2_enabled ? "on" : "off";
  flags.sm_clock_mhz = r.sm_clock_mhz;
  flags.exact = r.exact;
  const RunRequest attention_request = to_request(flags);
  if (windowed_prefill &&
      !request_algorithm(hw, attention_request, builtin_registry()).capabilities.window) {
    throw ConfigError(fmt::format(
        "{} attends over a sliding window of {} tokens, and a prefill over {} keys needs an "
        "attention that skips by the window: {} does not (flash2 and flash3 do; or use --context "
        "{} or less)",
        model.name, model.sliding_window, seq_kv, attention_request.algorithm,
        model.sliding_window));
  }
  // The ragged launch's refusal names run's --seq-lens; the flag of this command is the
  // algorithm's.
  const std::string algo_flag = r.kernel.empty() ? "--algo" : "--kernel";
  const Report attention = [&] {
    if (!mixed) return simulate(hw, attention_request);
    try {
      return simulate(hw, attention_request);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{} {} (the mixed step's ragged attention): {}", algo_flag,
                                    r.kernel.empty() ? flags.algorithm : r.kernel, e.what()));
    }
  }();
  if (!attention.feasible()) {
    throw ConfigError(fmt::format("attention ({}) cannot run this layer: {}",
                                  attention_request.algorithm, attention.infeasible_reason));
  }

  // The layer in execution order (Hugging Face's LlamaDecoderLayer, vLLM's fused QKV and
  // gate/up projections).
  rep.ops.push_back(elementwise_op(hw, r, dtype, "input_norm", norm, m, h));
  rep.ops.push_back(
      gemm_op(hw, r, dtype, "qkv_proj", m, (heads + 2 * kv_heads) * d, h, model.qkv_bias));
  {
    LayerOp op;
    op.name = "attention";
    op.kind = "attention";
    op.detail = attention_request.algorithm;
    op.counters = attention.engine.total;
    op.time_s = attention.engine.time_s;
    op.sm_clock_mhz = attention.sm_clock_mhz;
    op.bound = attention.bound;
    rep.ops.push_back(op);
  }
  rep.ops.push_back(gemm_op(hw, r, dtype, "o_proj", m, h, heads * d, false));
  rep.ops.push_back(
      elementwise_op(hw, r, dtype, "attn_residual", ElementwiseKind::residual_add, m, h));
  rep.ops.push_back(elementwise_op(hw, r, dtype, "post_attn_norm", norm, m, h));
  if (model.mlp == MlpKind::gated_silu) {
    rep.ops.push_back(gemm_op(hw, r, dtype, "gate_up_proj", m, 2 * inter, h, false));
    if (r.fused_activation) {
      rep.ops.push_back(
          elementwise_op(hw, r, dtype, "silu_mul", ElementwiseKind::gated_silu, m, inter));
    } else {
      // PyTorch eager: F.silu(gate), then * up, each kernel through HBM. gate and up are halves
      // of each row of the gate_up output, contiguous only for one row: past it TensorIterator
      // launches its serial kernel (elementwise_kernel<128, 4>) for both, as measured
      // (cuda_validate/measurements/*/layer_*/layer_time.json: the vectorized kernel at decode
      // batch 1, elementwise_kernel<128, 4> at 16 and at prefill).
      const ElementwiseLoop loop = m > 1 ? ElementwiseLoop::serial : ElementwiseLoop::chunks;
      rep.ops.push_back(
          elementwise_op(hw, r, dtype, "silu", ElementwiseKind::silu, m, inter, loop));
      rep.ops.push_back(
          elementwise_op(hw, r, dtype, "mul", ElementwiseKind::gate_mul, m, inter, loop));
    }
  } else {
    rep.ops.push_back(gemm_op(hw, r, dtype, "up_proj", m, inter, h, false));
    rep.ops.push_back(elementwise_op(hw, r, dtype, "gelu", ElementwiseKind::gelu, m, inter));
  }
  rep.ops.push_back(gemm_op(hw, r, dtype, "down_proj", m, h, inter, false));
  rep.ops.push_back(
      elementwise_op(hw, r, dtype, "mlp_residual", ElementwiseKind::residual_add, m, h));
  for (const LayerOp& op : rep.ops) {
    add_op(rep.layer_total, op.counters);
    rep.layer_time_s += op.time_s;
  }
  for (LayerOp& op : rep.ops) op.share = rep.layer_time_s > 0 ? op.time_s / rep.layer_time_s : 0.0;

  // The step's tail: the final norm and the LM head over the last position of each sequence,
  // the only logits generation samples from (vLLM computes no others).
  rep.tail.push_back(elementwise_op(hw, r, dtype, "final_norm", norm, r.batch, h));
  rep.tail.push_back(gemm_op(hw, r, dtype, "lm_head", r.batch, vocab, h, false));
  for (std::int64_t i = 0; i < model.layers; ++i) add_op(rep.step_total, rep.layer_total);
  rep.step_time_s = static_cast<double>(model.layers) * rep.layer_time_s;
  for (const LayerOp& op : rep.tail) {
    add_op(rep.step_total, op.counters);
    rep.step_time_s += op.time_s;
  }
  for (LayerOp& op : rep.tail) op.share = rep.step_time_s > 0 ? op.time_s / rep.step_time_s : 0.0;

  if (r.launch == LayerLaunch::graph && !graph_gap) {
    rep.notes.push_back(fmt::format(
        "{} gives no CUDA graph launch gap (cuda_graph.kernel_gap_us): each kernel costs a "
        "stream launch, {} us",
        profile.name, profile.launch.kernel_overhead_us.value));
  }
  rep.notes.push_back(
      "each op runs alone with a cold L2: what one op leaves in L2 for the next "
      "is not credited");
  rep.notes.push_back("not modelled: rotary embeddings, the embedding lookup, sampling" +
                      std::string(r.tp > 1 ? ", the tensor-parallel all-reduces" : ""));
  return rep;
}

}  // namespace iosim
