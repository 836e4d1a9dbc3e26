// `iosim models`: the built-in model configurations (models/*.yaml) that `iosim layer --model`
// takes, and the keys of a model file, from their rows (transformer/model_schema.hpp), as
// `iosim profiles` is for hardware profiles.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "sim/base/errors.hpp"
#include "transformer/model_config.hpp"
#include "transformer/model_schema.hpp"

namespace iosim::cli {

Action add_models_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "models", "list the built-in transformer models (iosim layer --model) and a model's keys");
  struct Flags {
    bool keys = false;
    std::string format = "text";
    bool schema = false;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_flag("--keys", f->keys,
                "print a model file's keys: type, the checks a value must pass, and what it is "
                "(the config.json key it comes from)");
  cmd->add_option("--format", f->format, "--keys: text | md (models/README.md's table)")
      ->check(CLI::IsMember({"text", "md"}))
      ->capture_default_str();
  cmd->add_flag("--schema", f->schema,
                "print the JSON Schema of a model file read as JSON (schemas/model.schema.json)");
  return [f] {
    if (f->keys && f->schema) throw ConfigError("--keys and --schema: give one of them");
    if (f->schema) {
      write_stdout(model_json_schema());
      return 0;
    }
    if (f->format != "text" && !f->keys) throw ConfigError("--format: only with --keys");
    if (f->keys) {
      write_stdout(model_key_table(f->format == "md"));
      return 0;
    }
    std::string out;
    for (const std::string& name : builtin_model_names()) {
      const ModelConfig m = load_model_config(name);
      out += fmt::format(
          "{:<13} {:<18} {:>3} layers  hidden {:>5}  heads {:>3}/{:<2} x {:>3}  MLP {}\n", name,
          m.description, m.layers, m.hidden_size, m.attention_heads, m.kv_heads, m.head_dim,
          m.intermediate_size);
    }
    write_stdout(out);
    return 0;
  };
}

}  // namespace iosim::cli
