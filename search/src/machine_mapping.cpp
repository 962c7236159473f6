// The mapping's dynamic program over the problem tree (mapping_tree.hpp): a series tree tries
// each choice of its split node and solves the parts before and after it given that choice; a
// parallel tree runs its parts one after another on its devices or side by side on a division of
// them. Sub-results are kept in the Memo (mapping_memo.hpp).
#include "loom/search/machine_mapping.hpp"

#include <bit>
#include <cmath>

#include "mapping_problem.hpp"

namespace loom::search {

using namespace mapping;

std::vector<std::int64_t> mapping_degrees(const Machine& machine) {
  std::vector<std::int64_t> out;
  for (std::int64_t d :
       {static_cast<std::int64_t>(machine.devices()), static_cast<std::int64_t>(machine.devices_per_node()), std::int64_t{2}})
    if (d >= 2 && machine.devices() % d == 0 && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  return out;
}

SubProblem MachineMapper::Impl::sub_problem(const Tree& t, Resource r) {
  scratch_boundary.clear();
  for (int b : t.boundary) {
    const Choice c = fixed[static_cast<std::size_t>(b)];
    scratch_boundary.push_back(info(b, c).content);
    scratch_boundary.push_back(c.first);
  }
  SubProblem p{t.content_id, r.first, r.count, std::bit_cast<std::uint64_t>(memory_scale), scratch_boundary};
  return p.hashed();
}

double MachineMapper::Impl::solve(int index, Resource r) {
  if (index < 0) return 0;
  const Tree& t = trees[static_cast<std::size_t>(index)];
  const SubProblem p = sub_problem(t, r);
  if (auto found = memo.find(p)) {
    ++stats.cache_hits;
    return found->cost;
  }
  const Memo::Key key = memo.enter(p);  // the parts below overwrite the probe's boundary
  ++stats.solved;
  if (t.kind == Tree::Parallel) {
    std::vector<int> sizes;
    const double cost = solve_parts(t, 0, r, sizes);
    memo.settle(key, cost, {}, sizes);
    return cost;
  }
  double best = kNoPlan;
  Choice best_choice;
  const std::vector<Choice>& all_here = choices(t.node, r);
  std::vector<Choice> alone;
  if (t.kind == Tree::Series && t.boundary.size() > options.max_boundary && !all_here.empty()) alone = {best_alone(t.node, all_here)};
  const std::vector<Choice>& options_here = alone.empty() ? all_here : alone;
  for (Choice c : options_here) {
    double cost = leaf_cost(t.node, c);
    if (cost >= best) continue;
    if (t.kind == Tree::Series) {
      fixed[t.node.index()] = c;
      cost = one_after_another(cost, solve(t.children[0], r));
      if (cost < best) cost = one_after_another(cost, solve(t.children[1], r));
      fixed[t.node.index()] = {};
    }
    if (cost < best) {
      best = cost;
      best_choice = c;
    }
  }
  memo.settle(key, best, best_choice);
  return best;
}

// The choice that costs least given the decided nodes alone.
Choice MachineMapper::Impl::best_alone(int node, const std::vector<Choice>& among) {
  Choice best;
  double best_cost = kNoPlan;
  for (Choice c : among) {
    const double cost = leaf_cost(node, c);
    if (cost < best_cost || best.config < 0) {
      best_cost = cost;
      best = c;
    }
  }
  return best;
}

// Parts k.. of a parallel split on `r`: part k shares the devices with the rest (run one after
// the other) or takes a share of them and runs beside the rest.
double MachineMapper::Impl::solve_parts(const Tree& t, std::size_t k, Resource r, std::vector<int>& sizes) {
  if (k == t.children.size()) return 0;
  std::vector<int> rest_sizes;
  double best = one_after_another(solve(t.children[k], r), solve_parts(t, k + 1, r, rest_sizes));
  std::vector<int> best_sizes{0};
  best_sizes.insert(best_sizes.end(), rest_sizes.begin(), rest_sizes.end());
  if (k + 1 < t.children.size()) {
    for (int share : split_sizes_of(r.count)) {
      std::vector<int> tail;
      const double mine = solve(t.children[k], {r.first, share});
      if (mine >= best) continue;
      const double cost = side_by_side(mine, solve_parts(t, k + 1, {r.first + share, r.count - share}, tail));
      if (cost < best) {
        best = cost;
        best_sizes = {share};
        best_sizes.insert(best_sizes.end(), tail.begin(), tail.end());
      }
    }
  }
  sizes = std::move(best_sizes);
  return best;
}

void MachineMapper::Impl::reconstruct(int index, Resource r, std::vector<Choice>& out) {
  if (index < 0) return;
  const Tree& t = trees[static_cast<std::size_t>(index)];
  const std::optional<Solution> e = memo.find(sub_problem(t, r));
  if (!e || (t.kind == Tree::Parallel && e->split_sizes.size() != t.children.size()))
    throw LoomError("internal: the mapping of a sub-problem was not kept");
  if (t.kind == Tree::Parallel) {
    for (std::size_t k = 0; k < t.children.size(); ++k) {
      const int share = e->split_sizes[k];
      reconstruct(t.children[k], share == 0 ? r : Resource{r.first, share}, out);
      if (share != 0) r = {r.first + share, r.count - share};
    }
    return;
  }
  out[t.node.index()] = e->choice;
  if (t.kind == Tree::Series) {
    fixed[t.node.index()] = e->choice;
    reconstruct(t.children[0], r, out);
    reconstruct(t.children[1], r, out);
    fixed[t.node.index()] = {};
  }
}

MachineMapper::MachineMapper(const spec::Library& library, const CostModel& model, MappingOptions options)
    : impl_(std::make_unique<Impl>(library, model, std::move(options))) {}

MachineMapper::~MachineMapper() = default;

const MappingStats& MachineMapper::stats() const { return impl_->stats; }

Mapping MachineMapper::map(const pcg::Graph& graph, const Pins& pins) {
  Impl& m = *impl_;
  const int root = m.prepare(graph, pins);
  const Resource all{0, m.machine.devices()};
  // Shares in proportion to the unsplit need are safe but blunt: a node whose weights are cheap
  // to copy may be denied its copies for the sake of activations that a split shrinks anyway. So
  // the mapping is first sought with no shares, and kept when its plan fits every device.
  const double shares = m.memory_scale;
  std::vector<Choice> chosen(graph.size());
  if (shares < 1) {
    m.memory_scale = 1;
    const double estimate = m.solve(root, all);
    if (std::isfinite(estimate)) {
      m.reconstruct(root, all, chosen);
      if (m.fullest_device_bytes(chosen) <= m.machine.device.memory_bytes) {
        Mapping found = m.result(graph, chosen, estimate);
        if (m.fits(graph, found.placements)) return found;
      }
    }
    m.memory_scale = shares;
    m.fixed.assign(graph.size(), Choice{});
    chosen.assign(graph.size(), Choice{});
  }
  const double estimate = m.solve(root, all);
  if (std::isfinite(estimate)) m.reconstruct(root, all, chosen);
  return m.result(graph, chosen, estimate);
}

}  // namespace loom::search
