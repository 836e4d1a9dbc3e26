#pragma once
// Writers of `iosim layer` results: they only format what simulate_layer() produced.
#include <nlohmann/json.hpp>
#include <string>

#include "api/layer.hpp"

namespace iosim {

/// The request, the model, every op of the layer, the step's tail and the totals.
nlohmann::json layer_to_json(const LayerReport& rep);

/// One row per op (the layer's, then the step's tail), then the layer and step totals.
std::string layer_table(const LayerReport& rep);

/// CSV, one row per op (header first); the `scope` column says layer or step.
std::string layer_csv(const LayerReport& rep);

}  // namespace iosim
