#pragma once
// What the machine mapping charges for moving values: a value taken from one split and block of
// devices to another (forward, and its gradient back), and the part of a copied weight's
// gradient sums that the backward pass does not hide.
#include <absl/container/flat_hash_map.h>

#include <span>

#include "interner.hpp"

#include "loom/pcg/parallel_shape.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/rvd_search.hpp"

namespace loom::search::mapping {

// Small ids for parallel shapes, so that the moves between them are looked up without building
// keys of shapes.
using ShapeTable = Interner<pcg::ParallelShape>;

class MoveCosts {
 public:
  explicit MoveCosts(const RvdSearch& paths) : machine_(paths.machine()), paths_(paths) {}

  ShapeTable& shapes() { return shapes_; }

  // Seconds to move a value held as shape `from` (a ShapeTable id) on devices from `from_first` to
  // shape `to` from `to_first` and its gradient back, by the cheapest chain of the library's
  // forms (RvdSearch); infinity when no chain can. Cached.
  double move(int from, int from_first, int to, int to_first);

  // A weight copied to several devices stays with each copy from one iteration to the next; the
  // copies' gradients are summed by a ring allreduce that starts once the backward pass has made
  // them, as the simulator's task graph has it: at the figure of a started sum, or of a sum the
  // devices wait in (`waited`: the backward pass has nothing left to compute beside it). `need`
  // is a ShapeTable id. Cached.
  double weight_sum_seconds(int need, int first, bool waited = false);
  // The sums of one node's weights, `needs` (ShapeTable ids) from device `first`, as the simulator
  // groups them: a whole gradient summed where it lies is a ring of its own; the pieces of split
  // weights whose copies lie on the same devices are packed into one ring. `ends_pass`: the node's
  // backward ends the pass, so the whole gradients' sums, which wait for that backward alone, are
  // waited in; split weights' sums wait for their pieces' copies, whose backward follows, and run
  // beside it as started.
  double weight_sums_seconds(std::span<const int> needs, int first, bool ends_pass = false);

  // Layer after layer, the backward pass and the sums of the weights it has made run as a
  // pipeline whose step is the longer of the two: what a node's sums add beyond its own backward
  // is the part the pass cannot hide (all of them on devices that do not overlap communication).
  double exposed_sum_seconds(double sums, double backward_seconds) const;

 private:
  struct Move {
    int from = 0, from_first = 0, to = 0, to_first = 0;
    bool operator==(const Move&) const = default;
    template <class H>
    friend H AbslHashValue(H h, const Move& m) {
      return H::combine(std::move(h), m.from, m.from_first, m.to, m.to_first);
    }
  };
  struct Sum {
    int need = 0, first = 0;
    bool waited = false;
    bool operator==(const Sum&) const = default;
    template <class H>
    friend H AbslHashValue(H h, const Sum& s) {
      return H::combine(std::move(h), s.need, s.first, s.waited);
    }
  };

  // A sum's rings (one per piece of the weight, among its copies) from device `first`: how many
  // times they take turns at the ports they share, and the slowest link they cross.
  struct Rings {
    int turns = 1;
    const Link* slowest = nullptr;
  };
  Rings rings_of(int need, int first);  // cached
  // Those rings summing `bytes` each among `copies` devices.
  double ring_seconds(int need, int first, double bytes, int copies, bool waited);

  const Machine& machine_;
  const RvdSearch& paths_;
  ShapeTable shapes_;
  absl::flat_hash_map<Move, double> cache_;
  absl::flat_hash_map<Sum, double> sums_;
  absl::flat_hash_map<Sum, Rings> rings_;
};

}  // namespace loom::search::mapping
