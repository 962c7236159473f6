#include "loom/search/replay.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "loom/interpreter/program.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/weight_folding.hpp"

namespace loom::search {

pcg::Rewrite apply_at(const pcg::Graph& graph, const pcg::Rule& rule, const std::vector<pcg::NodeId>& match_nodes,
                      const pcg::OpCatalog& catalog) {
  const pcg::GraphIndex index(graph);
  for (const pcg::Match& m : pcg::find_matches(index, rule)) {
    if (m.nodes != match_nodes) continue;
    pcg::RewriteOutcome outcome = pcg::apply_match(graph, rule, m, catalog);
    if (!outcome.rewrite) throw LoomError("rule " + rule.id + " cannot be applied at its recorded match: " + outcome.declined);
    return std::move(*outcome.rewrite);
  }
  throw LoomError("rule " + rule.id + " does not match the graph at its recorded nodes");
}

std::vector<pcg::Rule> rules_used(const std::vector<pcg::Rule>& library, const std::vector<AppliedSubstitution>& steps) {
  std::vector<pcg::Rule> out;
  for (const AppliedSubstitution& s : steps) {
    if (std::any_of(out.begin(), out.end(), [&](const pcg::Rule& r) { return r.id == s.rule; })) continue;
    auto it = std::find_if(library.begin(), library.end(), [&](const pcg::Rule& r) { return r.id == s.rule; });
    if (it != library.end()) out.push_back(*it);
  }
  return out;
}

std::vector<ReplayStep> replay_plan(const Plan& plan, const pcg::OpCatalog& catalog) {
  std::vector<ReplayStep> steps;
  if (plan.substitutions.empty()) return steps;
  if (plan.source.size() == 0) throw LoomError("the plan does not record the graph its substitutions start from");
  pcg::Graph current = plan.source;
  for (std::size_t i = 0; i < plan.substitutions.size(); ++i) {
    const AppliedSubstitution& s = plan.substitutions[i];
    const std::string step = "substitution " + std::to_string(i + 1) + " (" + s.rule + ")";
    const std::optional<pcg::Rule> rule = rule_applied(plan.rules, s);
    if (!rule) throw LoomError(step + ": the plan does not hold this rule" + (s.reversed ? ", or it cannot be applied right to left" : ""));
    if (s.match.empty()) throw LoomError(step + ": the plan does not record where it applied");
    ReplayStep r;
    r.substitution = s;
    r.before = current;
    try {
      pcg::Rewrite rewrite = apply_at(current, *rule, s.match, catalog);
      for (pcg::NodeId n : s.match)
        if (n >= 0) r.matched.push_back(n);
      std::sort(r.matched.begin(), r.matched.end());
      r.inserted = std::move(rewrite.inserted);
      current = std::move(rewrite.graph);
    } catch (const LoomError& e) {
      throw LoomError(step + ": " + e.what());
    }
    r.after = current;
    steps.push_back(std::move(r));
  }
  return steps;
}

namespace {

// Whether `op` only changes degrees, never values: a parallel form, or a fused form of one input
// whose body is made of parallel forms alone.
bool changes_no_value(const spec::Library& library, const std::string& op);

bool term_changes_no_value(const spec::Library& library, const spec::Term& term) {
  if (term.kind == spec::TermKind::Apply && !changes_no_value(library, term.name)) return false;
  for (const auto& a : term.args)
    if (!term_changes_no_value(library, *a)) return false;
  return true;
}

bool changes_no_value(const spec::Library& library, const std::string& op) {
  if (library.find_parallel(op)) return true;
  const auto* fused = library.find_fused(op);
  return fused && fused->inputs.size() == 1 && term_changes_no_value(library, *fused->body);
}

// Interns what each port of a graph computes, with parallel and fused forms seen through.
class ValueKeys {
 public:
  explicit ValueKeys(const spec::Library& library) : library_(library) {}

  struct Keyed {
    std::vector<std::vector<int>> ports;      // per node, per output port: the value's id
    std::map<int, std::vector<int>> compute;  // value id of a compute node's first port -> its nodes
    std::vector<int> outputs;
    std::set<std::string> inputs;
  };

  Keyed key(const pcg::Graph& graph) {
    Keyed k;
    k.ports.resize(graph.size());
    for (const pcg::Node& n : graph.nodes()) {
      auto& ports = k.ports[n.id.index()];
      if (n.is_graph_input()) {
        const std::string text = n.op + " " + n.name + " " + spec::dims_to_string(n.output_shapes.at(0).dims);
        k.inputs.insert(text);
        ports.push_back(intern(text));
        continue;
      }
      if (changes_no_value(library_, n.op) && !n.inputs.empty()) {
        const int through = k.ports[n.inputs[0].node.index()][static_cast<std::size_t>(n.inputs[0].port)];
        ports.assign(n.output_shapes.size(), through);
        continue;
      }
      std::string text = n.op + "<";
      for (const auto& [name, value] : n.attrs) text += name + "=" + std::to_string(value) + ";";
      text += ">(";
      for (const pcg::PortRef& in : n.inputs) text += std::to_string(k.ports[in.node.index()][static_cast<std::size_t>(in.port)]) + ",";
      text += ")";
      for (std::size_t p = 0; p < n.output_shapes.size(); ++p) ports.push_back(intern(text + "." + std::to_string(p)));
      k.compute[ports.empty() ? intern(text) : ports.front()].push_back(n.id);
    }
    for (const pcg::PortRef& o : graph.outputs()) k.outputs.push_back(k.ports[o.node.index()][static_cast<std::size_t>(o.port)]);
    return k;
  }

 private:
  int intern(const std::string& text) { return ids_.emplace(text, static_cast<int>(ids_.size())).first->second; }

  const spec::Library& library_;
  std::map<std::string, int> ids_;
};

}  // namespace

std::optional<std::string> value_difference(const pcg::Graph& expected_as_given, const pcg::Graph& actual_as_given,
                                            const spec::Library& library) {
  // A folded weight is compared by what it is made of: its recipe is part of what the plan computes.
  const pcg::Graph expected = pcg::unfolded(expected_as_given), actual = pcg::unfolded(actual_as_given);
  ValueKeys keys(library);
  const ValueKeys::Keyed want = keys.key(expected);
  const ValueKeys::Keyed got = keys.key(actual);
  for (const auto& input : got.inputs)
    if (!want.inputs.count(input)) return "the graph has " + input + ", which the replayed graph does not";
  for (const auto& input : want.inputs)
    if (!got.inputs.count(input)) return "the graph lacks " + input + ", which the replayed graph has";
  for (const auto& [value, nodes] : got.compute) {
    auto it = want.compute.find(value);
    const std::size_t wanted = it == want.compute.end() ? 0 : it->second.size();
    if (nodes.size() > wanted)
      return actual.node(nodes[wanted]).describe() + " computes a value that no operator of the replayed graph computes";
  }
  for (const auto& [value, nodes] : want.compute) {
    auto it = got.compute.find(value);
    const std::size_t have = it == got.compute.end() ? 0 : it->second.size();
    if (nodes.size() > have) return "the graph lacks what " + expected.node(nodes[have]).describe() + " of the replayed graph computes";
  }
  if (got.outputs.size() != want.outputs.size())
    return "the graph has " + std::to_string(got.outputs.size()) + " outputs, the replayed graph " + std::to_string(want.outputs.size());
  for (std::size_t i = 0; i < got.outputs.size(); ++i) {
    if (got.outputs[i] != want.outputs[i])
      return "output " + std::to_string(i) + " is not the replayed graph's output " + std::to_string(i);
    const pcg::ParallelShape& have = actual.shape_of(actual.outputs()[i]);
    const pcg::ParallelShape& wanted = expected.shape_of(expected.outputs()[i]);
    if (have != wanted)
      return "output " + std::to_string(i) + " is delivered as " + have.to_string() + ", the replayed graph's as " + wanted.to_string();
  }
  return std::nullopt;
}

}  // namespace loom::search
