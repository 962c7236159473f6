#include "model_options.hpp"

#include "loom/search/plan_model.hpp"

#include "loom/verifier/rule_selection.hpp"
#include "number_checks.hpp"

namespace loom::cli {

models::ModelRequest ModelOptions::request(const spec::Library& library) const {
  models::ModelRequest r;
  r.model = model;
  for (const std::string& p : params) models::parse_assignment(p, r.params);
  for (const std::string& d : dims) models::parse_assignment(d, r.onnx.dims);
  if (batch) {
    if (models::is_onnx_path(model)) {
      r.onnx.default_dim = *batch;
      r.onnx.default_dim_required = true;
    } else {
      r.params["batch"] = *batch;
    }
  }
  if (models::is_onnx_path(model)) {
    verifier::ImportRules rules = verifier::import_rules(library, import_rules);
    r.onnx.fusion_rules = std::move(rules.rules);
    r.onnx.fusion_notes = std::move(rules.left_out);
  } else if (!import_rules.empty()) {
    throw LoomError("--import-rules fuses the patterns of an ONNX file; " + model + " is not one");
  }
  return r;
}

std::vector<std::string> ModelOptions::spec_paths(const std::vector<std::string>& specs, const std::string& plan) const {
  std::vector<std::string> paths = models::spec_paths_for(spec::Library::paths_or_bundled(specs), model);
  if (!plan.empty()) paths = models::spec_paths_for(std::move(paths), search::model_of_plan(plan));
  return paths;
}

void add_model_size_options(CLI::App& cmd, ModelOptions& options, bool zoo_params) {
  cmd.add_option("--batch", options.batch,
                 "batch size: a zoo model's `batch` parameter, or for an ONNX file every symbolic dimension not "
                 "given with --dim (a file exported with static shapes at a batch of 1 is re-batched where the batch traces through it)")
      ->check(positive_number());
  if (zoo_params) {
    cmd.add_option("-p,--param", options.params,
                   "a zoo model's parameter or a spec model's size, NAME=VALUE (see `loom show --list`); repeat it for several")
        ->allow_extra_args(false);
  }
  cmd.add_option("--dim", options.dims, "an ONNX symbolic dimension, NAME=VALUE (default 1); repeat it for several")
      ->allow_extra_args(false);
  cmd.add_option("--import-rules", options.import_rules,
                 "proved rule libraries whose rules fuse an ONNX file's exported patterns once it is imported (default: the "
                 "bundled specs/rules/onnx.verified.json: GELU's erf form, the decomposed LayerNorm); each rule must be proved, as `loom "
                 "verify` writes them")
      ->check(CLI::ExistingFile);
}

CLI::Option* add_model_options(CLI::App& cmd, ModelOptions& options) {
  CLI::Option* model =
      cmd.add_option("--model", options.model,
                     "a zoo model name (loom show --list), a model written in the spec language (FILE.loom:NAME, or the name of one "
                     "the --specs library declares), an .onnx file, or a graph file (loom-pcg JSON, as loom import --out writes)");
  add_model_size_options(cmd, options);
  return model;
}

}  // namespace loom::cli
