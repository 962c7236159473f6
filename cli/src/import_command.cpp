#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/models/load.hpp"
#include "loom/models/model_stats.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph_json.hpp"
#include "model_options.hpp"

namespace loom::cli {
namespace {

struct ImportOptions {
  ModelOptions model;
  std::string out;
  std::vector<std::string> specs;
  bool json = false;
  bool quiet = false;
};

// Writes next to the target and renames, so that a failed write leaves an existing file intact.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      std::remove(temp.c_str());
      throw LoomError({{{path, 0, 0}, "cannot write the file"}});
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::remove(temp.c_str());
    throw LoomError({{{path, 0, 0}, "cannot write the file: " + ec.message()}});
  }
}

int run_import(const ImportOptions& opt) {
  if (!models::is_onnx_path(opt.model.model)) {
    std::cerr << "loom import: '" << opt.model.model << "' is not an .onnx file\n";
    return 2;
  }
  const auto lib = spec::Library::load(opt.model.spec_paths(opt.specs));
  if (!opt.json && !opt.quiet) std::cerr << "importing " << opt.model.model << "\n";
  const models::LoadedModel loaded = models::load_model(lib, opt.model.request(lib));
  const models::ModelStats stats = models::model_stats(loaded.graph, lib);
  if (!opt.out.empty()) write_atomically(opt.out, pcg::graph_to_json(loaded.graph).dump(1) + "\n");
  if (opt.json) {
    nlohmann::json out = {{"model", loaded.name}, {"notes", loaded.notes}, {"out", opt.out}};
    out["stats"] = stats;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& note : loaded.notes) std::cout << "note: " << note << "\n";
  std::cout << "imported " << loaded.name << ": " << stats.operators << " operators, " << stats.weights << " weights (" << stats.parameters
            << " parameters), " << stats.inputs << " inputs, " << loaded.graph.outputs().size() << " outputs";
  if (!opt.out.empty()) std::cout << "; graph written to " << opt.out;
  std::cout << "\n";
  return 0;
}

}  // namespace

void add_import_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<ImportOptions>();
  auto* cmd = app.add_subcommand(
      "import",
      "Import an ONNX model as a PCG over the operator library: weights from initializers (or graph inputs in weight "
      "positions), shape arithmetic folded, and the patterns exporters write for one operator fused by the proved "
      "import rules (GELU's erf form, the decomposed LayerNorm; see --import-rules). Every unsupported operator is reported at once, "
      "naming its node; nothing is written then. With --out, the graph is saved as loom-pcg JSON, which every "
      "command that takes --model reads.");
  cmd->add_option("model", opt->model.model, "the .onnx file")->required();
  cmd->add_option("-o,--out", opt->out, "write the graph as JSON to this file");
  cmd->add_option("--specs", opt->specs, "spec files or directories of the operator library (default: bundled specs/)");
  cmd->add_flag("--json", opt->json, "print the summary as JSON (model, notes, out, stats)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no progress output");
  add_model_size_options(*cmd, opt->model, false);
  cmd->callback([opt, &status] { status = run_import(*opt); });
}

}  // namespace loom::cli
