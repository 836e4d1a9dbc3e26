// The model's SM cycles per CTA step of coresident_mma.cu's loop, per (tile, warps, mode, W): the
// blind predictions (measurements/predictions/coresident_mma_blind_h100.json) were written by it
// before the loop was measured. Not part of the build; from the repository root, after a build:
//   g++ -std=c++20 -O1 -I. tests/tools/coresident_mma_predict.cpp \
//     build/libiosim_sim.a -lfmt -lyaml-cpp -o /tmp/predict_mma && /tmp/predict_mma
#include <cstdio>

#include "algorithms/tile_costs.hpp"
#include "sim/engine/stage_timer.hpp"
#include "sim/hardware/profile.hpp"
using namespace iosim;
int main() {
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
      const detail::StageTimer timer(hw, k, clock, true);
      const auto& r = timer.rates();
      const TileRef s{TensorId::S, 0, 0, bq, 0, bkv};
      for (int mode = 0; mode < 3; ++mode) {
        detail::StageTimer::Work w;
        if (mode != 2) w.add(costs::scores(s, d, (bq + warps * bkv) * d * 2), r);
        if (mode != 1) w.add(costs::online_softmax(s, d), r);
        if (mode != 2) w.add(costs::pv(s, d, warps * bkv * d * 2), r);
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
