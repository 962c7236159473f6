#include "loom/search/plan.hpp"

#include <fstream>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/pcg/graph_json.hpp"
#include "loom/pcg/json_read.hpp"

namespace loom::search {

using nlohmann::json;
using namespace pcg::json_read;

namespace {
constexpr const char* kPlanFormat = "loom-plan";
constexpr int kPlanFormatVersion = 1;
}  // namespace

json plan_to_json(const Plan& plan) {
  json subs = json::array();
  for (const auto& s : plan.substitutions) subs.push_back({{"rule", s.rule}, {"category", s.category}, {"status", s.status}});
  return {{"format", kPlanFormat},
          {"version", kPlanFormatVersion},
          {"model", plan.model},
          {"machine", machine_to_json(plan.machine)},
          {"graph", pcg::graph_to_json(plan.graph)},
          {"substitutions", std::move(subs)},
          {"iteration_seconds", plan.iteration_seconds}};
}

Plan plan_from_json(const json& j, const pcg::OpCatalog& catalog) {
  check_format(j, kPlanFormat, kPlanFormatVersion, "Loom plan");
  reject_unknown_keys(j, "", {"format", "version", "model", "machine", "graph", "substitutions", "iteration_seconds"});
  Plan plan;
  if (j.contains("model")) plan.model = read_string(j.at("model"), "model");
  const json& machine = require(j, "machine", "");
  const json& graph = require(j, "graph", "");
  at_path("machine", [&] { plan.machine = machine_from_json(machine); });
  at_path("graph", [&] { plan.graph = pcg::graph_from_json(graph, catalog); });
  if (j.contains("substitutions")) {
    const json& list = require_array(j.at("substitutions"), "substitutions");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = indexed("substitutions", i);
      require_object(list[i], at);
      reject_unknown_keys(list[i], at, {"rule", "category", "status"});
      AppliedSubstitution s;
      s.rule = read_string(require(list[i], "rule", at), member(at, "rule"));
      if (list[i].contains("category")) s.category = read_string(list[i].at("category"), member(at, "category"));
      if (list[i].contains("status")) s.status = read_string(list[i].at("status"), member(at, "status"));
      plan.substitutions.push_back(std::move(s));
    }
  }
  if (j.contains("iteration_seconds")) plan.iteration_seconds = read_number(j.at("iteration_seconds"), "iteration_seconds");
  return plan;
}

Plan load_plan(const std::string& path, const pcg::OpCatalog& catalog) {
  std::ifstream in(path);
  if (!in) throw LoomError(path + ": cannot open the plan file");
  try {
    return plan_from_json(json::parse(in), catalog);
  } catch (const json::parse_error& e) {
    throw LoomError(path + ": not valid JSON: " + e.what());
  } catch (const LoomError& e) {
    throw LoomError(path + ": " + e.what());
  }
}

void save_plan(const Plan& plan, const std::string& path) { pcg::write_file_atomically(path, plan_to_json(plan).dump(2) + "\n"); }

}  // namespace loom::search
