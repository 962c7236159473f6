#pragma once
// One way for every command to get a model: a zoo name with parameter values, a model written in
// the spec language (`FILE.loom:NAME`, or the name of one the library declares), an .onnx file,
// or a graph file (`loom-pcg` JSON, as `loom import --out` writes it).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/models/onnx_import.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::models {

struct ModelRequest {
  std::string model;   // a zoo name, FILE.loom:NAME, a library model's name, or a path ending in .onnx or .json
  ParamValues params;  // zoo parameters or a spec model's sizes
  OnnxImportOptions onnx;
};

struct LoadedModel {
  std::string name;  // the zoo name or the file's path
  bool from_onnx = false;
  pcg::Graph graph;
  NamedValues constants;           // the values an ONNX file gives weights and inputs, by node name
  std::set<std::string> fixed;     // weights that are constants of the model (ImportedModel::fixed)
  std::vector<std::string> notes;  // import notes
};

bool is_onnx_path(const std::string& model);
bool is_graph_path(const std::string& model);

// `FILE.loom:NAME` split into the file and the model's name.
struct SpecModelRef {
  std::string file;
  std::string name;
};
std::optional<SpecModelRef> spec_model_ref(const std::string& model);

// The spec paths a command loads for `model`: `paths`, and the file of a `FILE.loom:NAME` model
// (whose own operators the library must hold).
std::vector<std::string> spec_paths_for(std::vector<std::string> paths, const std::string& model);

// Throws LoomError: an unknown name (listing the zoo and the library's models), a file that does
// not declare the model (listing those it does), sizes the model does not have, parameters given to an ONNX or graph
// file, import errors, a graph file that does not read (naming the file and the JSON path).
LoadedModel load_model(const spec::Library& library, const ModelRequest& request);

// "name=value" into `values`; throws LoomError naming the text when it is malformed.
void parse_assignment(const std::string& text, std::map<std::string, std::int64_t>& values);

}  // namespace loom::models
