#include "loom/search/plan_model.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

namespace loom::search {

std::string model_of_plan(const std::string& plan_path) {
  std::ifstream in(plan_path);
  const nlohmann::json plan = nlohmann::json::parse(in, nullptr, false);
  if (!plan.is_object() || !plan.contains("model") || !plan["model"].is_string()) return "";
  return plan["model"].get<std::string>();
}

}  // namespace loom::search
