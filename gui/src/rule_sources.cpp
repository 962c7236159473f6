#include "loom/gui/rule_sources.hpp"

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

}  // namespace

std::shared_ptr<const spec::Library> bundled_library() {
  static std::mutex mutex;
  static std::shared_ptr<const spec::Library> library;
  std::lock_guard lock(mutex);
  if (!library) library = std::make_shared<const spec::Library>(spec::Library::load(spec::Library::paths_or_bundled({})));
  return library;
}

std::shared_ptr<const spec::Library> bundled_library_with(const std::vector<std::string>& files) {
  if (files.empty()) return bundled_library();
  std::vector<std::string> paths = spec::Library::paths_or_bundled({});
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
    source.library = bundled_library_with({path});
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
  // Spec files outside the bundled library (a user's new operators) are loaded besides it.
  const std::string bundled_dir = canonical(spec::Library::default_specs_dir());
  std::vector<std::string> user_specs;
  if (json.is_object() && json.contains("specs") && json["specs"].is_array())
    for (const auto& s : json["specs"])
      if (s.is_string() && fs::exists(s.get<std::string>()) && canonical(s.get<std::string>()).rfind(bundled_dir, 0) != 0)
        user_specs.push_back(s.get<std::string>());
  source.library = bundled_library_with(user_specs);
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
