#pragma once
// Writers of `iosim layer` results: they only format what simulate_layer() produced.
#include <nlohmann/json.hpp>
#include <string>

#include "api/layer.hpp"
#include "api/layer_flags.hpp"

namespace iosim {

/// The request, the model, every op of the layer, the step's tail and the totals.
nlohmann::json layer_to_json(const LayerReport& rep);

/// One row per op (the layer's, then the step's tail), then the layer and step totals.
std::string layer_table(const LayerReport& rep);

/// CSV, one row per op (header first); the `scope` column says layer or step.
std::string layer_csv(const LayerReport& rep);

/// The HBM bytes an op writes as the writers count them: its writes and the lines it leaves dirty
/// in L2.
std::uint64_t layer_hbm_written(const Counters& c);

/// layer_table() of each point; with axes, each after a line naming its point ("== point 2 of 4:
/// --seq 1024").
std::string layer_sweep_table(const LayerSweepRun& run);

/// layer_csv()'s rows of every point under one header, each row after a column per axis ("seq"):
/// for one point without axes, layer_csv().
std::string layer_sweep_csv(const LayerSweepRun& run);

}  // namespace iosim
