#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/pcg/graph_dot.hpp"
#include "loom/pcg/graph_json.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/verifier/proof_record.hpp"
#include "model_options.hpp"

namespace loom::cli {
namespace {

struct ApplyOptions {
  ModelOptions model;
  std::string rules;
  std::string rule;
  std::size_t match = 0;
  std::vector<std::string> specs;
  std::string out;
  bool dot = false;
  bool json = false;
};

std::map<std::string, int> op_counts(const pcg::Graph& g) {
  std::map<std::string, int> counts;
  for (const auto& n : g.nodes())
    if (!n.is_graph_input()) ++counts[n.op];
  return counts;
}

int run_apply(const ApplyOptions& opt) {
  const auto specs = opt.model.spec_paths(opt.specs);
  const spec::Library library = spec::Library::load(specs);
  const models::LoadedModel model = models::load_model(library, opt.model.request(library));
  const std::vector<pcg::Rule> rules = spec::load_rule_file(library, specs, opt.rules);
  if (rules.empty()) throw LoomError(opt.rules + ": the file holds no rules");
  const pcg::GraphIndex index(model.graph);

  if (opt.rule.empty()) {  // which rules match, and how often
    nlohmann::json counts = nlohmann::json::object();
    for (std::size_t r : pcg::RuleIndex(rules).candidates(index)) {
      const auto matches = pcg::find_matches(index, rules[r]);
      if (!matches.empty()) counts[rules[r].id] = matches.size();
    }
    if (opt.json) {
      std::cout << nlohmann::json{{"model", model.name}, {"rules", rules.size()}, {"matching", counts}}.dump(2) << "\n";
    } else {
      std::cout << model.name << ": " << counts.size() << " of " << rules.size() << " rules match (--rule ID applies one)\n";
      for (const auto& [id, n] : counts.items()) std::cout << "  " << id << ": " << n.get<std::size_t>() << " matches\n";
    }
    return 0;
  }

  auto rule = std::find_if(rules.begin(), rules.end(), [&](const pcg::Rule& r) { return r.id == opt.rule; });
  if (rule == rules.end()) throw LoomError(opt.rules + ": no rule with id '" + opt.rule + "'");
  const auto matches = pcg::find_matches(index, *rule);
  if (opt.match >= matches.size())
    throw LoomError("rule " + opt.rule + " has " + std::to_string(matches.size()) + " matches in " + model.name +
                    ", so there is no match " + std::to_string(opt.match) + " (--match counts from 0)");
  const pcg::RewriteOutcome outcome = pcg::apply_match(model.graph, *rule, matches[opt.match], library);
  if (!outcome.rewrite)
    throw LoomError("rule " + opt.rule + " cannot be applied at match " + std::to_string(opt.match) + ": " + outcome.declined);
  const pcg::Graph& result = outcome.rewrite->graph;
  const std::string proof = verifier::standing_name(verifier::ProofChecker(library).standing(*rule));
  if (!opt.out.empty()) pcg::write_file_atomically(opt.out, pcg::graph_to_json(result).dump(2) + "\n");

  std::vector<std::string> matched;
  for (int n : matches[opt.match].matched_nodes()) matched.push_back(model.graph.node(n).describe());
  // Weights the rewrite folded into one (pcg/weight_folding.hpp): the new ones, by name.
  std::vector<std::string> folded;
  for (pcg::NodeId n : outcome.rewrite->inserted)
    if (result.node(n).folded_from) folded.push_back(result.node(n).name);
  if (opt.dot) {
    std::cout << pcg::graph_to_dot(result);
  } else if (opt.json) {
    std::cout << nlohmann::json{{"model", model.name},
                                {"rule", opt.rule},
                                {"proof", proof},
                                {"matches", matches.size()},
                                {"matched", matched},
                                {"nodes_before", model.graph.size()},
                                {"nodes_after", result.size()},
                                {"ops_before", op_counts(model.graph)},
                                {"ops_after", op_counts(result)},
                                {"folded_weights", folded}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << "rule " << opt.rule << " (" << pcg::category_name(rule->category) << ", " << proof << "): " << matches.size()
              << " matches in " << model.name << "; applied match " << opt.match << " at:\n";
    for (const auto& m : matched) std::cout << "  " << m << "\n";
    std::cout << "nodes: " << model.graph.size() << " -> " << result.size() << "\n";
    const auto before = op_counts(model.graph), after = op_counts(result);
    std::map<std::string, std::pair<int, int>> diff;
    for (const auto& [op, n] : before) diff[op].first = n;
    for (const auto& [op, n] : after) diff[op].second = n;
    for (const auto& [op, n] : diff)
      if (n.first != n.second) std::cout << "  " << op << ": " << n.first << " -> " << n.second << "\n";
    for (const std::string& name : folded)
      std::cout << "folded weight " << name << ": made from its parts once, not concatenated each step\n";
    if (!opt.out.empty()) std::cout << "wrote " << opt.out << "\n";
  }
  return 0;
}

}  // namespace

void add_apply_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<ApplyOptions>();
  auto* cmd = app.add_subcommand("apply",
                                 "Apply one rule to a model: without --rule, list the rules of FILE that match the model and how often; "
                                 "with --rule ID, apply its match number --match and show what changed.");
  add_model_options(*cmd, opt->model)->required();
  cmd->add_option("--rules", opt->rules, "a rule library (loom-rules JSON, as loom generate writes) or a .loom file of rule declarations")
      ->required();
  cmd->add_option("--rule", opt->rule, "the id (or name) of the rule to apply");
  cmd->add_option("--match", opt->match, "which match to apply, counting from 0")->default_val(0);
  cmd->add_option("--specs", opt->specs, "spec files or directories (default: the bundled specs/)");
  cmd->add_option("-o,--out", opt->out, "write the rewritten graph as loom-pcg JSON");
  cmd->add_flag("--dot", opt->dot, "print the rewritten graph as Graphviz DOT");
  cmd->add_flag("--json", opt->json, "print the result as JSON");
  cmd->callback([opt, &status] { status = run_apply(*opt); });
}

}  // namespace loom::cli
