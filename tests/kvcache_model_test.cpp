// `iosim kvcache --model NAME`: the cache's shape from a model file. Property: every built-in
// model, in every KV dtype, gives the run the same flags typed from the model's keys give (MLA:
// one latent row of kv_lora_rank + qk_rope_head_dim columns, as the decode layer reads it);
// goldens for DeepSeek-V3 and Llama-3-8B; a flag beside --model replaces the model's value; a
// sliding window is noted, not applied; the refusals.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "api/kvcache_flags.hpp"
#include "reports/kvcache_writers.hpp"
#include "sim/base/errors.hpp"
#include "transformer/model_config.hpp"

using namespace iosim;

namespace {

// A small run on a fixed budget, so that the capacities compare too.
KvCacheFlags small_run(std::set<std::string>& given) {
  KvCacheFlags f;
  f.kv_budget_bytes = 4e9;
  f.requests = 20;
  given = {"--kv-budget-bytes", "--requests"};
  return f;
}

}  // namespace

TEST_CASE("kvcache --model property: each built-in model equals its keys typed as flags") {
  const std::vector<std::string> names = builtin_model_names();
  REQUIRE(names.size() >= 5);
  for (const std::string& name : names) {
    const ModelConfig model = load_model_config(name);
    for (const char* dtype : {"fp16", "bf16", "fp32", "fp8"}) {
      CAPTURE(name);
      CAPTURE(dtype);
      std::set<std::string> given;
      KvCacheFlags by_model = small_run(given);
      KvCacheFlags typed = by_model;
      std::set<std::string> typed_given = given;
      by_model.model = name;
      by_model.dtype = dtype;
      given.insert({"--model", "--dtype"});
      typed.dtype = dtype;
      typed.layers = model.layers;
      if (model.kv_lora_rank > 0) {
        typed.kv_heads = 1;
        typed.head_dim = model.kv_lora_rank + model.qk_rope_head_dim;
        typed.latent_dim = model.kv_lora_rank;
        typed_given.insert("--latent-dim");
      } else {
        typed.kv_heads = model.kv_heads;
        typed.head_dim = model.head_dim;
      }
      typed_given.insert({"--layers", "--kv-heads", "--head-dim", "--dtype"});
      const KvCacheRun a = run_kvcache(by_model, given);
      const KvCacheRun b = run_kvcache(typed, typed_given);
      REQUIRE(a.results.size() == b.results.size());
      for (std::size_t i = 0; i < a.results.size(); ++i) {
        const kvcache::ModelShape &ma = a.results[i].config.model, &mb = b.results[i].config.model;
        CHECK(ma.bytes_per_token() == mb.bytes_per_token());
        CHECK(ma.latent_dim == mb.latent_dim);
        CHECK(a.results[i].capacity_tokens == b.results[i].capacity_tokens);
        CHECK(a.results[i].summary.finished == b.results[i].summary.finished);
      }
      CHECK(a.model == name);
      CHECK(b.model.empty());
      const nlohmann::json j = kvcache_to_json(a);
      CHECK(j.at("model").at("name") == name);
      CHECK(!kvcache_to_json(b).at("model").contains("name"));
      // The window is noted, never applied: the note exactly when the model has one.
      CHECK(a.notes.size() == (model.sliding_window > 0 ? 1u : 0u));
      CHECK(j.contains("notes") == (model.sliding_window > 0));
      CHECK(kvcache_table(a, false).find("Model: " + name + "\n") != std::string::npos);
    }
  }
}

TEST_CASE("kvcache --model golden: DeepSeek-V3's latent row and Llama-3-8B's K and V in bf16") {
  struct Golden {
    const char* name;
    std::int64_t bytes, latent;
  };
  // One latent row of 512 + 64 columns x 61 layers x 2 B; 2 (K, V) x 32 layers x 8 heads x 128 x 2.
  const Golden goldens[] = {{"deepseek-v3", 70'272, 512}, {"llama-3-8b", 131'072, 0}};
  for (const Golden& g : goldens) {
    const std::string name = g.name;
    CAPTURE(name);
    std::set<std::string> given;
    KvCacheFlags f = small_run(given);
    f.model = name;
    f.dtype = "bf16";
    given.insert({"--model", "--dtype"});
    const KvCacheRun run = run_kvcache(f, given);
    REQUIRE(!run.results.empty());
    CHECK(run.results.front().config.model.bytes_per_token() == g.bytes);
    CHECK(run.results.front().config.model.latent_dim == g.latent);
    CHECK(kvcache_to_json(run).at("model").at("bytes_per_token") == g.bytes);
  }
}

TEST_CASE("kvcache --model: a shape flag beside it replaces the model's value") {
  std::set<std::string> given;
  KvCacheFlags f = small_run(given);
  f.model = "llama-3-8b";
  f.layers = 16;
  given.insert({"--model", "--layers"});
  const KvCacheRun run = run_kvcache(f, given);
  REQUIRE(!run.results.empty());
  CHECK(run.results.front().config.model.layers == 16);
  CHECK(run.results.front().config.model.kv_heads == 8);
  CHECK(run.results.front().config.model.bytes_per_token() == 2 * 16 * 8 * 128 * 2);
  // DeepSeek-V3 with its latent replaced: still one row a token, V its first 256 columns.
  f.model = "deepseek-v3";
  f.latent_dim = 256;
  given = {"--kv-budget-bytes", "--requests", "--model", "--latent-dim"};
  const KvCacheRun mla = run_kvcache(f, given);
  REQUIRE(!mla.results.empty());
  CHECK(mla.results.front().config.model.latent_dim == 256);
  CHECK(mla.results.front().config.model.bytes_per_token() == 61 * 576 * 2);
}

TEST_CASE("kvcache --model: the sliding window is noted, not applied") {
  std::set<std::string> given;
  KvCacheFlags f = small_run(given);
  f.model = "mistral-7b";
  given.insert("--model");
  const KvCacheRun run = run_kvcache(f, given);
  REQUIRE(run.notes.size() == 1);
  CHECK(run.notes.front().find("window would bound each sequence's cache at 4096 tokens") !=
        std::string::npos);
  CHECK(run.notes.front().find("not applied") != std::string::npos);
  CHECK(kvcache_table(run, false).find("Note: mistral-7b's sliding window") != std::string::npos);
  CHECK(kvcache_to_json(run).at("notes").size() == 1);
}

TEST_CASE("kvcache --model: an unknown model and a missing shape are refused") {
  std::set<std::string> given;
  KvCacheFlags f = small_run(given);
  f.model = "llama-9";
  given.insert("--model");
  // The built-in models listed, as `iosim layer --model` lists them.
  CHECK_THROWS_WITH_AS(run_kvcache(f, given),
                       doctest::Contains("unknown model 'llama-9'; built-in models: deepseek-v3"),
                       ConfigError);
  given.erase("--model");
  for (const char* flag : {"--layers", "--kv-heads", "--head-dim"}) {
    CAPTURE(flag);
    std::set<std::string> shape = given;
    shape.insert({"--layers", "--kv-heads", "--head-dim"});
    shape.erase(flag);
    f.layers = 2;
    f.kv_heads = 2;
    f.head_dim = 64;
    const std::string message = std::string(flag) + " is required (or --model NAME)";
    CHECK_THROWS_WITH_AS(run_kvcache(f, shape), doctest::Contains(message.c_str()), ConfigError);
  }
}
