#pragma once
// The cheapest way to move a value from the layout its producer gives to the one a consumer needs:
// a shortest path over the RVD transition graph (SuperScaler). Its states are the value's parallel
// shapes between the two (each degree a multiple of the smaller and a divisor of the larger of its
// two ends, and no more tasks than the larger end has; where the consumer wants more copies on
// other devices, the largest dimension after the first may be split by a divisor of the copies
// gained besides), on the producer's devices or the consumer's;
// its edges are the library's parallel and fused
// forms (layout_forms.hpp) with every attribute value that the library's rules accept, so a
// `fused ... lowers_to` form that a user declares is one more edge. An edge costs what the runtime
// does for it (reshard_seconds): one collective within groups of devices where its pieces move as
// one, else the pieces sent point to point. Among the chains the shortest path reaches the wanted
// layout by, the one taken is the cheapest as the plan runs it (ChainPricing). The search, the
// materialized plan and so the simulator and the runtime all take their moves from here.
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/collective_groups.hpp"
#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/search/layout_forms.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/reshard.hpp"

namespace loom::search {

struct ReshardStep {
  std::string op;
  pcg::AttrMap attrs;
  pcg::MachineView view;  // the devices of its result
  bool operator==(const ReshardStep&) const = default;
};

struct ReshardPath {
  std::vector<ReshardStep> steps;  // none when the shapes are equal
  // Forward, as the plan runs the chain: steps whose whole change is one collective run as that
  // collective (pcg/layout_fusion.hpp), which may cost more or less than the steps apart.
  double seconds = 0;
  double step_seconds = 0;  // forward, the chain's steps each apart (and the read where it ends on the producer's side)
};

// What a chain of moves is chosen by. The shortest path prices each step apart; the plan runs the
// steps whose whole change is one collective as that collective, which may cost more or less.
enum class ChainPricing {
  as_run,       // the cheapest as the plan runs it among the chains the shortest path reaches `to` by
  steps_apart,  // the shortest path: the least sum of the steps apart
};

class RvdSearch {
 public:
  RvdSearch(const spec::Library& library, const Machine& machine, ChainPricing pricing = ChainPricing::as_run);

  // The cheapest chain of forms that turns `from` on `from_view` into `to` on `to_view`, by
  // `pricing`; fewer steps among equally cheap chains. As run, the chains weighed are those ending
  // with any step into `to` from a shape the shortest path has settled (its cheapest chain there),
  // so long as their steps apart cost less than the cheapest found as run: a chain whose steps fuse
  // into a dearer collective gives way to one that does not, and one whose steps fuse into a
  // cheaper one is taken. The shortest path's own chain is always weighed, so the chain taken is
  // never dearer as run than it, but for the rounding (a billionth) within which fewer steps win. Its `seconds` are as the plan runs it,
  // whichever the pricing (ReshardPath). nullopt when no chain of the library's forms does it. Cached (the reference stays valid while this
  // search lives). Each step's result lies on the producer's devices or on the consumer's: on the side's own view when it has as many
  // tasks, else on a block from the side's first device. A chain between different devices may change layouts on the producer's side before
  // its values cross to the consumer's (a step that reads on one side and writes on the other), or cross at once; a result left on the
  // producer's side is read from there. `loaded`: the value is a graph input (data or a weight), which each device loads its piece of, so
  // the chain's first step moves nothing, as the simulator and the runtime run it: a form that makes `to` at once costs nothing.
  const std::optional<ReshardPath>& cheapest(const pcg::ParallelShape& from, const pcg::MachineView& from_view,
                                             const pcg::ParallelShape& to, const pcg::MachineView& to_view, bool loaded = false) const;

  // The seconds the chain `steps` (making `shapes`, one per step) from `from` on `from_view` takes
  // forward as a plan runs it, to `to_view`: its steps whose whole change is one collective as that
  // collective, the first step from a `loaded` value for nothing, and the read from the producer's
  // side where it ends there: what cheapest() weighs chains by with ChainPricing::as_run. Throws
  // LoomError unless there is a shape per step.
  double as_run_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const std::vector<ReshardStep>& steps,
                        const std::vector<pcg::ParallelShape>& shapes, const pcg::MachineView& to_view, bool loaded = false) const;

  // pcg::moves_as_one_collective, cached. Only the answer is kept: the chains weighed as run ask it
  // of far more changes than plans make, and their piece moves grow with the devices squared. A
  // plan, whose changes are laid out anyway, asks laid_out() instead.
  bool moves_as_one_collective(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                               const pcg::MachineView& to_view) const;
  // The change's pcg::piece_moves, and the collective groups they make (pcg::collective_groups, each
  // task's rank the device its view puts it on), worked out once per change: each plan a walk
  // costs lays out again the changes of the plan before it. The reference stays valid while this
  // search lives.
  struct LaidOutChange {
    std::vector<pcg::PieceMove> moves;
    std::optional<pcg::CollectiveGroups> collective;
  };
  const LaidOutChange& laid_out(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                                const pcg::MachineView& to_view) const;

  const std::vector<LayoutForm>& forms() const { return forms_; }
  const Machine& machine() const { return machine_; }

 private:
  // Whether the library's own rules take `in` to `out` by the form (cached).
  bool accepted(const LayoutForm& form, const pcg::AttrMap& attrs, const pcg::ParallelShape& in, const pcg::ParallelShape& out) const;

  struct Move {
    pcg::ParallelShape from, to;
    pcg::MachineView from_view, to_view;
    bool loaded = false;  // a graph input: the first step loads its pieces
    bool operator==(const Move&) const = default;
  };
  struct MoveHash {
    std::size_t operator()(const Move& m) const;
  };
  std::optional<ReshardPath> search(const Move& move) const;
  // Seconds the chain of `steps` (making `shapes`) takes forward as a plan runs it: the steps
  // whose whole change is one collective as that collective, the first step from a loaded value
  // for nothing.
  double fused_seconds(const Move& move, const std::vector<ReshardStep>& steps, const std::vector<pcg::ParallelShape>& shapes) const;

  // A step out of a shape: a form at one assignment of its attributes, and the shape it makes.
  struct Edge {
    std::size_t form = 0;
    pcg::AttrMap attrs;
    pcg::ParallelShape shape;
    mutable std::optional<bool> accepted;  // whether the library's rules take the step, once asked
  };
  struct EdgesKey {
    pcg::ParallelShape shape;
    std::int64_t span = 1;  // the degrees a step may change a degree by: the divisors of span
    bool operator==(const EdgesKey&) const = default;
  };
  struct EdgesKeyHash {
    std::size_t operator()(const EdgesKey& k) const;
  };
  // The steps out of `shape` that change it, in the order of the forms and their assignments
  // (cached: searches between different views pass through the same shapes). Kept for every shape
  // and span a search visits, a few thousand on Unity's models.
  const std::vector<Edge>& edges_from(const pcg::ParallelShape& shape, std::int64_t span) const;
  // Whether the library's rules take `edge`, one of edges_from(from, ...) (cached in the edge).
  bool edge_accepted(const Edge& edge, const pcg::ParallelShape& from) const;
  // reshard_seconds of one step (its pattern cached: many searches share steps).
  double step_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                      const pcg::MachineView& to_view) const;

  const spec::Library& library_;
  Machine machine_;  // by value: a search outlives the machine it was made from
  std::vector<LayoutForm> forms_;
  ChainPricing pricing_;
  mutable std::unordered_map<std::string, bool> accepted_;
  mutable std::unordered_map<Move, std::optional<ReshardPath>, MoveHash> found_;
  // Per step, its shapes at their evenly divided dimensions where they have them: steps of the
  // same degrees and views on values of other sizes share one pattern.
  mutable std::unordered_map<Move, ReshardPattern, MoveHash> patterns_;
  mutable std::unordered_map<Move, LaidOutChange, MoveHash> laid_out_;
  mutable std::unordered_map<Move, bool, MoveHash> one_collective_;
  mutable std::unordered_map<EdgesKey, std::vector<Edge>, EdgesKeyHash> edges_;
};

}  // namespace loom::search
