// iosim's L2 (sim/memory/l2_system.hpp) against what microbench/l2_policy.cu measured on the H100
// (cuda_validate/measurements/h100-sxm5-80gb/edge_l2_2026-12-06/l2_policy/l2_policy_summary.json,
// made by cuda_validate/scripts/l2_policy_summary.py from the Nsight Compute files beside it).
// The same access patterns are replayed on an L2System of the H100's geometry at an eighth of its
// size (the knees are fractions of the capacity, and the replay is 8x cheaper), one SM's 16 KiB
// block after another's in the order the kernel's readers interleave.
//
// What the model captures and this test holds: data every SM reads is kept twice (once per
// partition), so repeated sweeps of it stop hitting at half the L2; data one SM reads stops
// between 0.6 and 1.0 of it; replacement is LRU-like (a hot set survives a stream while both
// fit, and is lost soon after: neither scan resistant nor random). What it does not capture, and
// this test bounds: the GPU's knees are gradual where the model's are sharp (all SMs' data:
// 64% / 29% / 16% hits at 0.5 / 0.55 / 0.6 of the L2 where the model keeps all or none).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/memory/l2_system.hpp"

namespace iosim {
namespace {

constexpr std::uint64_t kBlock = 16384;  // the kernel's 16 KiB blocks
constexpr int kSms = 132;
constexpr std::int64_t kCapacity = 52428800 / 8;  // the H100's L2, an eighth

struct Replay {
  L2System l2{kCapacity, 32, 2, 0.473};
  PerTensor written_back{};
  std::uint64_t missed = 0;
  void read(std::uint64_t addr, int sm, std::uint64_t bytes = kBlock) {
    missed += l2.read(addr, bytes, TensorId::K, sm, written_back).miss_bytes;
  }
  // Hit rate of sweeps 2..reps of `footprint` bytes, as the kernel computes it from DRAM reads.
  double sweep_hits(std::uint64_t footprint, int reps) const {
    const double w = static_cast<double>(footprint);
    return 1.0 - (static_cast<double>(missed) - w) / (static_cast<double>(reps - 1) * w);
  }
};

std::vector<int> readers(const std::string& set) {
  std::vector<int> sms;
  for (int s = 0; s < kSms; ++s) {
    if (set == "all" || (set == "one" && s == 0)) sms.push_back(s);
  }
  return sms;
}

// Worker k of `sms` reads blocks k, k + K, ... of [offset, offset + bytes): the "own" mapping.
void read_own(Replay& r, const std::vector<int>& sms, std::uint64_t offset, std::uint64_t bytes) {
  const std::uint64_t blocks = bytes / kBlock, k = sms.size();
  for (std::uint64_t i = 0; i * k < blocks; ++i) {
    for (std::uint64_t w = 0; w < k && i * k + w < blocks; ++w) {
      r.read(offset + (i * k + w) * kBlock, sms[w]);
    }
  }
}

// Hit rate of sweeps 2..reps of `fraction` of the L2, as the kernel computes it from DRAM reads.
double sweep_hits(const std::string& set, const std::string& mapping, double fraction, int reps) {
  Replay r;
  const std::uint64_t w =
      static_cast<std::uint64_t>(fraction * static_cast<double>(kCapacity)) / kBlock * kBlock;
  const std::vector<int> sms = readers(set);
  for (int rep = 0; rep < reps; ++rep) {
    if (mapping == "shared") {  // every reader the whole buffer, in step
      for (std::uint64_t p = 0; p < w; p += kBlock) {
        for (int sm : sms) r.read(p, sm);
      }
    } else {
      read_own(r, sms, 0, w);
    }
  }
  return r.sweep_hits(w, reps);
}

// Share of a hot set (a quarter of the L2, read twice) lost to a stream of `fraction` of the L2.
double scan_loss(double fraction) {
  Replay r;
  const std::vector<int> sms = readers("all");
  const std::uint64_t x = kCapacity / 4 / kBlock * kBlock;
  const std::uint64_t s =
      static_cast<std::uint64_t>(fraction * static_cast<double>(kCapacity)) / kBlock * kBlock;
  read_own(r, sms, 0, x);
  read_own(r, sms, 0, x);
  read_own(r, sms, x, s);
  r.missed = 0;
  read_own(r, sms, 0, x);
  return static_cast<double>(r.missed) / static_cast<double>(x);
}

nlohmann::json measured() {
  std::ifstream in(std::string(IOSIM_REPO_DIR) +
                   "/cuda_validate/measurements/h100-sxm5-80gb/edge_l2_2026-12-06/l2_policy/"
                   "l2_policy_summary.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::map<double, double> measured_sweep(const std::string& set, const std::string& mapping) {
  std::map<double, double> out;
  const nlohmann::json doc = measured();
  for (const auto& s : doc.at("sweeps")) {
    if (s.at("set") != set || s.at("mapping") != mapping) continue;
    for (const auto& point : s.at("hits")) out[point[0].get<double>()] = point[1].get<double>();
  }
  REQUIRE(!out.empty());
  return out;
}

// Hit rate of `reps` sweeps of every SM over `fraction` of the L2 laid out as 4 KiB pages: one
// after another (contiguous), a random choice of the pages of 4x the footprint (scattered), or
// every `stride`-th page, as l2_policy.cu's layout part reads them.
double layout_hits(const std::string& layout, double fraction, int reps) {
  Replay r;
  constexpr std::uint64_t kPage = 4096;
  const std::uint64_t pages =
      static_cast<std::uint64_t>(fraction * static_cast<double>(kCapacity)) / kPage;
  std::vector<std::uint64_t> at(pages);
  if (layout == "scattered") {
    std::vector<std::uint64_t> all(4 * pages);
    for (std::uint64_t i = 0; i < all.size(); ++i) all[i] = i;
    std::uint64_t x = 12345;  // a fixed LCG: the same pages every run
    for (std::uint64_t i = all.size() - 1; i > 0; --i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(all[i], all[(x >> 33) % (i + 1)]);
    }
    std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(pages), at.begin());
  } else {
    const std::uint64_t stride = layout == "stride16" ? 16 : 1;
    for (std::uint64_t i = 0; i < pages; ++i) at[i] = stride * i;
  }
  const std::vector<int> sms = readers("all");
  for (int rep = 0; rep < reps; ++rep) {
    for (std::uint64_t p : at) {
      for (int sm : sms) r.read(p * kPage, sm, kPage);
    }
  }
  return r.sweep_hits(pages * kPage, reps);
}

}  // namespace

TEST_CASE("L2 against l2_policy: data every SM reads is held twice, so it fits half the L2") {
  const auto gpu = measured_sweep("all", "shared");
  for (const auto& point : gpu) {
    const double fraction = point.first, hit = point.second;
    if (fraction > 1.0) continue;
    const double model = sweep_hits("all", "shared", fraction, 4);
    CAPTURE(fraction);
    CAPTURE(hit);
    CAPTURE(model);
    if (fraction <= 0.45 || fraction >= 0.7) {
      CHECK(std::abs(model - hit) <= 0.02);
    } else {
      // The GPU's gradual knee against the model's step at 0.5: within what the step can be off.
      CHECK(std::abs(model - hit) <= 0.72);
    }
  }
}

TEST_CASE("L2 against l2_policy: one SM's data, and data read once per sweep by its own SM") {
  const auto one = measured_sweep("one", "shared");
  // (At 0.9 the model keeps 30% where the GPU keeps 50%: it hashes each 4 KiB region's home
  // partition at random, so the far half of one SM's data fills the far partition's sets
  // unevenly and overflows some before the partition is full; the GPU's split is even.)
  for (double fraction : {0.3, 0.45, 0.8, 1.5}) {
    CAPTURE(fraction);
    const double model = sweep_hits("one", "shared", fraction, 3);
    CAPTURE(model);
    CAPTURE(one.at(fraction));
    // Below half the L2 all of it stays; up to the whole L2 the half homed in the far partition
    // stays there (one copy) while the near partition thrashes; past it nothing.
    CHECK(std::abs(model - one.at(fraction)) <= 0.12);
  }
  const auto own = measured_sweep("all", "own");
  for (double fraction : {0.3, 0.55, 0.6, 0.9, 1.0, 1.2}) {
    CAPTURE(fraction);
    const double model = sweep_hits("all", "own", fraction, 4);
    CAPTURE(model);
    CAPTURE(own.at(fraction));
    CHECK(std::abs(model - own.at(fraction)) <= 0.1);
  }
}

TEST_CASE("L2 against l2_policy: a stream evicts a hot set as an LRU does") {
  const nlohmann::json doc = measured();
  REQUIRE(doc.at("scan").size() >= 8);
  for (const auto& point : doc.at("scan")) {
    const double fraction = point[0].get<double>(), lost = point[1].get<double>();
    CAPTURE(fraction);
    CAPTURE(lost);
    const double model = scan_loss(fraction);
    CAPTURE(model);
    CHECK(std::abs(model - lost) <= 0.1);
  }
}

// l2_policy.cu's layout part (the same sweeps, the footprint's 4 KiB pages laid out four ways):
// the GPU spreads a contiguous footprint evenly over its sets (all of it kept up to half the L2,
// none from 0.6) and anything else as if each page were placed at random (a gradual knee: 83%
// kept at 0.4, 48% at 0.5, 4-11% at 0.7). The model's set index (a region's place in its window,
// rotated by a hash of the window) does both. Not held: every 2nd page, which the GPU spreads as
// it spreads the scattered pages and the model as it spreads a contiguous footprint (all kept to
// 0.5): its hash mixes a page's low address bits with higher ones, the model's does not.
TEST_CASE("L2 against l2_policy: a contiguous footprint's sharp knee, a scattered one's gradual") {
  const nlohmann::json doc = measured();
  REQUIRE(doc.contains("layout"));
  for (const auto& l : doc.at("layout")) {
    const std::string layout = l.at("layout").get<std::string>();
    if (layout == "stride2") continue;
    for (const auto& point : l.at("hits")) {
      const double fraction = point[0].get<double>(), hit = point[1].get<double>();
      if (fraction != 0.44 && fraction != 0.5 && fraction != 0.56 && fraction != 0.65) continue;
      CAPTURE(layout);
      CAPTURE(fraction);
      CAPTURE(hit);
      const double model = layout_hits(layout, fraction, 3);
      CAPTURE(model);
      // Contiguous past half the L2: the GPU's knee spreads over 0.5-0.6, the model's over
      // 0.5-0.53 (at 0.56: 18% kept against none).
      CHECK(std::abs(model - hit) <= (layout == "contiguous" && fraction == 0.56 ? 0.2 : 0.08));
    }
  }
}

}  // namespace iosim
