// Hardware profiles: the built-in files, the strict loader (property sweeps over every key), the
// bad-profile corpus with its expected messages, and the small helpers (dtype, "did you mean").
#include "sim/hardware/profile.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/errors.hpp"
#include "sim/base/suggest.hpp"
#include "sim/hardware/profile_overrides.hpp"
#include "sim/hardware/profile_schema.hpp"
#include "sim/schedule/dtype.hpp"

namespace fs = std::filesystem;
using iosim::ConfigError;
using iosim::HardwareProfile;

namespace {

const fs::path kDataDir = IOSIM_TEST_DATA_DIR;
const std::vector<std::string> kBuiltins{"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb",
                                         "h200-sxm-141gb"};

// The message of the ConfigError `f` throws, or a marker that fails every substring check.
std::string config_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no ConfigError thrown>";
}

std::string parse_error_of(const std::string& yaml) {
  return config_error_of([&] { iosim::parse_profile(yaml, "t.yaml"); });
}

// 'text', built by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on "'" + std::string.
std::string quoted(const std::string& text) {
  std::string out(1, '\'');
  out.append(text).push_back('\'');
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One numeric key of the schema, with a valid value for the fixture below.
struct Leaf {
  std::string section;
  std::string key;
  std::string value;  // YAML text of a valid value
  bool integer;       // integer field: fractions are refused
  bool zero_ok;       // 0 is a valid value
  std::string path() const { return section + "." + key; }
};

// Every numeric key the loader must require: the schema, written out independently of the loader.
const std::vector<Leaf> kLeaves{
    {"sm", "count", "132", true, false},
    {"sm", "boost_clock_mhz", "1980", false, false},
    {"sm", "base_clock_mhz", "1590", false, false},
    {"sm", "smem_per_sm_bytes", "233472", true, false},
    {"sm", "smem_per_cta_max_bytes", "232448", true, false},
    {"sm", "smem_reserved_per_cta_bytes", "1024", true, true},
    {"sm", "registers_per_sm", "65536", true, false},
    {"sm", "max_registers_per_thread", "255", true, false},
    {"sm", "max_threads_per_sm", "2048", true, false},
    {"sm", "max_ctas_per_sm", "32", true, false},
    {"sm", "smem_bandwidth_bytes_per_clk", "128", false, false},
    {"sm", "l2_to_sm_bytes_per_clk", "124", false, false},
    {"sm", "smem_latency_cycles", "30", false, true},
    {"sm", "setmaxnreg_min_registers", "24", true, true},
    {"sm", "setmaxnreg_max_registers", "256", true, true},
    {"sm", "setmaxnreg_step_registers", "8", true, true},
    {"sm", "setmaxnreg_cycles", "60", false, true},
    {"compute", "tensor_fp16_tflops", "989.4", false, false},
    {"compute", "tensor_bf16_tflops", "979.5", false, false},
    {"compute", "tensor_tf32_tflops", "494.7", false, false},
    {"compute", "tensor_fp8_tflops", "1978.9", false, true},
    {"compute", "fp32_tflops", "66.9", false, false},
    {"compute", "sfu_ops_per_clk_per_sm", "16", false, false},
    {"compute", "mma_sync_flops_per_clk_per_sm", "2719", false, false},
    {"compute", "int32_ops_per_clk_per_sm", "64", false, false},
    {"compute", "fp32_latency_cycles", "4", false, true},
    {"compute", "wgmma_latency_cycles", "91.5", false, true},
    {"l2", "size_bytes", "52428800", true, false},
    {"l2", "line_bytes", "128", true, false},
    {"l2", "sector_bytes", "32", true, false},
    {"l2", "bandwidth_gbps", "7600", false, false},
    {"l2", "hit_latency_cycles", "290", false, true},
    {"l2", "partitions", "2", true, false},
    {"l2", "max_dirty_fraction", "0.473", false, false},
    {"hbm", "capacity_bytes", "85899345920", true, false},
    {"hbm", "bandwidth_gbps", "3352", false, false},
    {"hbm", "achievable_fraction", "0.9", false, false},
    {"hbm", "latency_ns", "214.6", false, true},
    {"launch", "kernel_overhead_us", "4.45", false, true},
};

// Writes a profile in the built-in files' layout, with edits: a key's value text, its whole
// `{...}` text, or its key name replaced, or the key dropped.
class ProfileText {
 public:
  ProfileText& value(const std::string& path, std::string text) {
    values_[path] = std::move(text);
    return *this;
  }
  ProfileText& source(const std::string& path, std::string text) {
    sources_[path] = std::move(text);
    return *this;
  }
  ProfileText& whole(const std::string& path, std::string text) {
    wholes_[path] = std::move(text);
    return *this;
  }
  ProfileText& rename(const std::string& path, std::string key) {
    renames_[path] = std::move(key);
    return *this;
  }
  ProfileText& drop(const std::string& path) {
    drops_.insert(path);
    return *this;
  }
  ProfileText& append(std::string text) {
    tail_ += text;
    return *this;
  }

  std::string str() const {
    std::ostringstream out;
    out << "name: test-gpu\ndescription: Test GPU\n";
    std::string section;
    for (const Leaf& leaf : kLeaves) {
      if (leaf.section != section) {
        section = leaf.section;
        out << section << ":\n";
      }
      const std::string path = leaf.path();
      if (drops_.count(path) != 0) continue;
      const std::string key = renames_.count(path) != 0 ? renames_.at(path) : leaf.key;
      out << "  " << key << ": ";
      if (wholes_.count(path) != 0) {
        out << wholes_.at(path) << "\n";
        continue;
      }
      out << "{value: " << (values_.count(path) != 0 ? values_.at(path) : leaf.value)
          << ", source: " << (sources_.count(path) != 0 ? sources_.at(path) : "\"test\"") << "}\n";
    }
    out << tail_;
    return out.str();
  }

  // The 1-based line of `path` in str().
  int line_of(const std::string& path) const {
    std::istringstream in(str());
    const std::string key = path.substr(path.find('.') + 1);
    const std::string section = path.substr(0, path.find('.'));
    std::string line;
    std::string current;
    for (int n = 1; std::getline(in, line); ++n) {
      if (!line.empty() && line[0] != ' ') current = line.substr(0, line.find(':'));
      if (current == section && line.rfind("  " + key + ":", 0) == 0) return n;
    }
    return -1;
  }

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> sources_;
  std::map<std::string, std::string> wholes_;
  std::map<std::string, std::string> renames_;
  std::set<std::string> drops_;
  std::string tail_;
};

// Reads one numeric field of a parsed profile by its key path, as a double.
double field(const HardwareProfile& p, const std::string& path) {
  const std::map<std::string, std::function<double()>> get{
      {"sm.count", [&] { return double(p.sm.count.value); }},
      {"sm.boost_clock_mhz", [&] { return p.sm.boost_clock_mhz.value; }},
      {"sm.base_clock_mhz", [&] { return p.sm.base_clock_mhz.value; }},
      {"sm.smem_per_sm_bytes", [&] { return double(p.sm.smem_per_sm_bytes.value); }},
      {"sm.smem_per_cta_max_bytes", [&] { return double(p.sm.smem_per_cta_max_bytes.value); }},
      {"sm.smem_reserved_per_cta_bytes",
       [&] { return double(p.sm.smem_reserved_per_cta_bytes.value); }},
      {"sm.registers_per_sm", [&] { return double(p.sm.registers_per_sm.value); }},
      {"sm.max_registers_per_thread", [&] { return double(p.sm.max_registers_per_thread.value); }},
      {"sm.max_threads_per_sm", [&] { return double(p.sm.max_threads_per_sm.value); }},
      {"sm.max_ctas_per_sm", [&] { return double(p.sm.max_ctas_per_sm.value); }},
      {"sm.smem_bandwidth_bytes_per_clk", [&] { return p.sm.smem_bandwidth_bytes_per_clk.value; }},
      {"sm.l2_to_sm_bytes_per_clk", [&] { return p.sm.l2_to_sm_bytes_per_clk.value; }},
      {"sm.smem_latency_cycles", [&] { return p.sm.smem_latency_cycles.value; }},
      {"sm.setmaxnreg_min_registers", [&] { return double(p.sm.setmaxnreg_min_registers.value); }},
      {"sm.setmaxnreg_max_registers", [&] { return double(p.sm.setmaxnreg_max_registers.value); }},
      {"sm.setmaxnreg_step_registers",
       [&] { return double(p.sm.setmaxnreg_step_registers.value); }},
      {"sm.setmaxnreg_cycles", [&] { return p.sm.setmaxnreg_cycles.value; }},
      {"compute.tensor_fp16_tflops", [&] { return p.compute.tensor_fp16_tflops.value; }},
      {"compute.tensor_bf16_tflops", [&] { return p.compute.tensor_bf16_tflops.value; }},
      {"compute.tensor_tf32_tflops", [&] { return p.compute.tensor_tf32_tflops.value; }},
      {"compute.tensor_fp8_tflops", [&] { return p.compute.tensor_fp8_tflops.value; }},
      {"compute.fp32_tflops", [&] { return p.compute.fp32_tflops.value; }},
      {"compute.sfu_ops_per_clk_per_sm", [&] { return p.compute.sfu_ops_per_clk_per_sm.value; }},
      {"compute.mma_sync_flops_per_clk_per_sm",
       [&] { return p.compute.mma_sync_flops_per_clk_per_sm.value; }},
      {"compute.int32_ops_per_clk_per_sm",
       [&] { return p.compute.int32_ops_per_clk_per_sm.value; }},
      {"compute.fp32_latency_cycles", [&] { return p.compute.fp32_latency_cycles.value; }},
      {"compute.wgmma_latency_cycles", [&] { return p.compute.wgmma_latency_cycles.value; }},
      {"l2.size_bytes", [&] { return double(p.l2.size_bytes.value); }},
      {"l2.line_bytes", [&] { return double(p.l2.line_bytes.value); }},
      {"l2.sector_bytes", [&] { return double(p.l2.sector_bytes.value); }},
      {"l2.bandwidth_gbps", [&] { return p.l2.bandwidth_gbps.value; }},
      {"l2.hit_latency_cycles", [&] { return p.l2.hit_latency_cycles.value; }},
      {"l2.partitions", [&] { return static_cast<double>(p.l2.partitions.value); }},
      {"l2.max_dirty_fraction", [&] { return p.l2.max_dirty_fraction.value; }},
      {"hbm.capacity_bytes", [&] { return double(p.hbm.capacity_bytes.value); }},
      {"hbm.bandwidth_gbps", [&] { return p.hbm.bandwidth_gbps.value; }},
      {"hbm.achievable_fraction", [&] { return p.hbm.achievable_fraction.value; }},
      {"hbm.latency_ns", [&] { return p.hbm.latency_ns.value; }},
      {"launch.kernel_overhead_us", [&] { return p.launch.kernel_overhead_us.value; }},
  };
  return get.at(path)();
}

// The source string of one field, by key path.
std::vector<std::pair<std::string, std::string>> all_sources(const HardwareProfile& p) {
  return {
      {"sm.count", p.sm.count.source},
      {"sm.boost_clock_mhz", p.sm.boost_clock_mhz.source},
      {"sm.base_clock_mhz", p.sm.base_clock_mhz.source},
      {"sm.smem_per_sm_bytes", p.sm.smem_per_sm_bytes.source},
      {"sm.smem_per_cta_max_bytes", p.sm.smem_per_cta_max_bytes.source},
      {"sm.smem_reserved_per_cta_bytes", p.sm.smem_reserved_per_cta_bytes.source},
      {"sm.registers_per_sm", p.sm.registers_per_sm.source},
      {"sm.max_registers_per_thread", p.sm.max_registers_per_thread.source},
      {"sm.max_threads_per_sm", p.sm.max_threads_per_sm.source},
      {"sm.max_ctas_per_sm", p.sm.max_ctas_per_sm.source},
      {"sm.smem_bandwidth_bytes_per_clk", p.sm.smem_bandwidth_bytes_per_clk.source},
      {"sm.l2_to_sm_bytes_per_clk", p.sm.l2_to_sm_bytes_per_clk.source},
      {"sm.smem_latency_cycles", p.sm.smem_latency_cycles.source},
      {"sm.setmaxnreg_min_registers", p.sm.setmaxnreg_min_registers.source},
      {"sm.setmaxnreg_max_registers", p.sm.setmaxnreg_max_registers.source},
      {"sm.setmaxnreg_step_registers", p.sm.setmaxnreg_step_registers.source},
      {"sm.setmaxnreg_cycles", p.sm.setmaxnreg_cycles.source},
      {"compute.tensor_fp16_tflops", p.compute.tensor_fp16_tflops.source},
      {"compute.tensor_bf16_tflops", p.compute.tensor_bf16_tflops.source},
      {"compute.tensor_tf32_tflops", p.compute.tensor_tf32_tflops.source},
      {"compute.tensor_fp8_tflops", p.compute.tensor_fp8_tflops.source},
      {"compute.fp32_tflops", p.compute.fp32_tflops.source},
      {"compute.sfu_ops_per_clk_per_sm", p.compute.sfu_ops_per_clk_per_sm.source},
      {"compute.mma_sync_flops_per_clk_per_sm", p.compute.mma_sync_flops_per_clk_per_sm.source},
      {"compute.int32_ops_per_clk_per_sm", p.compute.int32_ops_per_clk_per_sm.source},
      {"compute.fp32_latency_cycles", p.compute.fp32_latency_cycles.source},
      {"compute.wgmma_latency_cycles", p.compute.wgmma_latency_cycles.source},
      {"l2.size_bytes", p.l2.size_bytes.source},
      {"l2.line_bytes", p.l2.line_bytes.source},
      {"l2.sector_bytes", p.l2.sector_bytes.source},
      {"l2.bandwidth_gbps", p.l2.bandwidth_gbps.source},
      {"l2.hit_latency_cycles", p.l2.hit_latency_cycles.source},
      {"l2.partitions", p.l2.partitions.source},
      {"l2.max_dirty_fraction", p.l2.max_dirty_fraction.source},
      {"hbm.capacity_bytes", p.hbm.capacity_bytes.source},
      {"hbm.bandwidth_gbps", p.hbm.bandwidth_gbps.source},
      {"hbm.achievable_fraction", p.hbm.achievable_fraction.source},
      {"hbm.latency_ns", p.hbm.latency_ns.source},
      {"launch.kernel_overhead_us", p.launch.kernel_overhead_us.source},
  };
}

// Sets an environment variable for one scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A fresh empty directory under the system temp folder, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("iosim_profile_test_" + std::to_string(std::rand()) + "_" +
                                         std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

TEST_SUITE("profile") {
  TEST_CASE("built-in profile names are the four hwprofiles/ stems, sorted") {
    CHECK(iosim::builtin_profile_names() == kBuiltins);
  }

  TEST_CASE("every built-in profile loads and is internally consistent") {
    for (const std::string& name : kBuiltins) {
      CAPTURE(name);
      const HardwareProfile p = iosim::load_profile(name);
      CHECK(p.name == name);
      CHECK_FALSE(p.description.empty());
      CHECK(p.source_file.filename() == name + ".yaml");
      for (const auto& entry : all_sources(p)) {
        // Not a structured binding: CAPTURE's lambda cannot name one under clang 14.
        const auto& path = entry.first;
        const auto& source = entry.second;
        CAPTURE(path);
        CHECK(source.size() >= 10);  // a citation, not a placeholder
      }
      // Geometry the L2 model relies on.
      CHECK(p.l2.line_bytes.value % p.l2.sector_bytes.value == 0);
      CHECK(p.l2.size_bytes.value % p.l2.line_bytes.value == 0);
      CHECK(p.l2.line_bytes.value == 128);
      CHECK(p.l2.sector_bytes.value == 32);
      // Occupancy limits.
      CHECK(p.sm.smem_per_cta_max_bytes.value + p.sm.smem_reserved_per_cta_bytes.value <=
            p.sm.smem_per_sm_bytes.value);
      CHECK(p.sm.max_threads_per_sm.value % 32 == 0);
      CHECK(p.sm.max_registers_per_thread.value * 32 <= p.sm.registers_per_sm.value);
      CHECK(p.sm.base_clock_mhz.value < p.sm.boost_clock_mhz.value);
      // The hierarchy is ordered: L2 is smaller, faster and nearer than HBM.
      CHECK(p.l2.size_bytes.value < p.hbm.capacity_bytes.value);
      CHECK(p.l2.bandwidth_gbps.value > p.hbm.bandwidth_gbps.value);
      const double l2_hit_ns = p.l2.hit_latency_cycles.value / (p.sm.boost_clock_mhz.value * 1e-3);
      CHECK(l2_hit_ns < p.hbm.latency_ns.value);
      CHECK(p.hbm.achievable_fraction.value > 0.8);
      CHECK(p.hbm.achievable_fraction.value <= 1.0);
      // Tensor cores beat CUDA cores; tf32 runs at half the fp16 rate on these parts.
      CHECK(p.compute.tensor_fp16_tflops.value > 10 * p.compute.fp32_tflops.value);
      CHECK(p.compute.tensor_tf32_tflops.value ==
            doctest::Approx(p.compute.tensor_fp16_tflops.value / 2).epsilon(0.01));
      // FP8 tensor cores (Hopper) run at twice the fp16 rate; Ampere has none (0).
      const double fp8 = p.compute.tensor_fp8_tflops.value;
      CHECK((fp8 == 0 ||
             fp8 == doctest::Approx(2 * p.compute.tensor_fp16_tflops.value).epsilon(0.001)));
      // The FP32 peak is a whole number of lanes per SM (64 on Ampere, 128 on Hopper) x 2 FLOPs
      // at the boost clock: the SM count and clock agree with the datasheet's TFLOPS.
      const double lanes = p.compute.fp32_tflops.value * 1e12 /
                           (p.sm.count.value * p.sm.boost_clock_mhz.value * 1e6 * 2);
      CHECK(std::abs(lanes - std::round(lanes)) < 0.01 * lanes);
      CHECK((std::round(lanes) == 64 || std::round(lanes) == 128));
      // One SM cannot draw more from L2 than the whole chip.
      CHECK(p.sm.l2_to_sm_bytes_per_clk.value * p.sm.boost_clock_mhz.value * 1e6 <
            p.l2.bandwidth_gbps.value * 1e9);
    }
  }

  TEST_CASE("parts built on one die share their SM and L2 numbers") {
    const HardwareProfile a40 = iosim::load_profile("a100-sxm4-40gb");
    const HardwareProfile a80 = iosim::load_profile("a100-sxm4-80gb");
    const HardwareProfile h100 = iosim::load_profile("h100-sxm5-80gb");
    const HardwareProfile h200 = iosim::load_profile("h200-sxm-141gb");
    for (const std::string path :
         {"sm.count", "sm.boost_clock_mhz", "sm.smem_per_sm_bytes", "sm.smem_per_cta_max_bytes",
          "sm.registers_per_sm", "sm.max_threads_per_sm", "sm.max_ctas_per_sm",
          "compute.tensor_fp16_tflops", "l2.size_bytes"}) {
      CAPTURE(path);
      CHECK(field(a40, path) == field(a80, path));
    }
    for (const std::string path :
         {"sm.count", "sm.boost_clock_mhz", "sm.smem_per_sm_bytes", "sm.smem_per_cta_max_bytes",
          "sm.registers_per_sm", "sm.max_threads_per_sm", "sm.max_ctas_per_sm"}) {
      CAPTURE(path);
      CHECK(field(h100, path) == field(h200, path));
    }
    CHECK(a80.hbm.capacity_bytes.value == 2 * a40.hbm.capacity_bytes.value);
    CHECK(h200.hbm.bandwidth_gbps.value > h100.hbm.bandwidth_gbps.value);
    CHECK(h200.l2.size_bytes.value > h100.l2.size_bytes.value);
  }

  TEST_CASE("tensor_flops_per_s maps each dtype to its tensor-core peak") {
    const HardwareProfile p = iosim::parse_profile(ProfileText()
                                                       .value("compute.tensor_fp16_tflops", "100")
                                                       .value("compute.tensor_bf16_tflops", "90")
                                                       .value("compute.tensor_tf32_tflops", "50")
                                                       .value("compute.tensor_fp8_tflops", "200")
                                                       .value("compute.fp32_tflops", "7")
                                                       .str(),
                                                   "t.yaml");
    CHECK(p.tensor_flops_per_s(iosim::Dtype::fp16) == doctest::Approx(100e12));
    CHECK(p.tensor_flops_per_s(iosim::Dtype::bf16) == doctest::Approx(90e12));
    CHECK(p.tensor_flops_per_s(iosim::Dtype::fp32) == doctest::Approx(50e12));
    CHECK(p.tensor_flops_per_s(iosim::Dtype::fp8) == doctest::Approx(200e12));
    CHECK(p.fp32_flops_per_s() == doctest::Approx(7e12));
  }

  TEST_CASE("the fixture parses and every value lands in its field") {
    const ProfileText text;
    const HardwareProfile p = iosim::parse_profile(text.str(), "t.yaml");
    CHECK(p.name == "test-gpu");
    CHECK(p.description == "Test GPU");
    CHECK(p.source_file.empty());
    for (const Leaf& leaf : kLeaves) {
      CAPTURE(leaf.path());
      CHECK(field(p, leaf.path()) == doctest::Approx(std::stod(leaf.value)));
    }
    for (const auto& [path, source] : all_sources(p)) CHECK(source == "test");
  }

  TEST_CASE("property: every key is required") {
    for (const Leaf& leaf : kLeaves) {
      CAPTURE(leaf.path());
      CHECK(parse_error_of(ProfileText().drop(leaf.path()).str()) ==
            "t.yaml: missing required key '" + leaf.path() + "'");
      const std::string no_source = "{value: " + leaf.value + "}";
      CHECK(contains(parse_error_of(ProfileText().whole(leaf.path(), no_source).str()),
                     "t.yaml: missing required key '" + leaf.path() + ".source'"));
      const std::string no_value = "{source: \"x\"}";
      CHECK(contains(parse_error_of(ProfileText().whole(leaf.path(), no_value).str()),
                     "t.yaml: missing required key '" + leaf.path() + ".value'"));
    }
    for (const std::string top : {"name", "description"}) {
      std::string text = ProfileText().str();
      text.erase(text.find(top + ":"),
                 text.find('\n', text.find(top + ":")) + 1 - text.find(top + ":"));
      CHECK(parse_error_of(text) == "t.yaml: missing required key '" + top + "'");
    }
  }

  TEST_CASE("property: a misspelled key is unknown, located, and answered with a suggestion") {
    for (const Leaf& leaf : kLeaves) {
      CAPTURE(leaf.path());
      const std::string typo = leaf.key.substr(0, leaf.key.size() - 1);  // drop the last letter
      const ProfileText text = ProfileText().rename(leaf.path(), typo);
      const std::string line = std::to_string(text.line_of(leaf.section + "." + typo));
      // Both problems a typo makes, in one message: the unknown key first.
      CHECK(parse_error_of(text.str()) ==
            "t.yaml:" + line + ": unknown key '" + leaf.section + "." + typo + "' (did you mean '" +
                leaf.key + "'?)\nt.yaml: missing required key '" + leaf.path() + "'");
      // Inside a {value, source} map too.
      const std::string extra = "{value: " + leaf.value + ", source: \"x\", sourc: \"y\"}";
      CHECK(contains(parse_error_of(ProfileText().whole(leaf.path(), extra).str()),
                     "unknown key '" + leaf.path() + ".sourc' (did you mean 'source'?)"));
    }
    CHECK(contains(parse_error_of(ProfileText().append("hmb:\n  x: 1\n").str()),
                   "unknown key 'hmb' (did you mean 'hbm'?)"));
    CHECK(contains(parse_error_of(ProfileText().append("cache_policy: lru\n").str()),
                   "unknown key 'cache_policy'"));
    CHECK_FALSE(contains(parse_error_of(ProfileText().append("cache_policy: lru\n").str()),
                         "did you mean"));
  }

  TEST_CASE("property: zero and negative values are refused with the key and the number") {
    for (const Leaf& leaf : kLeaves) {
      CAPTURE(leaf.path());
      const std::string zero = parse_error_of(ProfileText().value(leaf.path(), "0").str());
      if (leaf.zero_ok) {
        CHECK(zero == "<no ConfigError thrown>");
      } else {
        CHECK(contains(zero, "t.yaml:" + std::to_string(ProfileText().line_of(leaf.path()))));
        CHECK(contains(zero, leaf.path() + " = 0 "));
      }
      const std::string negative = parse_error_of(ProfileText().value(leaf.path(), "-1").str());
      CHECK(contains(negative, leaf.path() + " = -1 "));
    }
  }

  TEST_CASE("property: wrong types are refused with the key path") {
    for (const Leaf& leaf : kLeaves) {
      CAPTURE(leaf.path());
      const std::string value_path = quoted(leaf.path() + ".value");
      CHECK(contains(parse_error_of(ProfileText().value(leaf.path(), "\"12\"").str()),
                     value_path + " must be " + (leaf.integer ? "an integer" : "a number") +
                         ", got the string \"12\""));
      CHECK(contains(parse_error_of(ProfileText().value(leaf.path(), "twelve").str()),
                     value_path + " must be"));
      CHECK(contains(
          parse_error_of(ProfileText().value(leaf.path(), "[1, 2]").str()),
          value_path + " must be " + (leaf.integer ? "an integer" : "a number") + ", got a list"));
      CHECK(contains(
          parse_error_of(ProfileText().value(leaf.path(), "").str()),
          value_path + " must be " + (leaf.integer ? "an integer" : "a number") + ", got nothing"));
      CHECK(contains(parse_error_of(ProfileText().whole(leaf.path(), leaf.value).str()),
                     quoted(leaf.path()) + " must be a map {value: <number>"));
      CHECK(contains(parse_error_of(ProfileText().source(leaf.path(), "\"\"").str()),
                     quoted(leaf.path() + ".source") + " must be a non-empty string"));
      CHECK(contains(parse_error_of(ProfileText().source(leaf.path(), "\"  \"").str()),
                     quoted(leaf.path() + ".source") + " must be a non-empty string"));
      CHECK(contains(parse_error_of(ProfileText().source(leaf.path(), "[a, b]").str()),
                     quoted(leaf.path() + ".source") + " must be a non-empty string"));
      if (leaf.integer) {
        CHECK(contains(parse_error_of(ProfileText().value(leaf.path(), "2.5").str()),
                       value_path + " must be an integer, got '2.5'"));
        CHECK(contains(parse_error_of(ProfileText().value(leaf.path(), "1e3").str()),
                       value_path + " must be an integer, got '1e3'"));
      } else {
        CHECK(contains(parse_error_of(ProfileText().value(leaf.path(), ".nan").str()),
                       value_path + " must be a finite number, got '.nan'"));
        // Exponent notation is a number too, and lands in the field.
        char exponent_form[32];
        std::snprintf(exponent_form, sizeof exponent_form, "%.6e", std::stod(leaf.value));
        const HardwareProfile p =
            iosim::parse_profile(ProfileText().value(leaf.path(), exponent_form).str(), "t.yaml");
        CHECK(field(p, leaf.path()) == doctest::Approx(std::stod(leaf.value)));
      }
    }
    CHECK(contains(parse_error_of(ProfileText().value("sm.count", "4294967296").str()),
                   "'sm.count.value' = 4294967296 is out of range"));
    CHECK(
        contains(parse_error_of(ProfileText().value("l2.size_bytes", "99999999999999999999").str()),
                 "'l2.size_bytes.value' = 99999999999999999999 is out of range"));
  }

  // Times stay finite and below the 1e30 s a sweep file may hold: a rate of 1e-300 made times of
  // 1e295 s that `report` refused in iosim's own sweep file, a latency of 1e300 infinite ones.
  TEST_CASE("property: every rate and latency far from any GPU's is refused, naming its range") {
    const std::vector<std::pair<std::string, std::string>> rates = {
        {"sm.smem_bandwidth_bytes_per_clk", "B/clk"},
        {"sm.l2_to_sm_bytes_per_clk", "B/clk"},
        {"compute.tensor_fp16_tflops", "TFLOP/s"},
        {"compute.tensor_bf16_tflops", "TFLOP/s"},
        {"compute.tensor_tf32_tflops", "TFLOP/s"},
        {"compute.tensor_fp8_tflops", "TFLOP/s"},
        {"compute.fp32_tflops", "TFLOP/s"},
        {"compute.sfu_ops_per_clk_per_sm", "ops/clk"},
        {"compute.mma_sync_flops_per_clk_per_sm", "FLOP/clk"},
        {"compute.int32_ops_per_clk_per_sm", "ops/clk"},
        {"l2.bandwidth_gbps", "GB/s"},
        {"hbm.bandwidth_gbps", "GB/s"}};
    for (const auto& rate : rates) {
      // Named, not a structured binding: CAPTURE's lambda cannot name one under clang 14.
      const std::string& key = rate.first;
      const std::string& unit = rate.second;
      for (const char* v : {"1e-300", "1e300"}) {
        CAPTURE(key);
        CAPTURE(v);
        const std::string error = parse_error_of(ProfileText().value(key, v).str());
        CHECK(contains(error, key + " = " + (v[2] == '-' ? "1e-300" : "1e+300") + " is outside ["));
        CHECK(contains(error, "] " + unit));
      }
    }
    for (const char* key :
         {"sm.smem_latency_cycles", "sm.setmaxnreg_cycles", "compute.fp32_latency_cycles",
          "compute.wgmma_latency_cycles", "l2.hit_latency_cycles", "hbm.latency_ns",
          "launch.kernel_overhead_us"}) {
      CAPTURE(key);
      CHECK(contains(parse_error_of(ProfileText().value(key, "1e300").str()),
                     std::string(key) + " = 1e+300 exceeds 1000000"));
    }
    // Both clocks have the same floor (the base clock's 1e-300 was accepted), and the fraction of
    // the HBM bandwidth reached that of the bandwidth (1e-300 made times of 1e295 s).
    for (const char* key : {"sm.boost_clock_mhz", "sm.base_clock_mhz"}) {
      CAPTURE(key);
      CHECK(contains(parse_error_of(ProfileText().value(key, "1e-300").str()),
                     std::string(key) + " = 1e-300 is below 1 MHz"));
    }
    CHECK(parse_error_of(ProfileText().value("sm.base_clock_mhz", "1").str()) ==
          "<no ConfigError thrown>");
    CHECK(contains(parse_error_of(ProfileText().value("hbm.achievable_fraction", "1e-300").str()),
                   "hbm.achievable_fraction = 1e-300 is below 1e-06"));
    CHECK(contains(parse_error_of(ProfileText().value("hbm.achievable_fraction", "1e-9").str()),
                   "hbm.achievable_fraction = 1e-09 is below 1e-06"));
  }

  TEST_CASE("property: L2 geometry is accepted exactly when sector | line | size") {
    int accepted = 0;
    int refused = 0;
    for (const int sector : {8, 16, 24, 32, 48, 64, 128}) {
      for (const int line : {32, 64, 96, 128, 192, 256}) {
        for (const std::int64_t size : {std::int64_t{1} << 20, std::int64_t{3} << 20,
                                        std::int64_t{50} << 20, std::int64_t{50} << 20 | 32}) {
          CAPTURE(sector);
          CAPTURE(line);
          CAPTURE(size);
          const std::string error =
              parse_error_of(ProfileText()
                                 .value("l2.sector_bytes", std::to_string(sector))
                                 .value("l2.line_bytes", std::to_string(line))
                                 .value("l2.size_bytes", std::to_string(size))
                                 .str());
          if (sector < 16) {  // the L2 model's state is per sector (1-byte ones: 1.6 GB)
            ++refused;
            CHECK(contains(error, "l2.sector_bytes = " + std::to_string(sector) + " is below 16"));
          } else if (line % sector != 0) {
            ++refused;
            CHECK(contains(error, "l2.sector_bytes = " + std::to_string(sector) +
                                      " does not divide l2.line_bytes = " + std::to_string(line)));
          } else if (size % line != 0) {
            ++refused;
            CHECK(contains(error, "l2.line_bytes = " + std::to_string(line) +
                                      " does not divide l2.size_bytes = " + std::to_string(size)));
          } else {
            ++accepted;
            CHECK(error == "<no ConfigError thrown>");
          }
        }
      }
    }
    CHECK(accepted > 20);
    CHECK(refused > 20);
  }

  TEST_CASE("boundaries: at capacity is accepted, capacity + 1 is refused") {
    const auto with = [](std::vector<std::pair<std::string, std::string>> edits) {
      ProfileText text;
      for (auto& [path, value] : edits) text.value(path, value);
      return parse_error_of(text.str());
    };
    const std::string ok = "<no ConfigError thrown>";
    // Shared memory: per-CTA opt-in plus the reserved share must fit in the SM.
    CHECK(with({{"sm.smem_per_cta_max_bytes", "232448"}}) == ok);
    CHECK(contains(with({{"sm.smem_per_cta_max_bytes", "232449"}}),
                   "sm.smem_per_cta_max_bytes + sm.smem_reserved_per_cta_bytes = 232449 + 1024 = "
                   "233473 exceeds sm.smem_per_sm_bytes = 233472"));
    CHECK(with({{"sm.smem_per_cta_max_bytes", "233472"},
                {"sm.smem_reserved_per_cta_bytes", "0"}}) == ok);
    CHECK(contains(with({{"sm.smem_per_cta_max_bytes", "233473"}}),
                   "sm.smem_per_cta_max_bytes = 233473 exceeds sm.smem_per_sm_bytes = 233472"));
    // Clocks.
    CHECK(with({{"sm.base_clock_mhz", "1980"}}) == ok);
    CHECK(contains(with({{"sm.base_clock_mhz", "1980.5"}}),
                   "sm.base_clock_mhz = 1980.5 exceeds sm.boost_clock_mhz = 1980"));
    // Registers.
    CHECK(with({{"sm.max_registers_per_thread", "65536"}}) == ok);
    CHECK(contains(with({{"sm.max_registers_per_thread", "65537"}}),
                   "sm.max_registers_per_thread = 65537 exceeds sm.registers_per_sm = 65536"));
    // Register reallocation: the minimum up to the maximum; a maximum of 0 is "none".
    CHECK(with({{"sm.setmaxnreg_min_registers", "256"}}) == ok);
    CHECK(contains(with({{"sm.setmaxnreg_min_registers", "264"}}),
                   "sm.setmaxnreg_min_registers = 264 exceeds sm.setmaxnreg_max_registers = 256"));
    CHECK(with({{"sm.setmaxnreg_max_registers", "0"}}) == ok);
    // CTAs per SM cannot exceed threads per SM.
    CHECK(with({{"sm.max_ctas_per_sm", "2048"}}) == ok);
    CHECK(contains(with({{"sm.max_ctas_per_sm", "2049"}}),
                   "sm.max_ctas_per_sm = 2049 exceeds sm.max_threads_per_sm = 2048"));
    // The achievable fraction of peak is in (0, 1], and no lower than 1e-6 (a rate's floor).
    CHECK(with({{"hbm.achievable_fraction", "1"}}) == ok);
    CHECK(with({{"hbm.achievable_fraction", "1e-6"}}) == ok);
    CHECK(contains(with({{"hbm.achievable_fraction", "1.000001"}}),
                   "hbm.achievable_fraction = 1.000001 is not in (0, 1]"));
    CHECK(contains(with({{"hbm.achievable_fraction", "0"}}),
                   "hbm.achievable_fraction = 0 is not in (0, 1]"));
  }

  TEST_CASE("document-level mistakes") {
    CHECK(contains(parse_error_of(""), "t.yaml: the profile is empty"));
    CHECK(contains(parse_error_of("\n# comment\n"), "t.yaml: the profile is empty"));
    CHECK(contains(parse_error_of("just text"), "t.yaml: the top level must be a map"));
    CHECK(contains(parse_error_of("- 1\n- 2\n"), "got a list"));
    // The name is one line of every table: a "\n" escape split the run's header line.
    std::string broken = ProfileText().str();
    broken.replace(broken.find("name: test-gpu"), 14, "name: \"H100\\nX\"");
    CHECK(contains(parse_error_of(broken),
                   "'name' must be one line of text: it holds the control character U+000A"));
    // Nested past the parser's limit: said so (it was "t.yaml:2:1: YAML syntax error: bad file").
    CHECK(contains(parse_error_of(std::string(1000, '[') + std::string(1000, ']') + "\n"),
                   "t.yaml: YAML nested too deep: lists and maps more than "));
    const std::string two = ProfileText().str() + "---\n" + ProfileText().str();
    CHECK(contains(parse_error_of(two), "t.yaml: holds 2 YAML documents"));
    // Syntax errors carry yaml-cpp's line and column (1-based).
    CHECK(
        contains(parse_error_of("name: x\nsm: {count: [1, 2\n"), "t.yaml:3:1: YAML syntax error"));
    CHECK(contains(parse_error_of("name: x\n  bad indent: 1\n"), "t.yaml:2:"));
    CHECK(contains(parse_error_of(ProfileText().append("[a, b]: 1\n").str()),
                   "keys must be plain names, got a list in the top level"));
    // Duplicates are refused, naming both lines.
    const std::string dup =
        ProfileText().str() + "launch:\n  kernel_overhead_us: {value: 1, source: \"x\"}\n";
    CHECK(contains(parse_error_of(dup), "duplicate key 'launch' (first at line"));
    // A section that is not a map.
    const std::string full = ProfileText().str();
    const std::string scalar_section = full.substr(0, full.find("launch:")) + "launch: 3\n";
    CHECK(contains(parse_error_of(scalar_section),
                   "'launch' must be a map of launch fields, got '3'"));
    // Names.
    std::string nameless = ProfileText().str();
    nameless.replace(0, nameless.find('\n'), "name: \"\"");
    CHECK(contains(parse_error_of(nameless), "t.yaml:1: 'name' must be a non-empty string"));
    std::string listed = ProfileText().str();
    listed.replace(0, listed.find('\n'), "name: [a, b]");
    CHECK(contains(parse_error_of(listed), "'name' must be a non-empty string, got a list"));
  }

  TEST_CASE("bad-profile corpus: each file fails with its expected message") {
    const fs::path dir = kDataDir / "bad_profiles";
    std::ifstream tsv(dir / "EXPECTED.tsv");
    REQUIRE(tsv.good());
    std::set<std::string> listed;
    std::string line;
    while (std::getline(tsv, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto tab = line.find('\t');
      REQUIRE(tab != std::string::npos);
      const std::string file = line.substr(0, tab);
      const std::string expected = line.substr(tab + 1);
      CAPTURE(file);
      listed.insert(file);
      CHECK(contains(expected, file));  // every expectation names the file
      const std::string message =
          config_error_of([&] { iosim::load_profile((dir / file).string()); });
      CHECK_MESSAGE(contains(message, expected), "got: " << message);
    }
    std::set<std::string> present;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".yaml") present.insert(entry.path().filename().string());
    }
    CHECK(listed == present);  // no file without an expectation, no expectation without a file
    CHECK(listed.size() >= 15);
  }

  TEST_CASE("load_profile: names, paths, and what is not there") {
    CHECK(config_error_of([] { iosim::load_profile("h10"); }) ==
          "unknown profile 'h10'; built-in profiles: a100-sxm4-40gb, a100-sxm4-80gb, "
          "h100-sxm5-80gb, h200-sxm-141gb (did you mean 'h100-sxm5-80gb'?)");
    CHECK(contains(config_error_of([] { iosim::load_profile("h200-sxm-141"); }),
                   "(did you mean 'h200-sxm-141gb'?)"));
    CHECK_FALSE(contains(config_error_of([] { iosim::load_profile("tpu"); }), "did you mean"));
    // Anything with a slash or a YAML extension is a path, even when it does not exist.
    CHECK(config_error_of([] { iosim::load_profile("missing.yaml"); }) ==
          "cannot read profile file 'missing.yaml': no such file");
    CHECK(contains(config_error_of([] { iosim::load_profile("no/such/profile"); }),
                   "cannot read profile file 'no/such/profile'"));
    CHECK(contains(config_error_of([] { iosim::load_profile(kDataDir.string() + "/"); }),
                   "it is a directory"));
    // A built-in file loads by path too, and remembers where it came from.
    const fs::path h100_file = fs::path(IOSIM_REPO_DIR) / "hwprofiles" / "h100-sxm5-80gb.yaml";
    const HardwareProfile p = iosim::load_profile(h100_file.string());
    CHECK(p.name == "h100-sxm5-80gb");
    CHECK(p.source_file == h100_file);
  }

  TEST_CASE("IOSIM_PROFILE_DIR replaces the built-in folder; built-in names must match stems") {
    TempDir dir;
    {
      std::ofstream(dir.path() / "mygpu.yaml") << ProfileText().str();  // name: test-gpu
      std::ofstream(dir.path() / "test-gpu.yaml") << ProfileText().str();
      std::ofstream(dir.path() / "notes.txt") << "not a profile\n";
    }
    const ScopedEnv env("IOSIM_PROFILE_DIR", dir.path().string());
    CHECK(iosim::builtin_profile_dir() == dir.path());
    CHECK(iosim::builtin_profile_names() == std::vector<std::string>{"mygpu", "test-gpu"});
    CHECK(iosim::load_profile("test-gpu").name == "test-gpu");
    CHECK(contains(config_error_of([] { iosim::load_profile("mygpu"); }),
                   "name 'test-gpu' must equal the file stem 'mygpu' for a built-in profile"));
    // The same file by path is a user file: any name is fine.
    CHECK(iosim::load_profile((dir.path() / "mygpu.yaml").string()).name == "test-gpu");
  }

  TEST_CASE("built-in profiles are embedded: byte for byte hwprofiles/, nothing read from there") {
    CHECK(iosim::builtin_profile_dir().empty());
    std::vector<std::string> stems;
    for (const auto& entry : fs::directory_iterator(fs::path(IOSIM_REPO_DIR) / "hwprofiles")) {
      if (entry.path().extension() != ".yaml") continue;
      const std::string stem = entry.path().stem().string();
      CAPTURE(stem);
      stems.push_back(stem);
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      CHECK(iosim::builtin_profile_text(stem) == text.str());
      CHECK(iosim::load_profile(stem).source_file == fs::path("hwprofiles") / (stem + ".yaml"));
    }
    std::sort(stems.begin(), stems.end());
    CHECK(stems == iosim::builtin_profile_names());
    CHECK(contains(config_error_of([] { iosim::builtin_profile_text("h100"); }),
                   "unknown profile 'h100'"));
  }

  TEST_CASE("every problem of a profile is reported at once, one line each") {
    // Three independent mistakes: a typo (unknown + missing), a quoted number, a bad fraction.
    const std::string text =
        ProfileText().rename("sm.count", "cout").value("l2.line_bytes", "\"128\"").str();
    const std::string message = config_error_of([&] { iosim::parse_profile(text, "gpu.yaml"); });
    CHECK(contains(message, "unknown key 'sm.cout' (did you mean 'count'?)"));
    CHECK(contains(message, "missing required key 'sm.count'"));
    CHECK(contains(message, "'l2.line_bytes.value' must be an integer"));
    CHECK(std::count(message.begin(), message.end(), '\n') == 2);  // three lines
    // Value checks run once every key reads, and all of them report.
    const std::string values =
        ProfileText().value("sm.count", "0").value("hbm.achievable_fraction", "1.5").str();
    const std::string m2 = config_error_of([&] { iosim::parse_profile(values, "gpu.yaml"); });
    CHECK(contains(m2, "sm.count = 0 must be > 0"));
    CHECK(contains(m2, "hbm.achievable_fraction = 1.5 is not in (0, 1]"));
    CHECK(std::count(m2.begin(), m2.end(), '\n') == 1);
  }

  TEST_CASE("the template has every key, once; filled in with nothing it names each source") {
    const std::vector<std::string> keys = iosim::profile_keys();
    CHECK(keys.size() == kLeaves.size());
    const std::string message =
        config_error_of([] { iosim::parse_profile(iosim::profile_template(), "template.yaml"); });
    for (const std::string& key : keys) {
      CAPTURE(key);
      CHECK(contains(message, "'" + key + ".source' must be"));
    }
    CHECK(std::count(message.begin(), message.end(), '\n') + 1 ==
          static_cast<std::ptrdiff_t>(keys.size()));
  }

  TEST_CASE("every key's row has a unit and a doc line; the docs' tables list every key once") {
    std::size_t rows = 0;
    iosim::profile_yaml::for_each_known_section([&](const char* section, const auto& fields) {
      const std::string table = iosim::profile_key_table(section, true);
      for (const auto& f : fields) {
        CAPTURE(section);
        CAPTURE(f.key);
        CHECK(std::string(f.unit) != "");
        CHECK(std::string(f.doc) != "");
        CHECK(std::string(f.doc).find('|') == std::string::npos);  // a Markdown table's cell
        CHECK(contains(table, std::string("| `") + f.key + "` | "));
        ++rows;
      }
      CHECK(static_cast<std::size_t>(std::count(table.begin(), table.end(), '\n')) ==
            fields.size() + 2);
    });
    const std::string all = iosim::profile_key_table("all", false);
    CHECK(static_cast<std::size_t>(std::count(all.begin(), all.end(), '\n')) == 2 * rows);
    for (const std::string& key : iosim::profile_keys()) CHECK(contains(all, key + " "));
    CHECK(contains(iosim::profile_key_table("sm", true),
                   "| `count` | integer | SMs | SMs on the chip | in (0, 4096] |\n"));
    CHECK(contains(iosim::profile_key_table("hbm", true), "in (0, 1], at least 1e-6 |"));
    CHECK(contains(config_error_of([] { iosim::profile_key_table("smm", true); }),
                   "did you mean 'sm'?"));
    // --set of an optional section's key on a profile without that section is refused (it was
    // dropped, the run named as if applied), each with what the section's absence means.
    for (const auto& section : iosim::profile_yaml::kOptionalSections) {
      CAPTURE(section.name);
      std::string key;
      iosim::profile_yaml::for_each_known_section([&](const char* name, const auto& fields) {
        if (std::string(name) == section.name) key = std::string(name) + "." + fields[0].key;
      });
      CHECK(config_error_of([&] {
              iosim::load_profile("a100-sxm4-40gb", {{key, "1"}});
            }) == "--set " + key + ": the profile has no " + section.name + " section (" +
                      section.without + ")");
    }
  }

  TEST_CASE("--set overrides: applied, renamed, checked as the YAML is, all errors at once") {
    using iosim::ProfileOverride;
    const HardwareProfile p = iosim::load_profile(
        "h100-sxm5-80gb", {{"l2.size_bytes", "20e6"}, {"hbm.bandwidth_gbps", "4000.5"}});
    CHECK(p.l2.size_bytes.value == 20000000);
    CHECK(p.l2.size_bytes.source == "--set on the command line");
    CHECK(p.hbm.bandwidth_gbps.value == 4000.5);
    CHECK(p.name == "h100-sxm5-80gb[l2.size_bytes=20000000;hbm.bandwidth_gbps=4000.5]");
    CHECK(p.sm.count.value == iosim::load_profile("h100-sxm5-80gb").sm.count.value);
    // A user file takes them too.
    TempDir dir;
    std::ofstream(dir.path() / "gpu.yaml") << ProfileText().str();
    CHECK(iosim::load_profile((dir.path() / "gpu.yaml").string(), {{"sm.count", "100"}})
              .sm.count.value == 100);
    // Bad overrides, all named in one message.
    const std::string bad = config_error_of([] {
      iosim::load_profile("h100-sxm5-80gb",
                          {{"l2.sise_bytes", "1"}, {"l2.size_bytes", "big"}, {"sm.count", "1.5"}});
    });
    CHECK(
        contains(bad, "--set l2.sise_bytes: unknown profile key (did you mean 'l2.size_bytes'?)"));
    CHECK(contains(bad, "--set l2.size_bytes=big: the value must be a number"));
    CHECK(contains(bad, "--set sm.count=1.5: sm.count takes a whole number"));
    // The profile's own checks apply to the new values.
    CHECK(contains(config_error_of([] {
                     iosim::load_profile("h100-sxm5-80gb", {{"l2.line_bytes", "100"}});
                   }),
                   "l2.sector_bytes = 32 does not divide l2.line_bytes = 100"));
    CHECK(contains(config_error_of([] {
                     iosim::load_profile("a100-sxm4-40gb", {{"sm.count", "0"}});
                   }),
                   "with --set sm.count=0"));
    CHECK(contains(config_error_of([] { iosim::parse_profile_overrides({"l2.size_bytes"}); }),
                   "--set 'l2.size_bytes' must be KEY=VALUE"));
  }

  TEST_CASE("clock_domains: optional; when present the L2 keeps its bandwidth at any SM clock") {
    // Without the section (the A100s: no one measured their L2 clock apart) the L2's bandwidth
    // scales with the SM clock, as before; with it (the H100 and H200, whose L2 Nsight Compute
    // reads at 1.68-1.71 GHz whatever the SM clock) it holds.
    const HardwareProfile plain = iosim::parse_profile(ProfileText().str(), "t.yaml");
    CHECK_FALSE(plain.clock_domains.present);
    const double boost = plain.sm.boost_clock_mhz.value;
    CHECK(plain.l2_bytes_per_s(boost) == doctest::Approx(7600e9));
    CHECK(plain.l2_bytes_per_s(boost / 2) == doctest::Approx(3800e9));
    const HardwareProfile own = iosim::parse_profile(
        ProfileText().append("clock_domains:\n  l2_mhz: {value: 1705, source: \"test\"}\n").str(),
        "t.yaml");
    CHECK(own.clock_domains.present);
    CHECK(own.clock_domains.l2_mhz.value == 1705);
    for (const double f : {0.5, 0.7, 0.85, 1.0}) {
      CHECK(own.l2_bytes_per_s(boost * f) == doctest::Approx(7600e9));
    }
    // Checked as every key is: a value, a source, positive, known keys only.
    CHECK(contains(
        parse_error_of(
            ProfileText().append("clock_domains:\n  l2_mhz: {value: 0, source: \"t\"}\n").str()),
        "clock_domains.l2_mhz"));
    CHECK(contains(
        parse_error_of(ProfileText().append("clock_domains:\n  l2_mhz: {value: 1705}\n").str()),
        "missing required key 'clock_domains.l2_mhz.source'"));
    CHECK(contains(
        parse_error_of(
            ProfileText().append("clock_domains:\n  l2_mz: {value: 1705, source: \"t\"}\n").str()),
        "did you mean 'l2_mhz'"));
    CHECK(iosim::load_profile("h200-sxm-141gb").clock_domains.present);
    CHECK(iosim::load_profile("h100-sxm5-80gb").clock_domains.present);
    CHECK_FALSE(iosim::load_profile("a100-sxm4-80gb").clock_domains.present);
    // --set reaches it.
    CHECK(iosim::load_profile("h200-sxm-141gb", {{"clock_domains.l2_mhz", "1500"}})
              .clock_domains.l2_mhz.value == 1500);
  }

  TEST_CASE("cta_dispatch: optional, read and checked as every section is") {
    const HardwareProfile plain = iosim::parse_profile(ProfileText().str(), "t.yaml");
    CHECK_FALSE(plain.cta_dispatch.present);
    const HardwareProfile own = iosim::parse_profile(
        ProfileText()
            .append("cta_dispatch:\n  slot_refill_cycles: {value: 380, source: \"test\"}\n")
            .str(),
        "t.yaml");
    CHECK(own.cta_dispatch.present);
    CHECK(own.cta_dispatch.slot_refill_cycles.value == 380);
    CHECK(iosim::profile_fingerprint(own) != iosim::profile_fingerprint(plain));
    CHECK(contains(parse_error_of(ProfileText()
                                      .append("cta_dispatch:\n  slot_refill_cycles: {value: -1, "
                                              "source: \"t\"}\n")
                                      .str()),
                   "cta_dispatch.slot_refill_cycles"));
    CHECK(contains(
        parse_error_of(
            ProfileText().append("cta_dispatch:\n  slot_refill_cycles: {value: 380}\n").str()),
        "missing required key 'cta_dispatch.slot_refill_cycles.source'"));
    CHECK(contains(parse_error_of(ProfileText()
                                      .append("cta_dispatch:\n  slot_refil_cycles: {value: 380, "
                                              "source: \"t\"}\n")
                                      .str()),
                   "did you mean 'slot_refill_cycles'"));
    // Measured on the H200; the H100 carries its figure; no A100 was measured.
    CHECK(iosim::load_profile("h200-sxm-141gb").cta_dispatch.present);
    CHECK(iosim::load_profile("h100-sxm5-80gb").cta_dispatch.present);
    CHECK_FALSE(iosim::load_profile("a100-sxm4-80gb").cta_dispatch.present);
    CHECK(iosim::load_profile("h200-sxm-141gb", {{"cta_dispatch.slot_refill_cycles", "0"}})
              .cta_dispatch.slot_refill_cycles.value == 0);
  }

  TEST_CASE("clusters: optional, read and checked as every section is") {
    const std::string section =
        "clusters:\n  sms_cluster_2: {value: 132, source: \"t\"}\n"
        "  sms_cluster_4: {value: 120, source: \"t\"}\n  sms_cluster_8: {value: 112, source: "
        "\"t\"}\n";
    const HardwareProfile plain = iosim::parse_profile(ProfileText().str(), "t.yaml");
    CHECK_FALSE(plain.clusters.present);
    const int sms = static_cast<int>(plain.sm.count.value);
    CHECK(plain.clusters.sms_for(8, sms) == sms);  // without the section: every SM
    const HardwareProfile own = iosim::parse_profile(ProfileText().append(section).str(), "t.yaml");
    REQUIRE(own.clusters.present);
    CHECK(iosim::profile_fingerprint(own) != iosim::profile_fingerprint(plain));
    // A cluster size takes the figure of the smallest listed size that holds it.
    const int own_sms = static_cast<int>(own.sm.count.value);
    CHECK(own.clusters.sms_for(1, own_sms) == own_sms);
    CHECK(own.clusters.sms_for(2, own_sms) == std::min(own_sms, 132));
    CHECK(own.clusters.sms_for(3, own_sms) == std::min(own_sms, 120));
    CHECK(own.clusters.sms_for(4, own_sms) == std::min(own_sms, 120));
    CHECK(own.clusters.sms_for(8, own_sms) == std::min(own_sms, 112));
    // More SMs than iosim allows, none, a missing source, a misspelt key.
    std::string too_many = section;
    too_many.replace(too_many.find("112"), 3, "9999");
    CHECK(contains(parse_error_of(ProfileText().append(too_many).str()),
                   "clusters.sms_cluster_8 = 9999 exceeds"));
    // A what-if GPU with fewer SMs keeps the figures, capped at its SMs.
    const HardwareProfile fewer = iosim::load_profile("h200-sxm-141gb", {{"sm.count", "64"}});
    CHECK(fewer.clusters.sms_for(4, 64) == 64);
    std::string zero = section;
    zero.replace(zero.find("120"), 3, "0");
    CHECK(contains(parse_error_of(ProfileText().append(zero).str()), "clusters.sms_cluster_4"));
    std::string unsourced = section;
    unsourced.replace(unsourced.find(", source: \"t\"}"), 14, "}");
    CHECK(contains(parse_error_of(ProfileText().append(unsourced).str()),
                   "missing required key 'clusters.sms_cluster_2.source'"));
    std::string misspelt = section;
    misspelt.replace(misspelt.find("sms_cluster_4"), 13, "sms_cluster4");
    CHECK(contains(parse_error_of(ProfileText().append(misspelt).str()),
                   "did you mean 'sms_cluster_4'"));
    // Measured on the H200 (120 SMs for clusters of 4 and 8); the H100 carries its figure; the
    // A100 has no clusters.
    const HardwareProfile h200 = iosim::load_profile("h200-sxm-141gb");
    REQUIRE(h200.clusters.present);
    CHECK(h200.clusters.sms_for(2, 132) == 132);
    CHECK(h200.clusters.sms_for(4, 132) == 120);
    CHECK(h200.clusters.sms_for(8, 132) == 120);
    CHECK(iosim::load_profile("h100-sxm5-80gb").clusters.present);
    CHECK_FALSE(iosim::load_profile("a100-sxm4-80gb").clusters.present);
    CHECK(iosim::load_profile("h200-sxm-141gb", {{"clusters.sms_cluster_4", "100"}})
              .clusters.sms_for(4, 132) == 100);
  }

  TEST_CASE("property: the fingerprint changes with every value and with nothing else") {
    // Memos key on it (the GEMM tile choice): a changed value must never answer from another
    // machine's entry; a name, a source or a reload must not miss.
    const HardwareProfile base = iosim::load_profile("h200-sxm-141gb");
    const std::string fp = iosim::profile_fingerprint(base);
    CHECK(fp == iosim::profile_fingerprint(iosim::load_profile("h200-sxm-141gb")));
    HardwareProfile renamed = base;
    renamed.name = "other";
    renamed.sm.count.source = "elsewhere";
    CHECK(iosim::profile_fingerprint(renamed) == fp);
    std::set<std::string> seen{fp};
    for (const std::string& key : iosim::profile_keys()) {
      CAPTURE(key);
      // Two values, in case the profile holds one of them already.
      std::set<std::string> fingerprints;
      int loaded = 0;
      for (const char* value : {"7", "11"}) {
        try {
          ++loaded;
          fingerprints.insert(
              iosim::profile_fingerprint(iosim::load_profile("h200-sxm-141gb", {{key, value}})));
        } catch (const ConfigError&) {
          --loaded;  // not a valid value for this key (the other cases check the refusals)
        }
      }
      fingerprints.erase(fp);
      // A value that loads and equals the profile's leaves the fingerprint; two that load cannot
      // both.
      CHECK(fingerprints.size() + 1 >= static_cast<std::size_t>(loaded));
      for (const std::string& f : fingerprints) CHECK(seen.insert(f).second);
    }
    CHECK(seen.size() > 20);
  }

  TEST_CASE("a missing built-in folder is a ConfigError that names it") {
    const ScopedEnv env("IOSIM_PROFILE_DIR", "/nonexistent/iosim/profiles");
    CHECK(contains(config_error_of([] { iosim::builtin_profile_names(); }),
                   "built-in profile directory '/nonexistent/iosim/profiles' does not exist"));
    CHECK(
        contains(config_error_of([] { iosim::load_profile("h100-sxm5-80gb"); }), "does not exist"));
  }
}

TEST_SUITE("dtype") {
  TEST_CASE("names round-trip and sizes") {
    for (const iosim::Dtype t :
         {iosim::Dtype::fp16, iosim::Dtype::bf16, iosim::Dtype::fp32, iosim::Dtype::fp8}) {
      CHECK(iosim::parse_dtype(iosim::dtype_name(t)) == t);
    }
    CHECK(iosim::dtype_bytes(iosim::Dtype::fp16) == 2);
    CHECK(iosim::dtype_bytes(iosim::Dtype::bf16) == 2);
    CHECK(iosim::dtype_bytes(iosim::Dtype::fp32) == 4);
    CHECK(iosim::dtype_bytes(iosim::Dtype::fp8) == 1);
  }

  TEST_CASE("unknown dtypes list the valid names") {
    CHECK(config_error_of([] { iosim::parse_dtype("e5m2"); }) ==
          "unknown dtype 'e5m2'; valid dtypes: fp16, bf16, fp32, fp8");
    CHECK(config_error_of([] { iosim::parse_dtype("f16"); }) ==
          "unknown dtype 'f16'; valid dtypes: fp16, bf16, fp32, fp8 (did you mean 'fp16'?)");
    CHECK(config_error_of([] { iosim::parse_dtype("float"); }) ==
          "unknown dtype 'float'; valid dtypes: fp16, bf16, fp32, fp8");
    CHECK(contains(config_error_of([] { iosim::parse_dtype("FP16 "); }), "unknown dtype"));
  }
}

TEST_SUITE("suggest") {
  TEST_CASE("edit distance") {
    CHECK(iosim::edit_distance("", "") == 0);
    CHECK(iosim::edit_distance("abc", "") == 3);
    CHECK(iosim::edit_distance("kitten", "sitting") == 3);
    CHECK(iosim::edit_distance("hmb", "hbm") == 1);  // adjacent transposition
    CHECK(iosim::edit_distance("Flash2", "flash2") == 0);
    CHECK(iosim::edit_distance("sector_byte", "sector_bytes") == 1);
    // Symmetric, and zero only for equal strings, over a small alphabet sweep.
    const std::vector<std::string> words{"", "a", "ab", "ba", "abc", "acb", "bca", "flash2"};
    for (const auto& a : words) {
      for (const auto& b : words) {
        CHECK(iosim::edit_distance(a, b) == iosim::edit_distance(b, a));
        CHECK((iosim::edit_distance(a, b) == 0) == (a == b));
      }
    }
  }

  TEST_CASE("did you mean") {
    const std::vector<std::string> algos{"standard",     "flash1",         "flash2",
                                         "block-sparse", "flash-decoding", "paged"};
    CHECK(iosim::did_you_mean("flsh2", algos) == " (did you mean 'flash2'?)");
    CHECK(iosim::did_you_mean("flash3", algos) == " (did you mean 'flash1'?)");  // first of ties
    CHECK(iosim::did_you_mean("paged", algos) == " (did you mean 'paged'?)");
    CHECK(iosim::did_you_mean("block", algos) == " (did you mean 'block-sparse'?)");  // prefix
    CHECK(iosim::did_you_mean("xyz", algos).empty());
    CHECK(iosim::did_you_mean("", algos).empty());
    CHECK(iosim::did_you_mean("f", algos).empty());  // one letter is not a prefix hint
    CHECK(iosim::did_you_mean("flash2", {}).empty());
    CHECK(iosim::closest_match("STANDARD", algos) == "standard");
  }
}
