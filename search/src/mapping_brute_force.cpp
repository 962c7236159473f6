// The exhaustive search of the mapping's choices, for testing the dynamic program on small
// graphs: every choice of every node and every division of devices, costed as the DP costs them.
#include "mapping_problem.hpp"

namespace loom::search {

using namespace mapping;

void MachineMapper::Impl::enumerate(int index, Resource r, const std::function<void(double)>& done, double so_far) {
  enumerate_list({{index, r}}, done, so_far);
}

void MachineMapper::Impl::enumerate_list(std::vector<Pending> todo, const std::function<void(double)>& done, double so_far) {
  while (!todo.empty() && todo.back().index < 0) todo.pop_back();
  if (todo.empty()) return done(so_far);
  const Pending p = todo.back();
  todo.pop_back();
  const Tree& t = trees[static_cast<std::size_t>(p.index)];
  if (t.kind == Tree::Parallel) {
    enumerate_parts(t, 0, p.r, todo, done, so_far);
    return;
  }
  for (Choice c : choices(t.node, p.r)) {
    const double here = leaf_cost(t.node, c);
    fixed[t.node.index()] = c;
    std::vector<Pending> next = todo;
    if (t.kind == Tree::Series) {
      next.push_back({t.children[1], p.r});
      next.push_back({t.children[0], p.r});
    }
    enumerate_list(std::move(next), done, one_after_another(so_far, here));
    fixed[t.node.index()] = {};
  }
}

void MachineMapper::Impl::enumerate_parts(const Tree& t, std::size_t k, Resource r, const std::vector<Pending>& todo,
                                          const std::function<void(double)>& done, double so_far) {
  if (k == t.children.size()) return enumerate_list(todo, done, so_far);
  // Sharing: this part, then the others, on the same devices.
  enumerate(
      t.children[k], r, [&](double part) { enumerate_parts(t, k + 1, r, todo, done, one_after_another(so_far, part)); }, 0);
  if (k + 1 == t.children.size()) return;
  for (int share : split_sizes_of(r.count)) {
    enumerate(
        t.children[k], {r.first, share},
        [&](double part) {
          enumerate_rest(
              t, k + 1, {r.first + share, r.count - share},
              [&](double rest) { enumerate_list(todo, done, one_after_another(so_far, side_by_side(part, rest))); }, 0);
        },
        0);
  }
}

// Parts k.. alone (no pending work after them), each total reported to `done`.
void MachineMapper::Impl::enumerate_rest(const Tree& t, std::size_t k, Resource r, const std::function<void(double)>& done, double so_far) {
  if (k == t.children.size()) return done(so_far);
  enumerate(
      t.children[k], r, [&](double part) { enumerate_rest(t, k + 1, r, done, one_after_another(so_far, part)); }, 0);
  if (k + 1 == t.children.size()) return;
  for (int share : split_sizes_of(r.count))
    enumerate(
        t.children[k], {r.first, share},
        [&](double part) {
          enumerate_rest(
              t, k + 1, {r.first + share, r.count - share}, [&](double rest) { done(one_after_another(so_far, side_by_side(part, rest))); },
              0);
        },
        0);
}

Mapping MachineMapper::brute_force(const pcg::Graph& graph, const Pins& pins) {
  Impl& m = *impl_;
  map(graph, pins);  // settles whether the mapping runs with memory shares, as it does for the DP
  const int root = static_cast<int>(m.trees.size()) - 1;
  double best = kNoPlan;
  m.enumerate(
      root, {0, m.machine.devices()}, [&](double cost) { best = std::min(best, cost); }, 0);
  Mapping out;
  out.estimate = best;
  return out;
}

}  // namespace loom::search
