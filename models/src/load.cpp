#include "loom/models/load.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "loom/interpreter/model_graph.hpp"
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

std::string library_models(const spec::Library& library) {
  std::string names;
  for (const spec::ModelDecl* m : library.models()) names += (names.empty() ? "" : ", ") + m->name;
  return names.empty() ? "none" : names;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Whether a declaration read from `declared` comes from `given`: the same file, or one of the same
// text (the library reads a text once, under the first path it meets it by).
bool same_file(const std::string& declared, const std::string& given) {
  std::error_code ec;
  if (std::filesystem::equivalent(declared, given, ec)) return true;
  if (!std::filesystem::is_regular_file(given, ec)) return false;
  const std::string text = text_of(given);
  return !text.empty() && text == text_of(declared);
}

}  // namespace

std::optional<SpecModelRef> spec_model_ref(const std::string& model) {
  const auto colon = model.rfind(".loom:");
  if (colon == std::string::npos) return std::nullopt;
  return SpecModelRef{model.substr(0, colon + 5), model.substr(colon + 6)};
}

std::vector<std::string> spec_paths_for(std::vector<std::string> paths, const std::string& model) {
  if (auto ref = spec_model_ref(model)) paths.push_back(ref->file);
  return paths;
}

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
  if (auto ref = spec_model_ref(request.model)) {
    if (ref->name.empty()) throw LoomError(request.model + ": name the model after the colon, FILE.loom:NAME");
    if (std::error_code ec; std::filesystem::is_directory(ref->file, ec))
      throw LoomError(request.model + ": " + ref->file + " is a directory; FILE.loom:NAME names the file that declares the model");
    const spec::ModelDecl* decl = library.find_model(ref->name);
    if (!decl || !same_file(decl->loc.file, ref->file)) {
      std::string declared;
      for (const spec::ModelDecl* m : library.models())
        if (same_file(m->loc.file, ref->file)) declared += (declared.empty() ? "" : ", ") + m->name;
      throw LoomError(ref->file + " declares no model '" + ref->name + "'" + (declared.empty() ? "" : " (it declares " + declared + ")"));
    }
    // Absolute, so that a plan made for the model finds its file from any directory.
    out.name = std::filesystem::absolute(ref->file).lexically_normal().string() + ":" + ref->name;
    out.graph = spec::build_model_graph(library, *decl, request.params);
    return out;
  }
  if (!find_model(request.model)) {
    if (const spec::ModelDecl* decl = library.find_model(request.model)) {
      out.graph = spec::build_model_graph(library, *decl, request.params);
      return out;
    }
    std::string zoo;
    for (const ModelInfo& m : model_zoo()) zoo += (zoo.empty() ? "" : ", ") + m.name;
    throw LoomError("unknown model '" + request.model + "'; the zoo has: " + zoo + "; the spec library declares: " +
                    library_models(library) + " (a model of the spec language in another file is FILE.loom:NAME)");
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
