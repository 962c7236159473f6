#include "loom/verifier/obligation.hpp"

#include <algorithm>
#include <functional>

namespace loom::verifier {

std::string Obligation::where() const {
  if (json_path.empty()) return loc.to_string();
  return loc.file.empty() ? json_path : loc.file + ": " + json_path;
}

std::vector<std::string> goal_variables(const Obligation& obligation) {
  std::vector<std::string> names;
  std::function<void(const spec::Term&)> visit = [&](const spec::Term& t) {
    if (t.kind == spec::TermKind::Var) {
      if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
      return;
    }
    for (const auto& a : t.args) visit(*a);
  };
  for (const auto& g : obligation.goals) {
    visit(*g.lhs);
    visit(*g.rhs);
  }
  return names;
}

}  // namespace loom::verifier
