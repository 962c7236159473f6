#include "loom/interpreter/rule_files.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/interpreter/rule_graphs.hpp"
#include "loom/pcg/diagnostic.hpp"

namespace loom::spec {

std::vector<pcg::Rule> load_rule_file(const Library& library, const std::vector<std::string>& specs, const std::string& path,
                                      const DeclarationToRule& convert) {
  if (std::filesystem::path(path).extension() == ".loom") {
    std::vector<std::string> files = specs;
    files.push_back(path);
    const Library with_rules = Library::load(files);
    const std::string canonical = std::filesystem::weakly_canonical(path).string();
    std::vector<pcg::Rule> rules;
    for (const auto* r : with_rules.rules())
      if (std::filesystem::weakly_canonical(r->loc.file).string() == canonical)
        rules.push_back(convert ? convert(with_rules, *r) : rule_from_declaration(with_rules, *r));
    return rules;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in || !std::filesystem::is_regular_file(path)) throw LoomError(path + ": cannot open the rule library (not a readable file)");
  // Parsed from memory: nlohmann reads a stream a character at a time, several times slower on
  // the bundled libraries' megabytes.
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  pcg::RuleLibrary lib;
  try {
    lib = pcg::rule_library_from_json(nlohmann::json::parse(text), library);
  } catch (const nlohmann::json::parse_error& e) {
    throw LoomError(path + ": not valid JSON: " + e.what());
  } catch (const LoomError& e) {
    throw LoomError(path + ": " + e.what());
  }
  return std::move(lib.rules);
}

}  // namespace loom::spec
