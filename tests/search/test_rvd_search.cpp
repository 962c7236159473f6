// Moves between parallel shapes: the cheapest chain of whatever parallel and fused forms the
// library declares (the RVD transition graph), against an exhaustive search over the library's
// own shape rules.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/reshard.hpp"
#include "loom/search/rvd_search.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using test_support::library;

constexpr const char* kRenamedForms = R"(
parallel cut<axis: int in 0..7, ways: int in 2..64>(x) {
  require axis < rank;
  require shape[axis] % (D[axis] * P[axis] * ways) == 0;
  D[axis] *= ways;
  values split;
  backward glue<axis, ways>;
  lowers_to scatter;
}
parallel glue<axis: int in 0..7, ways: int in 2..64>(x) {
  require axis < rank;
  require D[axis] % ways == 0;
  D[axis] /= ways;
  values concat;
  backward cut<axis, ways>;
  lowers_to gather;
}
parallel copies<n: int in 2..64>(x) {
  R *= n;
  values copy;
  backward add_up<n>;
  lowers_to broadcast;
}
parallel add_up<n: int in 2..64>(x) {
  require V % n == 0;
  V /= n;
  values sum;
  backward copies<n>;
  lowers_to reduce;
}
fused move_split<a: int in 0..7, b: int in 0..7, k: int in 2..64>(x) = cut<b, k>(glue<a, k>(x)) lowers_to all_to_all;
)";

pcg::ParallelShape held(std::vector<std::int64_t> D, std::int64_t V, std::int64_t R) {
  return pcg::ParallelShape::partitioned({8, 12}, std::move(D), V, R);
}

std::vector<pcg::ParallelShape> small_shapes(std::int64_t most_tasks) {
  std::vector<pcg::ParallelShape> out;
  for (std::int64_t d0 : {1, 2, 4})
    for (std::int64_t d1 : {1, 2, 4})
      for (std::int64_t V : {1, 2})
        for (std::int64_t R : {1, 2})
          if (d0 * d1 * V * R <= most_tasks) out.push_back(held({d0, d1}, V, R));
  return out;
}

// Two sockets of four devices per node, two nodes: three kinds of link.
Machine two_nodes() { return load_machine("summit").with_nodes(2).with_devices_per_node(8); }

pcg::MachineView on(int first, const pcg::ParallelShape& s) { return pcg::MachineView::contiguous(first, s.tasks()); }

std::vector<std::string> ops_of(const ReshardPath& path) {
  std::vector<std::string> out;
  for (const ReshardStep& s : path.steps) out.push_back(s.op);
  return out;
}

// Runs the steps through the library's own shape rules and checks they arrive at `to`.
void expect_arrives(const spec::Library& lib, const ReshardPath& path, const pcg::ParallelShape& from, const pcg::ParallelShape& to) {
  pcg::ParallelShape at = from;
  for (const ReshardStep& s : path.steps) at = lib.infer(s.op, s.attrs, {at}).at(0);
  EXPECT_EQ(at, to) << from.to_string() << " -> " << to.to_string();
}

// Whether each degree of `s` is a multiple of the smaller and a divisor of the larger of the two
// ends' (D per dimension, V, R), and `s` has no more tasks than either end. Where `widen` and the
// consumer wants more copies, the degree of the first largest dimension after the first may
// instead divide the least common multiple of its ends' and the copies gained.
bool between(const pcg::ParallelShape& s, const pcg::ParallelShape& from, const pcg::ParallelShape& to, bool widen) {
  const auto inside = [](std::int64_t x, std::int64_t a, std::int64_t b) { return x % std::gcd(a, b) == 0 && std::lcm(a, b) % x == 0; };
  const std::int64_t gained = to.R / std::gcd(to.R, from.R);
  std::size_t widest = 1;
  for (std::size_t d = 2; d < s.rank(); ++d)
    if (s.dims[d] > s.dims[widest]) widest = d;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    if (inside(s.D[d], from.D[d], to.D[d])) continue;
    const bool wider = widen && gained > 1 && d > 0 && d == widest && s.D[d] % std::gcd(from.D[d], to.D[d]) == 0 &&
                       std::lcm(std::lcm(from.D[d], to.D[d]), gained) % s.D[d] == 0;
    if (!wider) return false;
  }
  return inside(s.V, from.V, to.V) && inside(s.R, from.R, to.R) && s.tasks() <= std::max(from.tasks(), to.tasks());
}

// Every step of the library's parallel and fused forms, each attribute at every value up to
// `most_attr`, and what the library's rules make of a shape by one (cached across calls).
struct FormSteps {
  struct Step {
    std::string form;
    pcg::AttrMap attrs;
  };

  FormSteps(const spec::Library& lib, std::int64_t most_attr) : lib_(lib) {
    std::vector<std::string> names;
    for (const spec::ParallelDecl* p : lib.parallel_forms()) names.push_back(p->name);
    for (const spec::FusedDecl* f : lib.fused_forms()) names.push_back(f->name);
    for (const std::string& form : names) {
      std::vector<pcg::AttrMap> assignments{{}};
      for (const spec::AttrParam& a : *lib.attr_params(form)) {
        std::vector<pcg::AttrMap> grown;
        for (const pcg::AttrMap& m : assignments)
          for (std::int64_t v = 0; v <= most_attr; ++v) {
            pcg::AttrMap g = m;
            g[a.name] = v;
            grown.push_back(g);
          }
        assignments = grown;
      }
      for (pcg::AttrMap& a : assignments) steps.push_back({form, std::move(a)});
    }
  }

  std::optional<pcg::ParallelShape> apply(const Step& step, const pcg::ParallelShape& s) const {
    static std::map<std::string, std::optional<pcg::ParallelShape>> typed;
    std::string key = step.form + s.to_string();
    for (const auto& [name, value] : step.attrs) key += " " + std::to_string(value);
    auto [known, fresh] = typed.try_emplace(key);
    if (fresh) try {
        known->second = lib_.infer(step.form, step.attrs, {s}).at(0);
      } catch (const LoomError&) {
      }
    return known->second;
  }

  std::vector<Step> steps;

 private:
  const spec::Library& lib_;
};

// Whether the consumer is on a device the producer is not on.
bool gains_devices(const pcg::MachineView& from_view, const pcg::MachineView& to_view) {
  return std::any_of(to_view.devices.begin(), to_view.devices.end(),
                     [&](int d) { return std::find(from_view.devices.begin(), from_view.devices.end(), d) == from_view.devices.end(); });
}

// The devices of shape `s` held on the producer's side (0) or the consumer's (1), as the search
// places them: the side's own view when it has as many tasks, else a block from its first device.
pcg::MachineView side_view(const Machine& machine, const pcg::MachineView& from_view, const pcg::MachineView& to_view,
                           const pcg::ParallelShape& s, int side) {
  const pcg::MachineView& own = side == 0 ? from_view : to_view;
  if (s.tasks() == static_cast<std::int64_t>(own.tasks())) return own;
  const int first = std::min<int>(own.devices.front(), machine.devices() - static_cast<int>(s.tasks()));
  return pcg::MachineView::contiguous(std::max(first, 0), s.tasks());
}

// The cheapest move by exhaustion: every shape between the ends (widened only where `widen` and
// the consumer is on devices the producer is not) that the library's forms reach from `from` in up to `depth`
// steps, with every attribute value up to `most_attr`, then Bellman-Ford over those steps, each
// costed by reshard_seconds.
double exhaustive_seconds(const spec::Library& lib, const Machine& machine, const pcg::ParallelShape& from,
                          const pcg::MachineView& from_view, const pcg::ParallelShape& to, const pcg::MachineView& to_view, int depth,
                          bool widen = true, std::int64_t most_attr = 4) {
  struct Edge {
    pcg::ParallelShape a, b;
  };
  const bool gaining = gains_devices(from_view, to_view);
  const FormSteps forms(lib, most_attr);
  std::vector<Edge> edges;
  std::vector<pcg::ParallelShape> frontier{from}, seen{from};
  for (int level = 0; level < depth; ++level) {
    std::vector<pcg::ParallelShape> next;
    for (const pcg::ParallelShape& s : frontier)
      for (const FormSteps::Step& step : forms.steps) {
        const std::optional<pcg::ParallelShape> made = forms.apply(step, s);
        if (!made) continue;
        const pcg::ParallelShape b = *made;
        if (b == s || !between(b, from, to, widen && gaining)) continue;
        edges.push_back({s, b});
        if (std::find(seen.begin(), seen.end(), b) == seen.end()) {
          seen.push_back(b);
          next.push_back(b);
        }
      }
    frontier = next;
  }
  // Each shape on the producer's devices (side 0) or the consumer's (side 1); the producer's
  // side only where the two differ. A step may stay on its side or go from the producer's to the
  // consumer's; a result left on the producer's side is read from there.
  const auto view_of = [&](const pcg::ParallelShape& s, int side) { return side_view(machine, from_view, to_view, s, side); };
  const int start_side = from_view == to_view ? 1 : 0;
  const auto key = [](const pcg::ParallelShape& s, int side) { return s.to_string() + "@" + std::to_string(side); };
  const double infinity = std::numeric_limits<double>::infinity();
  std::map<std::string, double> best{{key(from, start_side), 0}};
  const auto at = [&](const pcg::ParallelShape& s, int side) {
    auto it = best.find(key(s, side));
    return it == best.end() ? infinity : it->second;
  };
  for (int round = 0; round < depth; ++round) {
    std::map<std::string, double> after = best;
    for (const Edge& e : edges)
      for (int side = start_side; side < 2; ++side)
        for (int next = side; next < 2; ++next) {
          const pcg::MachineView here = side == 0 && e.a == from ? from_view : view_of(e.a, side);
          const double via = at(e.a, side) + reshard_seconds(e.a, here, e.b, view_of(e.b, next), machine);
          auto& slot = after.emplace(key(e.b, next), infinity).first->second;
          slot = std::min(slot, via);
        }
    best = after;
  }
  if (from == to) return reshard_seconds(from, from_view, to, to_view, machine);
  return std::min(at(to, 1), at(to, 0) + reshard_seconds(to, view_of(to, 0), to, to_view, machine));
}

// The cheapest chain of up to `depth` steps as a plan runs it, by exhaustion: every sequence of the
// library's forms (attributes up to `most_attr`) through shapes between the ends, each step's
// result on the producer's side or the consumer's (once on the consumer's, it stays there), priced
// by the search's own as_run_seconds (`loaded`: from a graph input, as RvdSearch::cheapest).
double exhaustive_as_run(const RvdSearch& search, const spec::Library& lib, const Machine& machine, const pcg::ParallelShape& from,
                         const pcg::MachineView& from_view, const pcg::ParallelShape& to, const pcg::MachineView& to_view, int depth,
                         bool loaded, std::int64_t most_attr = 4) {
  const bool gaining = gains_devices(from_view, to_view);
  const FormSteps forms(lib, most_attr);
  double best = std::numeric_limits<double>::infinity();
  std::vector<ReshardStep> steps;
  std::vector<pcg::ParallelShape> shapes;
  std::function<void(const pcg::ParallelShape&, int)> extend = [&](const pcg::ParallelShape& at, int side) {
    if (static_cast<int>(steps.size()) == depth) return;
    for (const FormSteps::Step& step : forms.steps) {
      const std::optional<pcg::ParallelShape> next = forms.apply(step, at);
      if (!next || *next == at || !between(*next, from, to, gaining)) continue;
      for (int next_side = side; next_side < 2; ++next_side) {
        if (next->tasks() > machine.devices()) continue;
        steps.push_back({step.form, step.attrs, side_view(machine, from_view, to_view, *next, next_side)});
        shapes.push_back(*next);
        if (*next == to) best = std::min(best, search.as_run_seconds(from, from_view, steps, shapes, to_view, loaded));
        extend(*next, next_side);
        steps.pop_back();
        shapes.pop_back();
      }
    }
  };
  extend(from, from_view == to_view ? 1 : 0);
  return best;
}

TEST(LayoutForms, TheBundledFormsAreReadFromTheirDeclarations) {
  std::map<std::string, LayoutForm> by_name;
  for (const LayoutForm& f : layout_forms(library())) by_name[f.op] = f;
  for (const char* op : {"partition", "combine", "replicate", "reduce", "allreduce", "reduce_scatter", "all_gather", "all_to_all"})
    EXPECT_TRUE(by_name.count(op)) << op;
  const LayoutForm& swap = by_name.at("all_to_all");
  ASSERT_EQ(swap.changes.size(), 2u);
  EXPECT_FALSE(swap.changes[0].multiply);
  EXPECT_EQ(swap.changes[0].dim_attr, "src");
  EXPECT_TRUE(swap.changes[1].multiply);
  EXPECT_EQ(swap.changes[1].dim_attr, "dst");
  EXPECT_EQ(swap.amount_attrs(), std::vector<std::string>{"degree"});
  EXPECT_EQ(swap.apply({{"src", 0}, {"dst", 1}, {"degree", 2}}, held({2, 1}, 1, 1)), held({1, 2}, 1, 1));
  EXPECT_FALSE(swap.apply({{"src", 0}, {"dst", 1}, {"degree", 2}}, held({1, 1}, 1, 1)));
}

TEST(RvdSearch, EveryReshardableMoveArrivesByTheLibrarysOwnRules) {
  const Machine machine = two_nodes();
  const RvdSearch search(library(), machine);
  int moves = 0;
  for (const pcg::ParallelShape& from : small_shapes(8))
    for (const pcg::ParallelShape& to : small_shapes(8)) {
      const auto path = search.cheapest(from, on(0, from), to, on(8, to));
      ASSERT_EQ(path.has_value(), reshardable(from, to)) << from.to_string() << " -> " << to.to_string();
      if (!path) continue;
      expect_arrives(library(), *path, from, to);
      EXPECT_EQ(path->steps.empty(), from == to);
      ++moves;
    }
  EXPECT_GT(moves, 100);
}

TEST(RvdSearch, IsAsCheapAsAnExhaustiveSearchOfTheLibrarysForms) {
  constexpr std::size_t kDepth = 3;
  const Machine machine = two_nodes();
  const RvdSearch search(library(), machine, ChainPricing::steps_apart);
  int compared = 0;
  for (int to_first : {0, 2, 4, 8})
    for (const pcg::ParallelShape& from : small_shapes(4))
      for (const pcg::ParallelShape& to : small_shapes(4)) {
        if (!reshardable(from, to)) continue;
        const auto path = search.cheapest(from, on(0, from), to, on(to_first, to));
        ASSERT_TRUE(path);
        const double exhaustive = exhaustive_seconds(library(), machine, from, on(0, from), to, on(to_first, to), static_cast<int>(kDepth));
        const std::string move = from.to_string() + " -> " + to.to_string() + " to device " + std::to_string(to_first);
        EXPECT_LE(path->step_seconds, exhaustive + 1e-12 + 1e-9 * exhaustive) << move;
        // A longer chain is out of the exhaustion's reach: between nodes, where the messages
        // through a node's port take turns, gathering pieces before they cross can pay.
        if (path->steps.size() > kDepth) continue;
        EXPECT_NEAR(path->step_seconds, exhaustive, 1e-12 + 1e-9 * exhaustive) << move;
        ++compared;
      }
  EXPECT_GT(compared, 50);
}

// Chosen as the plan runs it, a chain is never dearer as run than the shortest path's (within the
// rounding that equal collectives priced on other views differ by), and between
// nodes, where a chain whose steps fuse into one all-to-all takes turns at the ports, some are cheaper.
TEST(RvdSearch, AChainChosenAsItRunsIsNeverDearerThanTheShortestPath) {
  const Machine machine = two_nodes();
  const RvdSearch as_run(library(), machine), apart(library(), machine, ChainPricing::steps_apart);
  int cheaper = 0, compared = 0;
  for (int to_first : {0, 4, 8})
    for (const pcg::ParallelShape& from : small_shapes(8))
      for (const pcg::ParallelShape& to : small_shapes(8)) {
        if (!reshardable(from, to)) continue;
        const auto chosen = as_run.cheapest(from, on(0, from), to, on(to_first, to));
        const auto shortest = apart.cheapest(from, on(0, from), to, on(to_first, to));
        ASSERT_TRUE(chosen && shortest);
        const std::string move = from.to_string() + " -> " + to.to_string() + " to device " + std::to_string(to_first);
        expect_arrives(library(), *chosen, from, to);
        EXPECT_LE(chosen->seconds, shortest->seconds * (1 + 1e-9)) << move;
        EXPECT_GE(chosen->step_seconds, shortest->step_seconds * (1 - 1e-12)) << move;
        if (chosen->seconds < shortest->seconds * (1 - 1e-9)) ++cheaper;
        ++compared;
      }
  EXPECT_GT(compared, 100);
  EXPECT_GT(cheaper, 0);
  RecordProperty("cheaper_as_run", std::to_string(cheaper) + " of " + std::to_string(compared));
}

// The search weighs, as the plan runs them, only the chains that end with a step into the wanted
// layout from a shape its shortest path has settled. Against every chain of up to three steps of
// the library's forms priced as run, on two nodes, from a producer's output or a loaded graph
// input, it is never dearer, and it takes the cheapest where that is within reach.
TEST(RvdSearch, AsRunIsAsCheapAsAnExhaustionOfTheChainsAsRun) {
  constexpr int kDepth = 3;
  const Machine machine = two_nodes();
  const RvdSearch as_run(library(), machine), apart(library(), machine, ChainPricing::steps_apart);
  int compared = 0, fused_cheaper = 0;
  const auto compare = [&](const pcg::ParallelShape& from, const pcg::ParallelShape& to, int to_first, bool loaded) {
    if (!reshardable(from, to) || from == to) return;
    const std::string move =
        from.to_string() + " -> " + to.to_string() + " to device " + std::to_string(to_first) + (loaded ? ", loaded" : "");
    const auto chosen = as_run.cheapest(from, on(0, from), to, on(to_first, to), loaded);
    ASSERT_TRUE(chosen) << move;
    std::vector<pcg::ParallelShape> shapes;
    pcg::ParallelShape at = from;
    for (const ReshardStep& s : chosen->steps) shapes.push_back(at = library().infer(s.op, s.attrs, {at}).at(0));
    EXPECT_NEAR(chosen->seconds, as_run.as_run_seconds(from, on(0, from), chosen->steps, shapes, on(to_first, to), loaded), 1e-15) << move;
    const double best = exhaustive_as_run(as_run, library(), machine, from, on(0, from), to, on(to_first, to), kDepth, loaded);
    ASSERT_TRUE(std::isfinite(best)) << move;
    EXPECT_LE(chosen->seconds, best * (1 + 1e-9)) << move;
    if (static_cast<int>(chosen->steps.size()) <= kDepth) {
      EXPECT_NEAR(chosen->seconds, best, 1e-9 * best + 1e-15) << move;
    }
    const auto shortest = apart.cheapest(from, on(0, from), to, on(to_first, to), loaded);
    if (shortest && best < shortest->seconds * (1 - 1e-9)) ++fused_cheaper;
    ++compared;
  };
  // Onto the other socket, where some chains of moves run cheaper fused than apart.
  for (const pcg::ParallelShape& from : small_shapes(8))
    for (const pcg::ParallelShape& to : small_shapes(8)) compare(from, to, 4, false);
  for (int to_first : {0, 8})
    for (const pcg::ParallelShape& from : small_shapes(4))
      for (const pcg::ParallelShape& to : small_shapes(4)) compare(from, to, to_first, false);
  for (const pcg::ParallelShape& from : small_shapes(4))
    for (const pcg::ParallelShape& to : small_shapes(4)) compare(from, to, 8, true);
  EXPECT_GT(compared, 500);
  EXPECT_GT(fused_cheaper, 0);  // some chains run cheaper fused than the shortest path's
  RecordProperty("cheaper_than_the_shortest_path", std::to_string(fused_cheaper) + " of " + std::to_string(compared));
}

// A layout change's pattern worked out on the least evenly divided value prices a larger value of
// the same degrees and views exactly as the pattern worked out on that value itself.
TEST(ReshardPattern, PricesEveryValueOfItsDegreesAsThatValuesOwn) {
  const Machine machine = two_nodes();
  int compared = 0;
  for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{8, 12}, {24, 60}, {4 * 1024, 12 * 7}})
    for (std::int64_t stages : {1, 2})
      for (int to_first : {0, 3, 8})
        for (const pcg::ParallelShape& small_from : small_shapes(4))
          for (const pcg::ParallelShape& small_to : small_shapes(4)) {
            pcg::ParallelShape from = small_from, to = small_to;
            from.dims = to.dims = dims;
            from.P = to.P = {stages, 1};  // pipeline stages split the first dimension too
            const auto least = evenly_divided_shapes(from, to);
            ASSERT_TRUE(least) << from.to_string() << " -> " << to.to_string();
            EXPECT_LE(least->first.elements(), from.elements());
            const double own = reshard_pattern(from, on(0, from), to, on(to_first, to), machine).seconds(from, to, machine);
            const double shared =
                reshard_pattern(least->first, on(0, from), least->second, on(to_first, to), machine).seconds(from, to, machine);
            EXPECT_EQ(shared, own) << from.to_string() << " -> " << to.to_string() << " to device " << to_first;
            if (std::isfinite(own) && own > 0) ++compared;
          }
  EXPECT_GT(compared, 600);
}

// A search that has priced the steps of a small value prices a large one of the same degrees as a
// fresh search does, each step as reshard_seconds prices it on the large value itself.
TEST(RvdSearch, StepsPricedOnASmallValueServeALargeOne) {
  const Machine machine = two_nodes();
  const RvdSearch warmed(library(), machine);
  for (const pcg::ParallelShape& from : small_shapes(4))
    for (const pcg::ParallelShape& to : small_shapes(4))
      if (reshardable(from, to)) {
        warmed.cheapest(from, on(0, from), to, on(8, to));
        if (from.tasks() == to.tasks()) warmed.cheapest(from, on(0, from), to, on(0, from));
      }
  int same_devices = 0;
  for (const pcg::ParallelShape& small_from : small_shapes(4))
    for (const pcg::ParallelShape& small_to : small_shapes(4)) {
      if (!reshardable(small_from, small_to)) continue;
      pcg::ParallelShape from = small_from, to = small_to;
      from.dims = to.dims = {8 * 96, 12 * 40};
      const RvdSearch fresh(library(), machine);
      const auto a = warmed.cheapest(from, on(0, from), to, on(8, to)), b = fresh.cheapest(from, on(0, from), to, on(8, to));
      ASSERT_TRUE(a && b);
      EXPECT_DOUBLE_EQ(a->seconds, b->seconds) << from.to_string() << " -> " << to.to_string();
      EXPECT_EQ(a->steps, b->steps);
      // On the same devices each step is read where it lands: the path's steps apart cost their sum.
      if (from.tasks() != to.tasks()) continue;
      ++same_devices;
      const auto same = warmed.cheapest(from, on(0, from), to, on(0, from));
      ASSERT_TRUE(same);
      double summed = 0;
      pcg::ParallelShape at = from;
      pcg::MachineView at_view = on(0, from);
      for (const ReshardStep& step : same->steps) {
        const pcg::ParallelShape next = library().infer(step.op, step.attrs, {at}).at(0);
        summed += reshard_seconds(at, at_view, next, step.view, machine);
        at = next;
        at_view = step.view;
      }
      EXPECT_DOUBLE_EQ(same->step_seconds, summed) << from.to_string() << " -> " << to.to_string();
    }
  EXPECT_GT(same_devices, 20);
}

TEST(RvdSearch, PartialSumsBecomeCopiesByOneAllreduceCostedAsARing) {
  const Machine machine = two_nodes();
  const RvdSearch search(library(), machine);
  const pcg::ParallelShape from = pcg::ParallelShape::partitioned({1024, 1024}, {}, 4, 1),
                           to = pcg::ParallelShape::partitioned({1024, 1024}, {}, 1, 4);
  const auto path = search.cheapest(from, on(0, from), to, on(0, to));
  ASSERT_TRUE(path);
  EXPECT_EQ(ops_of(*path), std::vector<std::string>{"allreduce"});
  const double bytes = 1024 * 1024 * kBytesPerElement;
  EXPECT_DOUBLE_EQ(path->seconds, machine.link_between(0, 3).ring_allreduce_seconds(bytes, 4));
  // Summed on one device and copied back, the same move is two steps of point-to-point sends.
  const pcg::ParallelShape one = pcg::ParallelShape::unpartitioned({1024, 1024});
  const double by_hand =
      reshard_seconds(from, on(0, from), one, on(0, one), machine) + reshard_seconds(one, on(0, one), to, on(0, to), machine);
  EXPECT_LT(path->seconds, by_hand);
}

// Copies wanted on another node: sending the whole value to every consumer crosses the network
// once per copy, through the producer's port. The search cuts it into pieces, on a split neither
// end has, that cross once in all, and gathers them among the consumers (SuperScaler's inter-RVD,
// its figure 18a); the gathers are priced as the plan runs them.
TEST(RvdSearch, CopiesForAnotherNodeCrossInPiecesAndAreGatheredThere) {
  const Machine machine = two_nodes();
  const RvdSearch search(library(), machine);
  for (std::int64_t copies : {1, 4}) {
    const pcg::ParallelShape from = pcg::ParallelShape::partitioned({16, 256, 1024}, {}, 1, copies),
                             to = pcg::ParallelShape::partitioned({16, 256, 1024}, {}, 1, 8);
    const auto path = search.cheapest(from, on(0, from), to, on(8, to));
    ASSERT_TRUE(path);
    ASSERT_GE(path->steps.size(), 2u);
    EXPECT_EQ(path->steps.back().view, on(8, to));
    pcg::ParallelShape at = from;
    std::int64_t most_pieces = 1;
    for (const ReshardStep& s : path->steps) {
      at = library().infer(s.op, s.attrs, {at}).at(0);
      // Only the largest dimension after the batch is split: not the batch, not the smaller one.
      EXPECT_EQ(at.D[0], 1) << s.op;
      EXPECT_EQ(at.D[1], 1) << s.op;
      most_pieces = std::max(most_pieces, at.D[2]);
    }
    EXPECT_EQ(at, to);
    EXPECT_GT(most_pieces, 1) << "the value crosses whole";
    // The cheapest chain through the ends' own degrees only, by exhaustion: the value crosses whole.
    const double whole = exhaustive_seconds(library(), machine, from, on(0, from), to, on(8, to), 3, false, 8);
    EXPECT_LT(path->seconds, whole) << copies << " copies";
  }
}

// A split moved from one dimension to another is one all-to-all: each device sends the other
// devices their blocks of its piece.
TEST(RvdSearch, AMovedSplitIsOneAllToAll) {
  const Machine machine = two_nodes();
  const RvdSearch search(library(), machine);
  const pcg::ParallelShape from = pcg::ParallelShape::partitioned({1024, 1024}, {2, 1}),
                           to = pcg::ParallelShape::partitioned({1024, 1024}, {1, 2});
  const auto path = search.cheapest(from, on(0, from), to, on(0, to));
  ASSERT_TRUE(path);
  EXPECT_EQ(ops_of(*path), std::vector<std::string>{"all_to_all"});
  const Link& link = machine.link_between(0, 1);
  const double piece_bytes = 512 * 1024 * kBytesPerElement;
  EXPECT_DOUBLE_EQ(path->seconds, link.latency + 0.5 * piece_bytes / link.bandwidth);
}

// A co-sharded consumer runs more pieces than the machine has devices: no step of the chain may
// lay its pieces out on devices the machine lacks.
TEST(RvdSearch, StepsTowardsACoshardedConsumerStayOnTheMachine) {
  // Swin's windows, split by features over 32 devices of 8 nodes, read by attention that is split
  // by windows and co-sharded by heads, two pieces a device, each with a copy of its windows.
  const Machine nodes = load_machine("summit").with_nodes(8).with_devices_per_node(4);
  const RvdSearch wide(library(), nodes);
  std::vector<int> twice;
  for (int d = 0; d < nodes.devices(); ++d) twice.insert(twice.end(), {d, d});
  const auto path = wide.cheapest(pcg::ParallelShape::partitioned({64, 2, 64}, {1, 1, 32}), pcg::MachineView::contiguous(0, 32),
                                  pcg::ParallelShape::partitioned({64, 2, 64}, {32, 1, 1}, 1, 2), pcg::MachineView{twice});
  ASSERT_TRUE(path);
  for (const ReshardStep& step : path->steps)
    for (int d : step.view.devices) EXPECT_LT(d, nodes.devices()) << step.op;
}

// The move search asks this of every chain it weighs as run.
TEST(RvdSearch, TellsAsTheLayoutFusionDoesWhetherAChangeIsOneCollective) {
  const Machine machine = two_nodes();
  const RvdSearch search(library(), machine);
  const pcg::ParallelShape rows = pcg::ParallelShape::partitioned({1024, 1024}, {2, 1}),
                           columns = pcg::ParallelShape::partitioned({1024, 1024}, {1, 2}),
                           quarters = pcg::ParallelShape::partitioned({1024, 1024}, {1, 4});
  const pcg::MachineView elsewhere{{2, 3}};
  for (int asked = 0; asked < 2; ++asked) {  // the second time from the cache
    EXPECT_TRUE(search.moves_as_one_collective(rows, on(0, rows), columns, on(0, columns)));
    EXPECT_FALSE(search.moves_as_one_collective(rows, on(0, rows), columns, elsewhere));
    EXPECT_FALSE(search.moves_as_one_collective(rows, on(0, rows), quarters, on(0, quarters)));
  }
  EXPECT_EQ(pcg::moves_as_one_collective(rows, on(0, rows), columns, on(0, columns)), true);
  EXPECT_EQ(pcg::moves_as_one_collective(rows, on(0, rows), columns, elsewhere), false);
  // The change laid out, before or after the question, tells the same.
  EXPECT_TRUE(search.laid_out(rows, on(0, rows), columns, on(0, columns)).collective.has_value());
  EXPECT_FALSE(search.laid_out(rows, on(0, rows), columns, elsewhere).collective.has_value());
  const RvdSearch laid_out_first(library(), machine);
  EXPECT_TRUE(laid_out_first.laid_out(rows, on(0, rows), columns, on(0, columns)).collective.has_value());
  EXPECT_FALSE(laid_out_first.laid_out(rows, on(0, rows), quarters, on(0, quarters)).collective.has_value());
  EXPECT_TRUE(laid_out_first.moves_as_one_collective(rows, on(0, rows), columns, on(0, columns)));
  EXPECT_FALSE(laid_out_first.moves_as_one_collective(rows, on(0, rows), quarters, on(0, quarters)));
}

TEST(RvdSearch, FormsOfOtherNamesAndAttributesMoveValuesAlike) {
  const spec::Library lib = spec::Library::from_text(kRenamedForms);
  const Machine machine = two_nodes();
  const RvdSearch search(lib, machine);
  for (const pcg::ParallelShape& from : small_shapes(8))
    for (const pcg::ParallelShape& to : small_shapes(8)) {
      const auto path = search.cheapest(from, on(0, from), to, on(0, to));
      ASSERT_EQ(path.has_value(), reshardable(from, to)) << from.to_string() << " -> " << to.to_string();
      if (path) expect_arrives(lib, *path, from, to);
    }
  const auto swap = search.cheapest(held({2, 1}, 1, 1), on(0, held({2, 1}, 1, 1)), held({1, 2}, 1, 1), on(0, held({1, 2}, 1, 1)));
  ASSERT_TRUE(swap);
  ASSERT_EQ(swap->steps.size(), 1u);
  EXPECT_EQ(swap->steps.front().op, "move_split");
  EXPECT_EQ(swap->steps.front().attrs, (pcg::AttrMap{{"a", 0}, {"b", 1}, {"k", 2}}));
}

// A fused form a user declares is one more edge: gathering pieces into copies as collectives
// replaces joining them on one device and copying the result back out.
TEST(RvdSearch, AUsersNewFusedFormIsANewEdge) {
  const pcg::ParallelShape from = held({4, 1}, 1, 1), to = held({1, 1}, 1, 4);
  const Machine machine = two_nodes();
  const spec::Library plain = spec::Library::from_text(kRenamedForms);
  const auto before = RvdSearch(plain, machine).cheapest(from, on(0, from), to, on(0, to));
  ASSERT_TRUE(before);
  EXPECT_EQ(ops_of(*before), (std::vector<std::string>{"glue", "copies"}));

  const spec::Library grown = spec::Library::from_text(std::string(kRenamedForms) +
                                                       "fused gather_all<a: int in 0..7, k: int in 2..64>(x) = copies<k>(glue<a, k>(x)) "
                                                       "lowers_to all_gather;\n");
  const auto shortest = RvdSearch(grown, machine, ChainPricing::steps_apart).cheapest(from, on(0, from), to, on(0, to));
  ASSERT_TRUE(shortest);
  ASSERT_FALSE(shortest->steps.empty());
  for (const std::string& op : ops_of(*shortest)) EXPECT_EQ(op, "gather_all");
  EXPECT_LT(shortest->step_seconds, before->step_seconds);
  expect_arrives(grown, *shortest, from, to);
  // Yet the plan runs glue and copies as one all-gather all the same (pcg/layout_fusion.hpp):
  // chosen as it runs, the new form makes the chain one step, not faster.
  const auto after = RvdSearch(grown, machine).cheapest(from, on(0, from), to, on(0, to));
  ASSERT_TRUE(after);
  EXPECT_EQ(ops_of(*after), std::vector<std::string>{"gather_all"});
  EXPECT_DOUBLE_EQ(after->seconds, before->seconds);
  EXPECT_DOUBLE_EQ(shortest->seconds, before->seconds);
  expect_arrives(grown, *after, from, to);
}

TEST(RvdSearch, WithoutASwapFormASplitMovesByJoiningThenCutting) {
  std::string text = kRenamedForms;
  text.resize(text.find("fused move_split"));
  const spec::Library lib = spec::Library::from_text(text);
  const Machine machine = two_nodes();
  const auto path =
      RvdSearch(lib, machine).cheapest(held({2, 1}, 1, 1), on(0, held({2, 1}, 1, 1)), held({1, 2}, 1, 1), on(0, held({1, 2}, 1, 1)));
  ASSERT_TRUE(path);
  EXPECT_EQ(ops_of(*path), (std::vector<std::string>{"glue", "cut"}));
}

// A plan that moves nothing needs no parallel forms; one that must move a value says that no
// chain of the library's forms does it.
TEST(RvdSearch, OnlyAPlanThatMovesValuesNeedsTheForms) {
  const spec::Library lib = spec::Library::from_text("op twice(x: [n]) -> [n] { out[i] = x[i] * 2; }");
  pcg::Graph g;
  const pcg::PortRef x{g.add_input("x", pcg::ParallelShape::unpartitioned({4}), false), 0};
  const int node = g.add_node(lib, "twice", {}, {x});
  g.mark_output({node, 0});
  EXPECT_EQ(materialize(g, unsplit_placements(g), lib).size(), g.size());

  std::vector<Placement> split = unsplit_placements(g);
  pcg::ParallelShape halves = pcg::ParallelShape::unpartitioned({4});
  halves.D = {2};
  split[static_cast<std::size_t>(node)].config = {{halves}, {halves}, "input 0 dim 0 / 2"};
  try {
    materialize(g, split, lib);
    FAIL() << "a split was made without a form that cuts";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("no chain of the library's parallel and fused forms"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::search

namespace loom::search {
namespace {

// Data and weights are loaded where they are needed: each device loads its piece, so a chain's
// first step from a graph input moves nothing, and one form that makes the layout at once is the
// cheapest chain. A value computed on device 0 is copied to eight nodes more cheaply in steps, as
// the copies sent through device 0's network port at once take turns there.
TEST(RvdSearch, AGraphInputIsLoadedInPlaceByOneStep) {
  const Machine machine = load_machine("summit").with_nodes(8);
  const RvdSearch search(library(), machine);
  const pcg::ParallelShape whole = pcg::ParallelShape::unpartitioned({48, 48});
  const pcg::ParallelShape copies = pcg::ParallelShape::partitioned({48, 48}, {}, 1, 48);
  const auto loaded = search.cheapest(whole, on(0, whole), copies, on(0, copies), true);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(ops_of(*loaded), std::vector<std::string>{"replicate"});
  EXPECT_EQ(loaded->seconds, 0);
  const auto moved = search.cheapest(whole, on(0, whole), copies, on(0, copies));
  ASSERT_TRUE(moved);
  EXPECT_GT(moved->seconds, 0);
  EXPECT_GT(moved->steps.size(), 1u);
  EXPECT_LT(moved->seconds, reshard_seconds(whole, on(0, whole), copies, on(0, copies), machine));
}

}  // namespace
}  // namespace loom::search
