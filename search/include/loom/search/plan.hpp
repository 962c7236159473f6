#pragma once
// A parallelization plan: the rewritten PCG with a machine view on every operator, the machine
// it was made for, and the substitutions that produced it. One versioned JSON format that
// `loom optimize` writes, `loom simulate` and the runtime execute and the GUI replays.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/output_loss.hpp"

namespace loom::search {

// The plan file's "format" and "version" (see plan_to_json).
inline constexpr const char* kPlanFormat = "loom-plan";
inline constexpr int kPlanFormatVersion = 1;

struct AppliedSubstitution {
  std::string rule;      // rule id in its library
  std::string category;  // algebraic, parallel or hybrid
  std::string status;    // the rule's verification status
  // Where it applied: for each LHS node, the node of the graph before this step it stood for (-1
  // for the LHS's inputs), as pcg::Match::nodes. Empty when not recorded.
  std::vector<pcg::NodeId> match;
  // The hash of the rule's content when it was applied (verifier::rule_hash). Empty when not recorded.
  std::string rule_hash;
  bool reversed = false;  // applied right to left (pcg::reverse_of)
};

// The rule `step` applied, from the library rules it names: found by id, and reversed when the step
// was. Null when no rule has its id, or it has no reverse.
std::optional<pcg::Rule> rule_applied(const std::vector<pcg::Rule>& rules, const AppliedSubstitution& step);

// Pipeline parallelism: the graph's operators fall into `stages` consecutive stages, each
// on its own block of devices (the machine views say which); every iteration runs the batch as
// `microbatches` equal micro-batches, each stage alternating one forward and one backward once
// its pipeline is full, weight gradients summed once per iteration.
// In what order a stage runs its micro-batches: 1F1B (one forward, one backward once the pipeline
// is full; a stage holds at most `stages - stage` micro-batches) or GPipe (every forward, then every
// backward; each stage holds all of them).
enum class PipelineOrder { OneFOneB, GPipe };

struct Pipeline {
  int stages = 1;
  int microbatches = 1;
  PipelineOrder order = PipelineOrder::OneFOneB;

  bool enabled() const { return stages > 1 || microbatches > 1; }
  // Whether a step runs as a pipeline, micro-batch by micro-batch. With one micro-batch it runs as a
  // step of one batch does, whatever its stages: the simulator, the memory model and training
  // alike.
  bool runs_micro_batches() const { return microbatches > 1; }
  bool operator==(const Pipeline&) const = default;
};

// What runs ahead of what: every task of `before` ahead of every task of `after` (a schedule's
// `order`), both nodes of the plan's graph.
struct OrderEdge {
  pcg::NodeId before;
  pcg::NodeId after;
  bool operator==(const OrderEdge&) const = default;
};

struct Plan {
  std::string model;
  Machine machine;
  pcg::Graph graph;
  std::vector<AppliedSubstitution> substitutions;
  pcg::Graph source;             // the graph the substitutions start from (empty when not recorded)
  std::vector<pcg::Rule> rules;  // the rules the substitutions name, so the plan replays alone
  Pipeline pipeline;
  double iteration_seconds = 0;     // as simulated when the plan was made
  bool include_unverified = false;  // made with rules that were not proved (optimize --include-unverified)
  // Written by a schedule: its name and place, the order it imposes, and the operators whose
  // outputs are dropped after the forward pass and computed again for the backward.
  std::string schedule;
  std::vector<OrderEdge> order;
  std::vector<pcg::NodeId> recompute;
  // Weights the model keeps fixed (an imported model's constants): they take no gradient and no
  // optimizer state, so the plan's costs leave them out (CostModel::keep_fixed). Weights of the
  // plan's graph, by name.
  std::set<std::string> fixed_weights;
  // The loss it was costed with (`loom optimize --loss`), which simulating and training it take
  // unless told another; none for a plan written before plans recorded it.
  std::optional<LossKind> loss;
};

// The names among `fixed` that are weights of `graph`: the fixed weights a plan of it records. A
// folded weight is fixed when its parts all are; throws LoomError when only some are.
std::set<std::string> fixed_weights_in(const pcg::Graph& graph, const std::set<std::string>& fixed);

// Renumbers the plan's graph so that its creation order, which the runtime's passes and the memory
// model follow, runs each order edge's `before` ahead of its `after` (SuperScaler's op-order, kept
// by every process); the order edges and the recomputed operators are renumbered with it. A graph
// that already honors its order is left as it is. Throws LoomError when the order and the data
// close a cycle.
void run_order_in_graph(Plan& plan);

// File form: {"format": "loom-plan", "version": 1, "model", "machine": <loom-machine>,
// "graph": <loom-pcg>, "substitutions": [{"rule", "category", "status", "match"?, "rule_hash"?, "reversed"?}],
// "source_graph"?: <loom-pcg>, "rules"?: [<rule>], "pipeline"?: {"stages", "microbatches", "order"?: "1f1b" | "gpipe"},
// "iteration_seconds", "include_unverified"?, "schedule"?, "order"?: [[before, after]], "recompute"?: [node]}.
nlohmann::json plan_to_json(const Plan& plan);
// Rebuilds the graph against `catalog`; throws LoomError naming the JSON path of a problem.
Plan plan_from_json(const nlohmann::json& json, const pcg::OpCatalog& catalog);

// Reads and writes plan files; errors name the file. Writing goes through a temporary file.
Plan load_plan(const std::string& path, const pcg::OpCatalog& catalog);
void save_plan(const Plan& plan, const std::string& path);

}  // namespace loom::search
