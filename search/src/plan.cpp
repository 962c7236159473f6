#include "loom/search/plan.hpp"

#include <algorithm>
#include <fstream>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/pcg/graph_json.hpp"
#include "loom/pcg/graph_order.hpp"
#include "loom/pcg/json_read.hpp"
#include "loom/pcg/weight_folding.hpp"

namespace loom::search {

using nlohmann::json;
using namespace pcg::json_read;

std::optional<pcg::Rule> rule_applied(const std::vector<pcg::Rule>& rules, const AppliedSubstitution& step) {
  auto it = std::find_if(rules.begin(), rules.end(), [&](const pcg::Rule& r) { return r.id == step.rule && !r.reversed; });
  if (it == rules.end()) return std::nullopt;
  return step.reversed ? pcg::reverse_of(*it) : std::optional<pcg::Rule>(*it);
}

namespace {

// Why `name` cannot be a fixed weight of `graph`, or nothing when it can.
std::optional<std::string> not_a_weight(const pcg::Graph& graph, const std::string& name) {
  const std::optional<pcg::NodeId> id = graph.find(name);
  if (!id) return "no node of the plan's graph is named '" + name + "'";
  if (graph.node(*id).op != pcg::kWeightOp)
    return "'" + name + "' is not a weight of the plan's graph (" + graph.node(*id).describe() + ")";
  return std::nullopt;
}

}  // namespace

std::set<std::string> fixed_weights_in(const pcg::Graph& graph, const std::set<std::string>& fixed) {
  std::set<std::string> out;
  for (const std::string& name : fixed)
    if (!not_a_weight(graph, name)) out.insert(name);
  for (const pcg::Node& n : graph.nodes()) {
    if (!n.folded_from) continue;
    std::vector<std::string> kept, trained;
    for (const std::string& part : pcg::weight_parts(n)) (fixed.count(part) ? kept : trained).push_back(part);
    if (kept.empty()) continue;
    if (!trained.empty())
      throw LoomError("weight '" + kept.front() + "' is fixed, but the plan folds it into '" + n.name + "' with '" + trained.front() +
                      "', which trains: a folded weight trains whole or not at all");
    out.insert(n.name);
  }
  return out;
}

json plan_to_json(const Plan& plan) {
  json subs = json::array();
  for (const auto& s : plan.substitutions) {
    json entry = {{"rule", s.rule}, {"category", s.category}, {"status", s.status}};
    if (!s.match.empty()) entry["match"] = s.match;
    if (!s.rule_hash.empty()) entry["rule_hash"] = s.rule_hash;
    if (s.reversed) entry["reversed"] = true;
    subs.push_back(std::move(entry));
  }
  json out = {{"format", kPlanFormat},
              {"version", kPlanFormatVersion},
              {"model", plan.model},
              {"machine", machine_to_json(plan.machine)},
              {"graph", pcg::graph_to_json(plan.graph)},
              {"substitutions", std::move(subs)},
              {"iteration_seconds", plan.iteration_seconds}};
  if (plan.source.size() > 0) out["source_graph"] = pcg::graph_to_json(plan.source);
  if (!plan.rules.empty()) {
    json rules = json::array();
    for (const pcg::Rule& r : plan.rules) rules.push_back(pcg::rule_to_json(r));
    out["rules"] = std::move(rules);
  }
  if (plan.include_unverified) out["include_unverified"] = true;
  if (plan.pipeline.enabled()) {
    out["pipeline"] = {{"stages", plan.pipeline.stages}, {"microbatches", plan.pipeline.microbatches}};
    if (plan.pipeline.order == PipelineOrder::GPipe) out["pipeline"]["order"] = "gpipe";
  }
  if (!plan.schedule.empty()) out["schedule"] = plan.schedule;
  if (!plan.order.empty()) {
    json order = json::array();
    for (const OrderEdge& e : plan.order) order.push_back({e.before, e.after});
    out["order"] = std::move(order);
  }
  if (!plan.recompute.empty()) out["recompute"] = plan.recompute;
  if (!plan.fixed_weights.empty()) out["fixed_weights"] = plan.fixed_weights;
  if (plan.loss) out["loss"] = loss_name(*plan.loss);
  return out;
}

Plan plan_from_json(const json& j, const pcg::OpCatalog& catalog) {
  check_format(j, kPlanFormat, kPlanFormatVersion, "Loom plan");
  reject_unknown_keys(j, "",
                      {"format", "version", "model", "machine", "graph", "substitutions", "source_graph", "rules", "pipeline",
                       "iteration_seconds", "include_unverified", "schedule", "order", "recompute", "fixed_weights", "loss"});
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
      reject_unknown_keys(list[i], at, {"rule", "category", "status", "match", "rule_hash", "reversed"});
      AppliedSubstitution s;
      s.rule = read_string(require(list[i], "rule", at), member(at, "rule"));
      if (list[i].contains("category")) s.category = read_string(list[i].at("category"), member(at, "category"));
      if (list[i].contains("status")) s.status = read_string(list[i].at("status"), member(at, "status"));
      if (list[i].contains("rule_hash")) s.rule_hash = read_string(list[i].at("rule_hash"), member(at, "rule_hash"));
      if (list[i].contains("reversed")) {
        if (!list[i].at("reversed").is_boolean()) throw LoomError(member(at, "reversed") + ": expected true or false");
        s.reversed = list[i].at("reversed").get<bool>();
      }
      if (list[i].contains("match")) {
        const std::string where = member(at, "match");
        const json& nodes = require_array(list[i].at("match"), where);
        for (std::size_t k = 0; k < nodes.size(); ++k) s.match.push_back(read_int(nodes[k], indexed(where, k)));
      }
      plan.substitutions.push_back(std::move(s));
    }
  }
  if (j.contains("source_graph")) at_path("source_graph", [&] { plan.source = pcg::graph_from_json(j.at("source_graph"), catalog); });
  if (j.contains("rules")) {
    const json& list = require_array(j.at("rules"), "rules");
    for (std::size_t i = 0; i < list.size(); ++i)
      at_path(indexed("rules", i), [&] { plan.rules.push_back(pcg::rule_from_json(list[i], catalog)); });
  }
  if (j.contains("pipeline")) {
    const json& p = j.at("pipeline");
    require_object(p, "pipeline");
    reject_unknown_keys(p, "pipeline", {"stages", "microbatches", "order"});
    if (p.contains("order")) {
      const std::string order = read_string(p.at("order"), "pipeline.order");
      if (order != "1f1b" && order != "gpipe") throw LoomError("pipeline.order: expected \"1f1b\" or \"gpipe\", not \"" + order + "\"");
      plan.pipeline.order = order == "gpipe" ? PipelineOrder::GPipe : PipelineOrder::OneFOneB;
    }
    plan.pipeline.stages = read_int(require(p, "stages", "pipeline"), "pipeline.stages");
    plan.pipeline.microbatches = read_int(require(p, "microbatches", "pipeline"), "pipeline.microbatches");
    if (plan.pipeline.stages < 1 || plan.pipeline.microbatches < 1) throw LoomError("pipeline: stages and microbatches must be at least 1");
  }
  if (j.contains("include_unverified")) {
    if (!j.at("include_unverified").is_boolean()) throw LoomError("include_unverified: expected true or false");
    plan.include_unverified = j.at("include_unverified").get<bool>();
  }
  const auto graph_node = [&](const json& value, const std::string& where) {
    const int id = read_int(value, where);
    if (id < 0 || static_cast<std::size_t>(id) >= plan.graph.size() || plan.graph.node(id).is_graph_input())
      throw LoomError(where + ": " + std::to_string(id) + " is not an operator of the plan's graph");
    return pcg::NodeId(id);
  };
  if (j.contains("schedule")) plan.schedule = read_string(j.at("schedule"), "schedule");
  if (j.contains("order")) {
    const json& list = require_array(j.at("order"), "order");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = indexed("order", i);
      const json& pair = require_array(list[i], at);
      if (pair.size() != 2) throw LoomError(at + ": expected [before, after]");
      plan.order.push_back({graph_node(pair[0], indexed(at, 0)), graph_node(pair[1], indexed(at, 1))});
    }
  }
  if (j.contains("recompute")) {
    const json& list = require_array(j.at("recompute"), "recompute");
    for (std::size_t i = 0; i < list.size(); ++i) plan.recompute.push_back(graph_node(list[i], indexed("recompute", i)));
  }
  if (j.contains("fixed_weights")) {
    const json& list = require_array(j.at("fixed_weights"), "fixed_weights");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = indexed("fixed_weights", i);
      const std::string name = read_string(list[i], at);
      if (const std::optional<std::string> why = not_a_weight(plan.graph, name)) throw LoomError(at + ": " + *why);
      plan.fixed_weights.insert(name);
    }
  }
  if (j.contains("loss")) {
    const std::string name = read_string(j.at("loss"), "loss");
    at_path("loss", [&] { plan.loss = loss_from_name(name); });
  }
  if (j.contains("iteration_seconds")) plan.iteration_seconds = read_number(j.at("iteration_seconds"), "iteration_seconds");
  at_path("order", [&] { run_order_in_graph(plan); });
  return plan;
}

void run_order_in_graph(Plan& plan) {
  // A graph whose order already runs every `before` first (as Loom writes them) is kept as it is.
  const auto honored = [&](const OrderEdge& e) { return e.before.valid() && e.before < e.after && e.after.index() < plan.graph.size(); };
  if (std::all_of(plan.order.begin(), plan.order.end(), honored)) return;
  std::vector<pcg::RunsAhead> constraints;
  for (const OrderEdge& e : plan.order) constraints.push_back({e.before, e.after});
  std::vector<pcg::NodeId> new_ids;
  plan.graph = pcg::ordered_by(plan.graph, constraints, &new_ids);
  for (OrderEdge& e : plan.order) e = {new_ids[e.before.index()], new_ids[e.after.index()]};
  for (pcg::NodeId& id : plan.recompute) {
    if (id.value() < 0 || id.index() >= new_ids.size())
      throw LoomError("recompute: node " + std::to_string(id.value()) + " is not in the plan's graph");
    id = new_ids[id.index()];
  }
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
