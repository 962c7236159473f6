#include "loom/search/rvd_search.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <unordered_map>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/hash_mix.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/search/reshard.hpp"

namespace loom::search {
namespace {

// The degrees of a shape, in a fixed order: D per dimension, then V and R.
std::vector<std::int64_t> degrees(const pcg::ParallelShape& s) {
  std::vector<std::int64_t> out = s.D;
  out.push_back(s.V);
  out.push_back(s.R);
  return out;
}

// The shapes a move from `from` to `to` may pass through: each degree a multiple of the smaller
// and a divisor of the larger of its two ends' degrees, and no more tasks than the larger end has.
// Where the consumer wants more copies than the producer holds, on other devices, the value's
// largest dimension after the first may also be split by a divisor of the copies it gains where
// neither end splits it so (SuperScaler's inter-RVD): the value can then cross to the consumer's
// devices in pieces and be gathered there, where sending it whole to every consumer would cross
// the network once per copy. One dimension keeps the states few. Dimension 0 is not widened: it
// is the batch, which a pipeline cuts into micro-batches after its moves are chosen, and a split
// chosen for the whole batch may not divide a micro-batch.
class Between {
 public:
  Between(const pcg::ParallelShape& from, const pcg::ParallelShape& to, bool gains_devices)
      : low_(degrees(from)), high_(degrees(to)), most_tasks_(std::max(from.tasks(), to.tasks())), P_(from.P) {
    for (std::size_t i = 0; i < low_.size(); ++i) {
      const std::int64_t g = std::gcd(low_[i], high_[i]), l = std::lcm(low_[i], high_[i]);
      low_[i] = g;
      high_[i] = l;
      span_ = std::lcm(span_, l);
    }
    const std::int64_t gained = to.R / std::gcd(to.R, from.R);
    if (gains_devices && gained > 1 && from.rank() > 1) {
      std::size_t widest = 1;
      for (std::size_t i = 2; i < from.rank(); ++i)
        if (from.dims[i] > from.dims[widest]) widest = i;  // the first of the largest
      wide_ = high_;
      wide_[widest] = std::lcm(high_[widest], gained);
      span_ = std::lcm(span_, gained);
    }
  }

  bool contains(const pcg::ParallelShape& s) const {
    if (s.P != P_ || s.tasks() > most_tasks_) return false;
    const std::vector<std::int64_t> d = degrees(s);
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (d[i] % low_[i] != 0) return false;
      if (high_[i] % d[i] != 0 && (wide_.empty() || wide_[i] % d[i] != 0)) return false;
    }
    return true;
  }

  // The least common multiple of the ends' degrees: a step may change a degree by any of its
  // divisors above 1.
  std::int64_t span() const { return span_; }

 private:
  std::vector<std::int64_t> low_, high_;
  std::vector<std::int64_t> wide_;  // where copies are gained on other devices: the widest each degree may be
  std::int64_t most_tasks_ = 1;
  std::vector<std::int64_t> P_;
  std::int64_t span_ = 1;
};

struct Reached {
  double seconds = 0;
  std::size_t steps = 0;
  bool operator<(const Reached& o) const { return seconds != o.seconds ? seconds < o.seconds : steps < o.steps; }
};

// A shape held on the producer's side (its devices) or the consumer's.
struct State {
  pcg::ParallelShape shape;
  bool consumer = false;
  bool operator==(const State&) const = default;
};

struct StateHash {
  std::size_t operator()(const State& s) const { return std::hash<pcg::ParallelShape>{}(s.shape) * 2 + (s.consumer ? 1 : 0); }
};

struct Arrival {
  Reached cost;
  State state;
  bool operator>(const Arrival& o) const { return o.cost < cost; }
};

struct Came {
  State before;
  ReshardStep step;
};

// A chain of steps and the shapes they make, one per step.
struct Chain {
  std::vector<ReshardStep> steps;
  std::vector<pcg::ParallelShape> shapes;
};

// The devices of `tasks` tasks on a side: the side's own view when it has as many tasks, else a
// block from its first device, moved back so that it fits in `devices`; none when the machine has
// fewer devices than tasks (a co-sharded side runs more pieces than it has devices).
std::optional<pcg::MachineView> side_view(std::int64_t tasks, const pcg::MachineView& side, int devices) {
  if (tasks == static_cast<std::int64_t>(side.tasks())) return side;
  if (tasks > devices) return std::nullopt;
  int first = side.devices.empty() ? 0 : side.devices.front();
  if (first + tasks > devices) first = static_cast<int>(devices - tasks);
  return pcg::MachineView::contiguous(first, tasks);
}

}  // namespace

RvdSearch::RvdSearch(const spec::Library& library, const Machine& machine, ChainPricing pricing)
    : library_(library), machine_(machine), forms_(layout_forms(library)), pricing_(pricing) {}

bool RvdSearch::accepted(const LayoutForm& form, const pcg::AttrMap& attrs, const pcg::ParallelShape& in,
                         const pcg::ParallelShape& out) const {
  std::string key = form.op;
  for (const auto& [name, value] : attrs) key += " " + name + "=" + std::to_string(value);
  key += " " + in.to_string();
  if (auto it = accepted_.find(key); it != accepted_.end()) return it->second;
  bool ok = false;
  try {
    const std::vector<pcg::ParallelShape> result = library_.infer(form.op, attrs, {in});
    ok = result.size() == 1 && result[0] == out;
  } catch (const LoomError&) {
    ok = false;
  }
  accepted_.emplace(std::move(key), ok);
  return ok;
}

std::size_t RvdSearch::EdgesKeyHash::operator()(const EdgesKey& k) const {
  return static_cast<std::size_t>(pcg::hash_mix(std::hash<pcg::ParallelShape>{}(k.shape), static_cast<std::uint64_t>(k.span)));
}

const std::vector<RvdSearch::Edge>& RvdSearch::edges_from(const pcg::ParallelShape& shape, std::int64_t span) const {
  EdgesKey key{shape, span};
  if (auto it = edges_.find(key); it != edges_.end()) return it->second;
  std::vector<Edge> out;
  std::vector<std::int64_t> amounts;
  for (std::int64_t k = 2; k <= span; ++k)
    if (span % k == 0) amounts.push_back(k);
  for (std::size_t f = 0; f < forms_.size(); ++f)
    each_assignment(forms_[f], shape.rank(), amounts, [&](const pcg::AttrMap& attrs) {
      std::optional<pcg::ParallelShape> next = forms_[f].apply(attrs, shape);
      if (next && *next != shape) out.push_back({f, attrs, std::move(*next), std::nullopt});
    });
  return edges_.emplace(std::move(key), std::move(out)).first->second;
}

bool RvdSearch::edge_accepted(const Edge& edge, const pcg::ParallelShape& from) const {
  if (!edge.accepted) edge.accepted = accepted(forms_[edge.form], edge.attrs, from, edge.shape);
  return *edge.accepted;
}

std::size_t RvdSearch::MoveHash::operator()(const Move& m) const {
  std::uint64_t h = pcg::hash_mix(std::hash<pcg::ParallelShape>{}(m.from), std::hash<pcg::ParallelShape>{}(m.to));
  h = pcg::hash_mix(h, std::hash<pcg::MachineView>{}(m.from_view));
  h = pcg::hash_mix(h, std::hash<pcg::MachineView>{}(m.to_view));
  return static_cast<std::size_t>(pcg::hash_mix(h, m.loaded ? 1u : 0u));
}

const std::optional<ReshardPath>& RvdSearch::cheapest(const pcg::ParallelShape& from, const pcg::MachineView& from_view,
                                                      const pcg::ParallelShape& to, const pcg::MachineView& to_view, bool loaded) const {
  Move move{from, to, from_view, to_view, loaded};
  if (auto it = found_.find(move); it != found_.end()) return it->second;
  std::optional<ReshardPath> path = search(move);
  return found_.emplace(std::move(move), std::move(path)).first->second;
}

double RvdSearch::step_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                               const pcg::MachineView& to_view) const {
  Move step{from, to, from_view, to_view};
  if (auto even = evenly_divided_shapes(from, to)) {
    step.from = std::move(even->first);
    step.to = std::move(even->second);
  }
  auto it = patterns_.find(step);
  if (it == patterns_.end()) {
    ReshardPattern pattern = reshard_pattern(step.from, from_view, step.to, to_view, machine_);
    it = patterns_.emplace(std::move(step), std::move(pattern)).first;
  }
  return it->second.seconds(from, to, machine_);
}

bool RvdSearch::moves_as_one_collective(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                                        const pcg::MachineView& to_view) const {
  Move move{from, to, from_view, to_view};
  if (auto it = laid_out_.find(move); it != laid_out_.end()) return it->second.collective.has_value();
  if (auto it = one_collective_.find(move); it != one_collective_.end()) return it->second;
  const bool one = pcg::moves_as_one_collective(from, from_view, to, to_view);
  one_collective_.emplace(std::move(move), one);
  return one;
}

const RvdSearch::LaidOutChange& RvdSearch::laid_out(const pcg::ParallelShape& from, const pcg::MachineView& from_view,
                                                    const pcg::ParallelShape& to, const pcg::MachineView& to_view) const {
  Move move{from, to, from_view, to_view};
  if (auto it = laid_out_.find(move); it != laid_out_.end()) return it->second;
  LaidOutChange change;
  change.moves = pcg::piece_moves(from, from_view, to, to_view);
  change.collective = pcg::collective_groups_on_views(from, from_view, to, to_view, change.moves);
  return laid_out_.emplace(std::move(move), std::move(change)).first->second;
}

std::optional<ReshardPath> RvdSearch::search(const Move& move) const {
  const pcg::ParallelShape &from = move.from, &to = move.to;
  const pcg::MachineView &from_view = move.from_view, &to_view = move.to_view;
  if (from.dims != to.dims || from.P != to.P) return std::nullopt;
  if (from == to) {
    const double seconds = move.loaded ? 0 : reshard_seconds(from, from_view, to, to_view, machine_);
    return ReshardPath{{}, seconds, seconds};
  }
  const int devices = machine_.devices();
  // On other devices than the producer's, a chain may change layouts among the producer's devices
  // before its values cross, or cross at once.
  const bool two_sides = from_view != to_view;
  const auto view_of = [&](const State& s) -> std::optional<pcg::MachineView> {
    if (!s.consumer && s.shape == from) return from_view;
    return side_view(s.shape.tasks(), s.consumer ? to_view : from_view, devices);
  };
  const bool gains_devices = std::any_of(to_view.devices.begin(), to_view.devices.end(), [&from_view](int d) {
    return std::find(from_view.devices.begin(), from_view.devices.end(), d) == from_view.devices.end();
  });
  const Between between(from, to, gains_devices);
  std::unordered_map<State, Came, StateHash> came;
  const State start{from, !two_sides};
  std::unordered_map<State, Reached, StateHash> best{{start, {}}};
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> queue;
  queue.push({{}, start});
  // The chain Dijkstra's `came` holds to a settled state, and the shapes its steps make.
  const auto chain_to = [&](State s) {
    Chain chain;
    for (; !(s == start); s = came.at(s).before) {
      chain.steps.push_back(came.at(s).step);
      chain.shapes.push_back(s.shape);
    }
    std::reverse(chain.steps.begin(), chain.steps.end());
    std::reverse(chain.shapes.begin(), chain.shapes.end());
    return chain;
  };
  // The cheapest arrival at `to`: on the consumer's side, or on the producer's and read from there.
  struct Arrived {
    Reached total;
    State state;
  };
  std::optional<Arrived> arrived;
  // As the plan runs them: the chains that end with a step into `to` from a settled state, the
  // cheapest as run kept.
  struct Priced {
    Reached as_run;
    Chain chain;
    double step_seconds = 0;
  };
  std::optional<Priced> priced;
  // A chain whose steps apart cost more than the cheapest as run is not priced, unless it is one
  // the shortest path arrives by (`settled`), so that no chain is dearer as run than the shortest.
  // The same collective reached by other chains is priced on other views: equal within rounding,
  // the fewer steps are taken.
  const auto cheaper_as_run = [](const Reached& a, const Reached& b) {
    const double tolerance = 1e-9 * std::max(a.seconds, b.seconds);
    return a.seconds < b.seconds - tolerance || (a.seconds <= b.seconds + tolerance && a.steps < b.steps);
  };
  const auto price = [&](Chain chain, const Reached& apart, bool settled) {
    if (!settled && priced && !(apart < priced->as_run)) return;
    const double seconds = chain.steps.size() > 1
                               ? as_run_seconds(move.from, move.from_view, chain.steps, chain.shapes, move.to_view, move.loaded)
                               : apart.seconds;
    const Reached as_run{seconds, apart.steps};
    if (std::isfinite(seconds) && (!priced || cheaper_as_run(as_run, priced->as_run)))
      priced = Priced{as_run, std::move(chain), apart.seconds};
  };
  const bool as_run = pricing_ == ChainPricing::as_run;
  while (!queue.empty()) {
    const Arrival at = queue.top();
    queue.pop();
    if (best.at(at.state) < at.cost) continue;
    if (arrived && !(at.cost < arrived->total) && (!as_run || !priced || !(at.cost < priced->as_run))) break;
    if (at.state.shape == to) {
      const double read = at.state.consumer ? 0 : step_seconds(to, *view_of(at.state), to, to_view);
      const Reached total{at.cost.seconds + read, at.cost.steps};
      if (std::isfinite(total.seconds) && (!arrived || total < arrived->total)) arrived = Arrived{total, at.state};
      if (as_run && std::isfinite(total.seconds)) price(chain_to(at.state), total, true);
      if (at.state.consumer) continue;
    }
    const pcg::MachineView here = *view_of(at.state);
    std::optional<Chain> here_chain;  // chain_to(at.state), once a step into `to` needs it
    for (const Edge& edge : edges_from(at.state.shape, between.span())) {
      if (!between.contains(edge.shape)) continue;
      for (bool consumer : {false, true}) {
        if (at.state.consumer && !consumer) continue;
        const State next{edge.shape, consumer};
        const std::optional<pcg::MachineView> there = view_of(next);
        if (!there) continue;
        const double seconds = move.loaded && at.state == start ? 0 : step_seconds(at.state.shape, here, edge.shape, *there);
        if (!std::isfinite(seconds)) continue;
        const Reached cost{at.cost.seconds + seconds, at.cost.steps + 1};
        const auto known = best.find(next);
        const bool better = known == best.end() || cost < known->second;
        // A step into `to`, the cheapest apart so far or not, may be the cheapest as run: a
        // later, cheaper step apart would leave it unpriced.
        const bool arrives = as_run && next.shape == to;
        if ((better || arrives) && edge_accepted(edge, at.state.shape)) {
          const ReshardStep step{forms_[edge.form].op, edge.attrs, *there};
          if (arrives) {
            const double read = consumer ? 0 : step_seconds(to, *there, to, to_view);
            const Reached total{cost.seconds + read, cost.steps};
            if (std::isfinite(total.seconds) && (!priced || total < priced->as_run)) {
              if (!here_chain) here_chain = chain_to(at.state);
              Chain chain = *here_chain;
              chain.steps.push_back(step);
              chain.shapes.push_back(edge.shape);
              price(std::move(chain), total, false);
            }
          }
          if (!better) continue;
          best[next] = cost;
          came[next] = {at.state, step};
          queue.push({cost, next});
        }
      }
    }
  }
  if (priced) return ReshardPath{std::move(priced->chain.steps), priced->as_run.seconds, priced->step_seconds};
  if (!arrived) return std::nullopt;
  Chain chain = chain_to(arrived->state);
  ReshardPath path{std::move(chain.steps), arrived->total.seconds, arrived->total.seconds};
  if (path.steps.size() > 1) path.seconds = as_run_seconds(move.from, move.from_view, path.steps, chain.shapes, move.to_view, move.loaded);
  return path;
}

double RvdSearch::as_run_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const std::vector<ReshardStep>& steps,
                                 const std::vector<pcg::ParallelShape>& shapes, const pcg::MachineView& to_view, bool loaded) const {
  if (steps.size() != shapes.size())
    throw LoomError("RvdSearch::as_run_seconds: " + std::to_string(steps.size()) + " steps make " + std::to_string(shapes.size()) +
                    " shapes");
  if (steps.empty()) return loaded ? 0 : reshard_seconds(from, from_view, from, to_view, machine_);
  const Move move{from, shapes.back(), from_view, to_view, loaded};
  const double read = steps.back().view == to_view ? 0 : step_seconds(shapes.back(), steps.back().view, shapes.back(), to_view);
  return fused_seconds(move, steps, shapes) + read;
}

double RvdSearch::fused_seconds(const Move& move, const std::vector<ReshardStep>& steps,
                                const std::vector<pcg::ParallelShape>& shapes) const {
  // The chain as a plan holds it: the value (a graph input where it is loaded, else a producer's
  // output), then a layout change per step, each read only by the next.
  pcg::Graph chain;
  std::vector<pcg::MachineView> views;
  pcg::NodeId at = chain.add_input("value", move.from);
  views.push_back(move.from_view);
  if (!move.loaded) {
    at = chain.add_node_with_shapes("producer", {}, {{at, 0}}, {move.from});
    views.push_back(move.from_view);
  }
  const std::size_t first_step = views.size();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    at = chain.add_node_with_shapes(steps[i].op, steps[i].attrs, {{at, 0}}, {shapes[i]});
    views.push_back(steps[i].view);
  }
  const pcg::LayoutChangeSources fused = pcg::fuse_layout_changes(
      chain, [first_step](const pcg::Node& n) { return n.id.index() >= first_step; },
      [&views](const pcg::Node& n) { return views[n.id.index()]; }, true,
      [this](const pcg::ParallelShape& a, const pcg::MachineView& a_view, const pcg::ParallelShape& b, const pcg::MachineView& b_view) {
        return moves_as_one_collective(a, a_view, b, b_view);
      });
  double seconds = 0;
  for (std::size_t i = first_step; i < chain.size(); ++i) {
    if (fused.fused_away[i]) continue;
    const pcg::PortRef source = fused.source[i];
    if (chain.node(source.node).is_graph_input()) continue;  // each device loads its piece
    seconds += step_seconds(chain.shape_of(source), views[source.node.index()], chain.node(pcg::NodeId(i)).output_shapes[0], views[i]);
  }
  return seconds;
}

}  // namespace loom::search
