#include "api/layer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "api/run_flags.hpp"
#include "api/simulate.hpp"
#include "sim/base/errors.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/power_model.hpp"
#include "transformer/decoder_layer.hpp"
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

LayerOp gemm_op(const HardwareProfile& hw, const LayerRequest& r, const GemmProblem& p) {
  const GemmTiling t = resolve_gemm_tiling(hw, p, r.gemm_tiling);
  LayerOp op = from_run(p.name, "gemm", run_op(hw, *make_gemm_schedule(p, t), p.dtype, r));
  op.m = p.m;
  op.n = p.n;
  op.k = p.k;
  op.batch = p.batch;
  op.detail = fmt::format("{}x{}x{} {}{}", t.bm, t.bn, t.bk,
                          t.instruction == TensorInstruction::wgmma ? "wgmma" : "mma.sync",
                          t.group_m > 0 ? fmt::format(" group {}", t.group_m) : "") +
              cluster_detail(t) + (t.split_k > 1 ? fmt::format(" split-K {}", t.split_k) : "") +
              (p.batch > 1 ? fmt::format(" batch {}", p.batch) : "");
  return op;
}

LayerOp elementwise_op(const HardwareProfile& hw, const LayerRequest& r,
                       const ElementwiseProblem& p, LayerOpKind kind) {
  LayerOp op = from_run(p.name, layer_op_kind_name(kind),
                        run_op(hw, *make_elementwise_schedule(p), p.dtype, r));
  op.m = p.rows;
  op.n = p.cols;
  return op;
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

std::string range_text(std::int64_t lo, std::int64_t hi) {
  return lo == hi ? std::to_string(lo) : fmt::format("{} to {}", lo, hi);
}

}  // namespace

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
  // The step's sizes as its phase implies them (transformer/decoder_layer.hpp), recorded in the
  // report's request: a mixed step's batch, seq and context from its lists, a decode step's seq 1.
  LayerRequest r = request;
  LayerStep step;
  step.phase = r.phase;
  step.batch = r.batch;
  step.seq = r.seq;
  step.context = r.context;
  step.seq_lens = r.seq_lens;
  step.context_lens = r.context_lens;
  step.tp = r.tp;
  step = resolve_layer_step(std::move(step));
  r.batch = step.batch;
  r.seq = step.seq;
  r.context = step.context;
  r.context_lens = step.context_lens;
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
  const ModelConfig& model = r.model;
  const Dtype dtype = parse_dtype(r.dtype);
  if (dtype != Dtype::fp16 && dtype != Dtype::bf16) {
    throw ConfigError(fmt::format("--dtype {}: iosim layer models fp16 and bf16", r.dtype));
  }
  check_gemm_flags(hw, dtype, r.gemm_tiling);
  // The layer as data, in execution order; what follows runs it.
  const DecoderLayer layer = decoder_layer(model, step, dtype, r.fused_activation);

  LayerReport rep;
  rep.profile = hw.name;
  rep.request = r;
  rep.tokens = layer.tokens;
  rep.tensor_peak_tflops = hw.tensor_flops_per_s(dtype) / 1e12;
  rep.hbm_peak_gbps = hw.hbm.bandwidth_gbps.value;
  rep.seq_kv = layer.seq_kv;
  rep.notes = layer.notes;

  // Attention first, so that one it refuses fails before any GEMM runs: one simulate() call, its
  // request built typed from the layer's problem and checked as `iosim run`'s (to_request()'s
  // checks of the values: the K/V type, the clock, the sizes).
  const bool mixed = r.phase == LayerPhase::mixed;
  RunRequest attention_request;
  // A mixed step takes flash2 too: flash-decoding has no ragged forward here.
  attention_request.algorithm = !r.algorithm.empty()            ? r.algorithm
                                : r.phase != LayerPhase::decode ? "flash2"
                                                                : "flash-decoding";
  if (!r.kernel.empty()) {
    attention_request.kernel = kernel_flag_description(r.kernel);
    attention_request.algorithm = attention_request.kernel->name;
  }
  attention_request.problem = layer.attention;
  if (!r.kv_dtype.empty()) attention_request.problem.kv_dtype = parse_kv_dtype(r.kv_dtype);
  attention_request.engine.l2_enabled = r.l2_enabled;
  attention_request.engine.exact = r.exact;
  attention_request.engine.sm_clock_mhz = r.sm_clock_mhz;
  check_request_values(attention_request);
  if (layer.attention.window > 0 &&
      !request_algorithm(hw, attention_request, builtin_registry()).capabilities.window) {
    throw ConfigError(fmt::format(
        "{} attends over a sliding window of {} tokens, and a prefill over {} keys needs an "
        "attention that skips by the window: {} does not (flash2 and flash3 do; or use --context "
        "{} or less)",
        model.name, model.sliding_window, layer.seq_kv, attention_request.algorithm,
        model.sliding_window));
  }
  // A latent model's attention reads the latent cache: simulate()'s refusal would name run's
  // --latent-dim, a flag this command does not have.
  if (layer.attention.latent() &&
      !request_algorithm(hw, attention_request, builtin_registry()).capabilities.latent) {
    throw ConfigError(fmt::format(
        "{} has multi-head latent attention, whose decode reads one latent cache row a token (V "
        "its first {} columns): {} {} does not (flash-decoding and paged do)",
        model.name, layer.attention.latent_dim, r.kernel.empty() ? "--algo" : "--kernel",
        r.kernel.empty() ? attention_request.algorithm : r.kernel));
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
                                    r.kernel.empty() ? attention_request.algorithm : r.kernel,
                                    e.what()));
    }
  }();
  if (!attention.feasible()) {
    throw ConfigError(fmt::format("attention ({}) cannot run this layer: {}",
                                  attention_request.algorithm, attention.infeasible_reason));
  }

  // Each op of the layer, then of the step's tail, on the engine (the attention's run above).
  const auto run = [&](const DecoderLayerOp& o) {
    if (o.kind == LayerOpKind::gemm) return gemm_op(hw, r, o.gemm);
    if (o.kind != LayerOpKind::attention) return elementwise_op(hw, r, o.elementwise, o.kind);
    LayerOp op;
    op.name = o.name;
    op.kind = layer_op_kind_name(o.kind);
    op.detail = attention_request.algorithm;
    op.counters = attention.engine.total;
    op.time_s = attention.engine.time_s;
    op.sm_clock_mhz = attention.sm_clock_mhz;
    op.bound = attention.bound;
    return op;
  };
  for (const DecoderLayerOp& o : layer.ops) rep.ops.push_back(run(o));
  for (const LayerOp& op : rep.ops) {
    add_op(rep.layer_total, op.counters);
    rep.layer_time_s += op.time_s;
  }
  for (LayerOp& op : rep.ops) op.share = rep.layer_time_s > 0 ? op.time_s / rep.layer_time_s : 0.0;

  for (const DecoderLayerOp& o : layer.tail) rep.tail.push_back(run(o));
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
  rep.notes.push_back(layer.not_modelled);
  return rep;
}

}  // namespace iosim
