#pragma once
// The options every command that takes a model shares: --model NAME|FILE.onnx, --batch, -p/--param
// NAME=VALUE for zoo parameters and --dim NAME=VALUE for an ONNX file's symbolic dimensions.
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

  // The request these options describe; throws LoomError for a malformed NAME=VALUE.
  models::ModelRequest request() const;
};

// Adds --batch, --dim and (for commands that take zoo models) --param to `cmd`; the model itself is
// added by the caller, as an option or a positional argument.
void add_model_size_options(CLI::App& cmd, ModelOptions& options, bool zoo_params = true);

}  // namespace loom::cli
