// The model's SM cycles per CTA step of coresident_mma.cu's loop, per (tile, warps, mode, W): the
// blind predictions (measurements/predictions/coresident_mma_blind_h100.json) were written by it
// before the loop was measured. Not part of the build; from the repository root, after a build:
//   g++ -std=c++20 -O1 -I. tests/tools/coresident_mma_predict.cpp \
//     build/libiosim_sim.a -lfmt -lyaml-cpp -o /tmp/predict_mma && /tmp/predict_mma
// `/tmp/predict_mma ring`: the rows of the ring modes (ring: full's work, ring_gemm: gemm's, each
// step also copying the next K and V tiles, L2 hits, through a 2-stage ring), both with the
// copies as the engine times them (StageTimer::time() of every CTA of the grid, W per SM, each
// step's K + V bytes a load that hits the L2, pipeline_stages 2, in event order) and the compute
// alone; measurements/predictions/coresident_mma_ring_blind_h100.json was written from them
// (scripts/coresident_mma_ring_predict.py adds the candidate form) before the ring was measured.
// `/tmp/predict_mma spill`: the ring mode's rows at W = 1 and 2 for a grid of spilled bytes per
// thread, the spills charged as the query_stationary forward charges them (each step stores and
// reloads them through the L1, on the shared-memory pipe: 2 x bytes x threads);
// measurements/predictions/coresident_mma_spill_blind_h100.json was written from them before the
// microbenchmark's spill pass was measured (its rows are interpolated between the grid's bytes).
#include <cstdio>
#include <cstring>
#include <queue>
#include <vector>

#include "algorithms/tile_costs.hpp"
#include "sim/engine/stage_timer.hpp"
#include "sim/hardware/profile.hpp"
using namespace iosim;

// SM cycles per CTA step, per SM, of `w` with W CTAs on every SM, each step loading `bytes` (L2
// hits) one stage ahead: the engine's stage timing run over the whole grid, steps 64..256 kept.
double ring_cycles(detail::StageTimer& timer, const detail::StageTimer::Work& w, int W,
                   double bytes, double clock) {
  const int sms = timer.rates().sm_count;
  const int ctas = sms * W;
  timer.place_slots(ctas, sms);
  std::vector<detail::CtaState> st(static_cast<std::size_t>(ctas));
  using Event = std::pair<double, int>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> q;
  for (int c = 0; c < ctas; ++c) {
    st[c].cta = c;
    st[c].sm = c % sms;
    st[c].compute_end.assign(2, 0.0);
    q.emplace(0.0, c);
  }
  constexpr int kFrom = 64, kTo = 256;
  std::vector<int> step(static_cast<std::size_t>(ctas), 0);
  std::vector<double> at_from(static_cast<std::size_t>(ctas), 0.0);
  double sum = 0.0;
  detail::StageTimer::Traffic load;
  load.requested = bytes;
  const detail::StageTimer::Traffic none;
  const detail::StageTimer::Work nothing;
  while (!q.empty()) {
    const auto [t, c] = q.top();
    q.pop();
    auto& s = st[static_cast<std::size_t>(c)];
    timer.time(s, t, load, none, none, w, nothing, false, W);
    const int n = ++step[static_cast<std::size_t>(c)];
    if (n == kFrom) at_from[static_cast<std::size_t>(c)] = s.compute_free;
    if (n == kTo) {
      sum += (s.compute_free - at_from[static_cast<std::size_t>(c)]) / (kTo - kFrom);
      continue;
    }
    q.emplace(timer.next_stage_time(s, t), c);
  }
  return sum / ctas / W * clock * 1e6;
}

int main(int argc, char** argv) {
  const bool spill = argc > 1 && std::strcmp(argv[1], "spill") == 0;
  const bool ring = spill || (argc > 1 && std::strcmp(argv[1], "ring") == 0);
  const HardwareProfile hw = load_profile("h100-sxm5-80gb");
  const double clock = hw.sm.boost_clock_mhz.value;
  const char* modes[] = {"full", "gemm", "softmax"};
  std::printf("[\n");
  bool first = true;
  for (int d : {64, 128})
    for (auto [bq, bkv, warps] : {std::array<int, 3>{64, 32, 4},
                                  {64, 64, 4},
                                  {64, 128, 4},
                                  {128, 32, 4},
                                  {128, 64, 4},
                                  {128, 128, 4},
                                  {128, 32, 8},
                                  {128, 64, 8},
                                  {128, 128, 8}}) {
      KernelSpec k;
      k.name = "mma";
      k.threads_per_cta = 32 * warps;
      k.registers_per_thread = 128;
      k.smem_bytes_per_cta = 64 * 1024;
      k.consumer_warpgroups = 0;
      k.tensor_instruction = TensorInstruction::mma_sync;
      k.overlap = PipeOverlap::warps_per_scheduler;
      k.pipeline_stages = 2;
      detail::StageTimer timer(hw, k, clock, true);
      const auto& r = timer.rates();
      const TileRef s{TensorId::S, 0, 0, bq, 0, bkv};
      for (int mode = 0; mode < 3; ++mode) {
        detail::StageTimer::Work w;
        if (mode != 2) w.add(costs::scores(s, d, (bq + warps * bkv) * d * 2), r);
        if (mode != 1) w.add(costs::online_softmax(s, d), r);
        if (mode != 2) w.add(costs::pv(s, d, warps * bkv * d * 2), r);
        if (spill) {
          if (mode != 0) continue;
          const double bytes = 2.0 * bkv * d * 2;
          for (int W = 1; W <= 2; ++W)
            for (int local : {0, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536}) {
              detail::StageTimer::Work ws = w;
              ws.smem_bytes += 2.0 * local * k.threads_per_cta;
              std::printf(
                  "%s{\"d\": %d, \"block_q\": %d, \"block_kv\": %d, \"warps\": %d, "
                  "\"mode\": \"ring\", \"ctas_per_sm\": %d, \"local_bytes\": %d, "
                  "\"sm_cycles_per_step\": %.1f}",
                  first ? "" : ",\n", d, bq, bkv, warps, W, local,
                  ring_cycles(timer, ws, W, bytes, clock));
              first = false;
            }
          continue;
        }
        if (ring) {
          if (mode == 2) continue;
          const double bytes = 2.0 * bkv * d * 2;  // the next K and V tiles
          for (int W = 1; W <= 5; ++W) {
            const double alone = timer.compute_time(w, W) / W * clock * 1e6;
            const double with = ring_cycles(timer, w, W, bytes, clock);
            std::printf(
                "%s{\"d\": %d, \"block_q\": %d, \"block_kv\": %d, \"warps\": %d, "
                "\"mode\": \"%s\", \"ctas_per_sm\": %d, \"sm_cycles_per_step\": %.1f, "
                "\"sm_cycles_per_step_compute\": %.1f}",
                first ? "" : ",\n", d, bq, bkv, warps, mode == 0 ? "ring" : "ring_gemm", W, with,
                alone);
            first = false;
          }
          continue;
        }
        for (int W = 1; W <= 5; ++W) {
          const double t = timer.compute_time(w, W) / W * clock * 1e6;
          std::printf(
              "%s{\"d\": %d, \"block_q\": %d, \"block_kv\": %d, \"warps\": %d, \"mode\": \"%s\", "
              "\"ctas_per_sm\": %d, \"sm_cycles_per_step\": %.1f}",
              first ? "" : ",\n", d, bq, bkv, warps, modes[mode], W, t);
          first = false;
        }
      }
    }
  std::printf("\n]\n");
}
