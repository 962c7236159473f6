#include "loom/models/load.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph_json.hpp"

namespace loom::models {

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

pcg::Graph read_graph_file(const std::string& path, const spec::Library& library) {
  std::ifstream in(path);
  if (!in) throw LoomError(path + ": cannot open the graph file");
  try {
    return pcg::graph_from_json(nlohmann::json::parse(in), library);
  } catch (const nlohmann::json::parse_error& e) {
    throw LoomError(path + ": not valid JSON: " + e.what());
  } catch (const LoomError& e) {
    throw LoomError(path + ": " + e.what());
  }
}

}  // namespace

bool is_onnx_path(const std::string& model) { return ends_with(model, ".onnx"); }
bool is_graph_path(const std::string& model) { return ends_with(model, ".json"); }

LoadedModel load_model(const spec::Library& library, const ModelRequest& request) {
  LoadedModel out;
  out.name = request.model;
  if (is_onnx_path(request.model)) {
    if (!request.params.empty()) {
      throw LoomError("model parameters (" + request.params.begin()->first +
                      ", ...) apply to zoo models; an ONNX file's sizes are set with its symbolic dimensions");
    }
    ImportedModel imported = import_onnx_file(request.model, library, request.onnx);
    out.from_onnx = true;
    out.graph = std::move(imported.graph);
    out.constants = std::move(imported.constants);
    out.fixed = std::move(imported.fixed);
    out.notes = std::move(imported.notes);
    return out;
  }
  if (is_graph_path(request.model)) {
    if (!request.params.empty()) {
      throw LoomError("model parameters (" + request.params.begin()->first + ", ...) apply to zoo models; the graph in " + request.model +
                      " has its sizes already");
    }
    out.graph = read_graph_file(request.model, library);
    return out;
  }
  out.graph = build_model(library, request.model, request.params);
  return out;
}

void parse_assignment(const std::string& text, std::map<std::string, std::int64_t>& values) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw LoomError("'" + text + "' is not NAME=VALUE");
  }
  const std::string name = text.substr(0, eq), value = text.substr(eq + 1);
  std::size_t used = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size()) throw LoomError("'" + text + "': the value '" + value + "' is not an integer");
  values[name] = v;
}

}  // namespace loom::models
