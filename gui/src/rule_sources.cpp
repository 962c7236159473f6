#include "loom/gui/rule_sources.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

#include "loom/pcg/diagnostic.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/rule_loading.hpp"

namespace loom::gui {
namespace {

namespace fs = std::filesystem;

std::string canonical(const std::string& path) { return fs::weakly_canonical(path).string(); }

std::mutex paths_mutex;               // guards base_paths
std::vector<std::string> base_paths;  // as given to --specs; empty for the bundled specs
std::mutex library_mutex;             // guards base and its loading
std::shared_ptr<const spec::Library> base;
std::vector<std::string> base_loaded_from;  // the paths `base` was loaded from

// Whether `file` is one of the base paths or lies in one of their folders, component by component.
bool under_base_specs(const std::string& file) {
  const fs::path path = canonical(file);
  for (const auto& entry : base_spec_paths()) {
    const fs::path dir = canonical(entry);
    if (std::mismatch(dir.begin(), dir.end(), path.begin(), path.end()).first == dir.end()) return true;
  }
  return false;
}

}  // namespace

void use_base_specs(const std::vector<std::string>& paths) {
  for (const auto& p : paths)
    if (!fs::exists(p)) throw LoomError("--specs: no such file or directory '" + p + "'");
  std::lock_guard lock(paths_mutex);
  base_paths = paths;
}

std::vector<std::string> base_spec_paths() {
  std::lock_guard lock(paths_mutex);
  return spec::Library::paths_or_bundled(base_paths);
}

std::shared_ptr<const spec::Library> base_library() {
  std::lock_guard lock(library_mutex);
  const std::vector<std::string> paths = base_spec_paths();
  if (!base || base_loaded_from != paths) {
    base = std::make_shared<const spec::Library>(spec::Library::load(paths));
    base_loaded_from = paths;
  }
  return base;
}

std::shared_ptr<const spec::Library> base_library_with(const std::vector<std::string>& files) {
  if (files.empty()) return base_library();
  std::vector<std::string> paths = base_spec_paths();
  paths.insert(paths.end(), files.begin(), files.end());
  return std::make_shared<const spec::Library>(spec::Library::load(paths));
}

pcg::RuleLibrary rules_declared_in(const spec::Library& library, const std::string& file) {
  pcg::RuleLibrary out;
  const std::string wanted = canonical(file);
  for (const auto* r : library.rules())
    if (r->loc.file == file || canonical(r->loc.file) == wanted) {
      out.rules.push_back(verifier::rule_of_declaration(library, *r));
    }
  return out;
}

RuleSource load_rule_source(const std::string& path) {
  RuleSource source;
  if (fs::path(path).extension() == ".loom") {
    if (!fs::exists(path)) throw LoomError(path + ": cannot open file");
    source.library = base_library_with({path});
    source.rules = rules_declared_in(*source.library, path);
    source.rules.specs = {canonical(path)};
    return source;
  }
  std::ifstream in(path);
  if (!in) throw LoomError(path + ": cannot open the rule library");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw LoomError(path + ": not valid JSON: " + e.what());
  }
  // Spec files outside the base library (a user's new operators) are loaded besides it.
  std::vector<std::string> user_specs;
  if (json.is_object() && json.contains("specs") && json["specs"].is_array())
    for (const auto& s : json["specs"])
      if (s.is_string() && fs::exists(s.get<std::string>()) && !under_base_specs(s.get<std::string>()))
        user_specs.push_back(s.get<std::string>());
  source.library = base_library_with(user_specs);
  try {
    source.rules = pcg::rule_library_from_json(json, *source.library);
  } catch (const LoomError& e) {
    throw LoomError(path + ": " + e.what());
  }
  // Shown as a reader must take them: a record that no longer matches its rule reads stale.
  const verifier::ProofChecker checker(*source.library);
  for (pcg::Rule& rule : source.rules.rules) rule.verification = checker.standing(rule);
  return source;
}

}  // namespace loom::gui
