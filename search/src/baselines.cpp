#include "loom/search/baselines.hpp"

#include <algorithm>
#include <limits>

#include "loom/interpreter/parallel_rules.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/plan_cost.hpp"

namespace loom::search {

bool is_compute_node(const spec::Library& library, const pcg::Node& node) {
  return !node.is_graph_input() && library.find_op(node.op) != nullptr;
}

std::optional<ParallelConfig> split_config(const spec::Library& library, const pcg::Graph& graph, const pcg::Node& node, std::size_t input,
                                           std::size_t dim, const std::vector<std::int64_t>& degrees) {
  if (!is_compute_node(library, node) || input >= node.inputs.size()) return std::nullopt;
  const ParallelConfig unsplit = unsplit_config(graph, node);
  std::vector<std::vector<std::int64_t>> dims;
  for (const auto& s : unsplit.inputs) {
    if (s.tasks() != 1) return std::nullopt;  // only unsplit operators are split, as in node_configs
    dims.push_back(s.dims);
  }
  if (dim >= dims[input].size()) return std::nullopt;
  const spec::Program program = library.instantiate(node.op, node.attrs, dims);
  for (std::int64_t degree : degrees) {
    if (degree < 2 || dims[input][dim] % degree != 0) continue;
    ParallelConfig c;
    c.inputs = spec::split_inputs(program, input, dim, degree);
    try {
      c.outputs = library.infer(node.op, node.attrs, c.inputs);
    } catch (const LoomError&) {
      continue;
    }
    c.split = "input " + std::to_string(input) + " dim " + std::to_string(dim) + " / " + std::to_string(degree);
    return c;
  }
  return std::nullopt;
}

std::vector<std::int64_t> degrees_from(std::int64_t devices) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = devices; d >= 2; --d) out.push_back(d);
  return out;
}

std::vector<Placement> data_parallel(const spec::Library& library, const pcg::Graph& graph, const Machine& machine) {
  std::vector<Placement> out = unsplit_placements(graph);
  const std::vector<std::int64_t> degrees = degrees_from(machine.devices());
  for (const pcg::Node& n : graph.nodes()) {
    std::optional<ParallelConfig> best = split_config(library, graph, n, BatchDimension::input, BatchDimension::dim, degrees);
    // An operator whose spec refuses a split of its batch that the degrees divide (Swin's window
    // partitions number their windows across images) takes the split of another dimension that
    // gives the most pieces and no partial sums.
    const auto batch_divides = [&] {
      if (BatchDimension::input >= n.inputs.size()) return false;
      const pcg::ParallelShape& batch = graph.shape_of(n.inputs[BatchDimension::input]);
      return BatchDimension::dim < batch.rank() &&
             std::any_of(degrees.begin(), degrees.end(), [&](std::int64_t d) { return batch.dims[BatchDimension::dim] % d == 0; });
    };
    const bool refused = !best && is_compute_node(library, n) && batch_divides();
    for (std::size_t i = 0; refused && i < n.inputs.size(); ++i)
      for (std::size_t d = 0; d < graph.shape_of(n.inputs[i]).rank(); ++d)
        if (auto c = split_config(library, graph, n, i, d, degrees); c && c->outputs[0].V == 1 && (!best || c->tasks() > best->tasks()))
          best = std::move(c);
    if (best) out[n.id.index()] = {std::move(*best), 0};
  }
  return out;
}

double placement_seconds(const spec::Library& library, const pcg::Graph& graph, const std::vector<Placement>& placements,
                         const CostModel& model) {
  const double infinity = std::numeric_limits<double>::infinity();
  for (const Placement& p : placements)
    if (p.first_device < 0 || p.first_device + p.config.tasks() > model.machine().devices()) return infinity;
  try {
    const PlanCost cost = plan_cost(materialize(graph, placements, library, model.moves()), model);
    return cost.fits() ? cost.seconds : infinity;
  } catch (const LoomError&) {
    return infinity;
  }
}

namespace {

std::vector<pcg::Rule> algebraic_rules(const std::vector<pcg::Rule>& rules) {
  std::vector<pcg::Rule> out;
  for (const pcg::Rule& r : rules)
    if (r.category == pcg::RuleCategory::Algebraic) out.push_back(r);
  return pcg::both_ways(out);
}

}  // namespace

SearchResult sequential_rewrite(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules,
                                const CostModel& model, const SearchOptions& substitution) {
  const Machine one_device = model.machine().with_nodes(1).with_devices_per_node(1);
  const CostModel single = model.on(one_device);
  auto single_seconds = [&](const pcg::Graph& g) {
    try {
      return plan_cost(materialize(g, unsplit_placements(g), library, single.moves()), single).seconds;
    } catch (const LoomError&) {
      return std::numeric_limits<double>::infinity();
    }
  };
  SearchOptions options = substitution;
  if (!options.node_seconds)
    options.node_seconds = [&single](const pcg::Graph& g, const pcg::Node& n) { return single.local_seconds(g, n); };
  return search_substitutions(graph, algebraic_rules(rules), library, single_seconds, options);
}

SequentialResult sequential_optimization(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules,
                                         const CostModel& model, const SequentialOptions& options) {
  SearchResult rewritten = options.rewritten ? *options.rewritten : sequential_rewrite(library, graph, rules, model, options.substitution);
  McmcOptions mcmc = options.mcmc;
  mcmc.initial.clear();
  const auto walked = std::find_if(options.walked.begin(), options.walked.end(), [&](const auto& w) { return w.first == rewritten.best; });
  if (walked != options.walked.end()) mcmc.resume = &walked->second;
  const McmcResult placed = mcmc_search(library, rewritten.best, model, mcmc);
  SequentialResult out;
  out.single_device_seconds = rewritten.best_seconds;
  out.graph = std::move(rewritten.best);
  out.substitutions = std::move(rewritten.sequence);
  out.placements = placed.placements;
  out.seconds = placed.seconds;
  return out;
}

}  // namespace loom::search
