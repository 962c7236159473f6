#pragma once
// The strategies Unity's evaluation compares against, in the same cost model as the joint search
// (DESIGN.md section 5): data parallelism, expert strategies (Megatron-style tensor parallelism
// for transformers, model-parallel embedding tables for recommendation models), FlexFlow's MCMC
// search over per-operator configurations, and sequential optimization (algebraic rewrites first,
// as TASO does, then FlexFlow's parallelization search). Every strategy is a placement per node of
// an unsplit graph, indexed by node id, for materialize().
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/substitution_search.hpp"

namespace loom::search {

// Whether a node runs a kernel of the library (not a graph input, not a parallelization operator).
bool is_compute_node(const spec::Library& library, const pcg::Node& node);

// The node with dimension `dim` of input `input` split (as node_configs splits it) by the first of
// `degrees` the operator accepts; nullopt when it accepts none.
std::optional<ParallelConfig> split_config(const spec::Library& library, const pcg::Graph& graph, const pcg::Node& node, std::size_t input,
                                           std::size_t dim, const std::vector<std::int64_t>& degrees);

// `devices`, devices - 1, ..., 2: split degrees from the largest down.
std::vector<std::int64_t> degrees_from(std::int64_t devices);

// Where data parallelism splits an operator: its batch dimension, taken to be dimension 0 of its
// first input. Schedules' `batch` index means the same.
struct BatchDimension {
  static constexpr std::size_t input = 0;
  static constexpr std::size_t dim = 0;
};

// Every compute operator split along its batch dimension (BatchDimension) by the largest
// degree up to the machine's device count that it accepts, its tasks on devices 0, 1, ...; an
// operator whose spec refuses every such split that the degrees divide is split along the
// dimension of its inputs that gives it the most pieces without partial sums, and one that takes
// none stays unsplit on device 0.
std::vector<Placement> data_parallel(const spec::Library& library, const pcg::Graph& graph, const Machine& machine);

// Megatron-style tensor parallelism where the graph has attention: each attention projection
// (head_proj) and the first dense operator of a feed-forward pair split by output features, the
// operators between them following that split, the second (head_merge, the second dense operator)
// split along its summed input features into partial sums where the operator accepts it (an
// operator that adds a bias cannot: the bias would be added once per partial sum); otherwise,
// where the graph looks up embedding tables, each table whole on its own device, round-robin.
// Everything else is data parallel; a graph with neither structure gets data_parallel().
std::vector<Placement> expert_strategy(const spec::Library& library, const pcg::Graph& graph, const Machine& machine);

// Simulated iteration time of the graph materialized with `placements`; infinity when it cannot
// be materialized, needs devices the machine lacks, or does not fit in memory.
double placement_seconds(const spec::Library& library, const pcg::Graph& graph, const std::vector<Placement>& placements,
                         const CostModel& model);

struct McmcResult;

struct McmcOptions {
  std::size_t iterations = 1000;
  std::uint64_t seed = 1;
  // Metropolis-Hastings acceptance exp(-beta * (proposed - current) / current): a candidate 5%
  // slower than the current one is accepted with probability exp(-0.05 beta).
  double beta = 20;
  std::vector<Placement> initial;  // empty: data_parallel()
  // As FlexFlow bounds its search: stop after this many seconds, or once the best has not improved
  // for half of them (0: the iterations alone bound it).
  double max_seconds = 0;
  // A walk made with these options but a tighter time bound: this walk is that one, gone on from
  // where its bound stopped it (its clock too) as if it had not stopped. Not owned.
  const McmcResult* resume = nullptr;
};

// Where a walk stopped: what going on with it needs.
struct McmcWalkState {
  std::vector<Placement> current;
  double current_seconds = 0;
  std::mt19937_64 rng;
  std::size_t step = 0;  // the next step
  double elapsed_seconds = 0, since_improved_seconds = 0;
};

struct McmcResult {
  std::vector<Placement> placements;  // the best found
  double seconds = 0;
  double initial_seconds = 0;
  std::size_t steps = 0;                          // proposals made
  std::size_t accepted = 0;                       // proposals accepted
  std::shared_ptr<const McmcWalkState> left_off;  // when stopped by time

  // Whether max_seconds ended the walk before its iterations did.
  bool stopped_by_time() const { return left_off != nullptr; }
};

// FlexFlow's MCMC search (FlexFlow section 6): from the initial placements, repeatedly changes one
// random compute operator's configuration (from node_configs over divisor_degrees) and first
// device (a multiple of its task count), accepting by the Metropolis criterion, keeping the best.
// Deterministic for a seed.
McmcResult mcmc_search(const spec::Library& library, const pcg::Graph& graph, const CostModel& model, const McmcOptions& options = {});

struct SequentialOptions {
  SearchOptions substitution;
  McmcOptions mcmc;  // its initial placements are ignored: data_parallel() of the rewritten graph
  // Walks already made from data parallelism with `mcmc`'s seed and steps, each over its graph,
  // under `mcmc`'s time bound or a tighter one: the second stage goes on with the one over the
  // graph the first stage made (McmcOptions::resume), which it would repeat step for step.
  std::vector<std::pair<pcg::Graph, McmcResult>> walked;
  // The first stage's result, when sequential_rewrite found it beforehand with `substitution`
  // (alongside the joint search, say). Not owned.
  const SearchResult* rewritten = nullptr;
};

struct SequentialResult {
  pcg::Graph graph;  // the rewritten (still unsplit) graph
  std::vector<AppliedSubstitution> substitutions;
  std::vector<Placement> placements;
  double seconds = 0;                // simulated on the full machine
  double single_device_seconds = 0;  // of the rewritten graph, what the first stage minimized
};

// The first stage of sequential optimization, TASO's: search_substitutions with only the
// algebraic rules of `rules`, costing a graph by its simulated time on one device of `model`'s
// machine (memory ignored, as TASO does). It costs with a model of its own, so it may run on
// another thread than `model`'s user.
SearchResult sequential_rewrite(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules,
                                const CostModel& model, const SearchOptions& substitution = {});

// TASO then FlexFlow: sequential_rewrite (or options.rewritten), then mcmc_search of the result
// on the whole machine.
SequentialResult sequential_optimization(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules,
                                         const CostModel& model, const SequentialOptions& options = {});

}  // namespace loom::search
