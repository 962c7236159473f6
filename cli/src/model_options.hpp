#pragma once
// The options every command that takes a model shares: --model NAME|FILE.onnx, --batch, -p/--param
// NAME=VALUE for zoo parameters, and for an ONNX file --dim NAME=VALUE for its symbolic dimensions
// and --import-rules for the proved rules its exported patterns are fused with.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "loom/models/load.hpp"

namespace loom::cli {

struct ModelOptions {
  std::string model;
  std::optional<std::int64_t> batch;
  std::vector<std::string> params;
  std::vector<std::string> dims;
  std::vector<std::string> import_rules;

  // The request these options describe, an ONNX file's with the proved import rules it is fused
  // with; throws LoomError for a malformed NAME=VALUE or an import rule without a valid proof.
  models::ModelRequest request(const spec::Library& library) const;

  // What --specs means for this model: the given paths (or the bundled library), and the files of
  // FILE.loom:NAME models: this one and the one `plan` was made for.
  std::vector<std::string> spec_paths(const std::vector<std::string>& specs, const std::string& plan = "") const;
};

// Adds --batch, --dim and (for commands that take zoo models) --param to `cmd`; the model itself is
// added by the caller, as an option or a positional argument.
void add_model_size_options(CLI::App& cmd, ModelOptions& options, bool zoo_params = true);

// Adds --model (a zoo name, an ONNX file or a graph file) and the size options; returns --model.
CLI::Option* add_model_options(CLI::App& cmd, ModelOptions& options);

}  // namespace loom::cli
