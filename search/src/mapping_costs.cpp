#include "mapping_costs.hpp"

#include <algorithm>
#include <limits>

#include <absl/container/inlined_vector.h>

#include "loom/pcg/task_layout.hpp"
#include "loom/search/port_loads.hpp"

namespace loom::search::mapping {
namespace {

// Values move forward and their gradients back.
constexpr double kMoveFactor = 2;

}  // namespace

double MoveCosts::move(int from, int from_first, int to, int to_first) {
  if (from == to && from_first == to_first) return 0;
  const pcg::ParallelShape &a = shapes_.value(from), &b = shapes_.value(to);
  // Whole nodes alike: a move costs the same shifted by whole nodes, where every block of its
  // search fits in the machine either way.
  const int most = static_cast<int>(std::max(a.tasks(), b.tasks())), per_node = machine_.devices_per_node();
  if (from_first + most <= machine_.devices() && to_first + most <= machine_.devices()) {
    const int shift = std::min(from_first, to_first) / per_node * per_node;
    from_first -= shift;
    to_first -= shift;
  }
  const Move key{from, from_first, to, to_first};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const std::optional<ReshardPath>& path =
      paths_.cheapest(a, pcg::MachineView::contiguous(from_first, a.tasks()), b, pcg::MachineView::contiguous(to_first, b.tasks()));
  const double s = path ? kMoveFactor * path->seconds : std::numeric_limits<double>::infinity();
  cache_.emplace(key, s);
  return s;
}

MoveCosts::Rings MoveCosts::rings_of(int need, int first) {
  const Sum key{need, first};
  if (auto it = rings_.find(key); it != rings_.end()) return it->second;
  const pcg::ParallelShape& shape = shapes_.value(need);
  // The copies of each piece are a ring (replicas are the outermost task index, task_layout.hpp),
  // and all the rings run at once.
  const int per_copy = static_cast<int>(shape.tasks() / shape.R);
  std::vector<std::vector<int>> rings(static_cast<std::size_t>(per_copy));
  for (int q = 0; q < per_copy; ++q)
    for (int r = 0; r < static_cast<int>(shape.R); ++r) rings[static_cast<std::size_t>(q)].push_back(first + q + r * per_copy);
  const std::vector<int> turns = ring_port_turns(machine_.network_ports(), rings);
  const Rings made{*std::max_element(turns.begin(), turns.end()),
                   &machine_.link_between(first, first + static_cast<int>(shape.tasks()) - 1)};
  rings_.emplace(key, made);
  return made;
}

double MoveCosts::ring_seconds(int need, int first, double bytes, int copies, bool waited) {
  const Rings rings = rings_of(need, first);
  return rings.turns *
         (waited ? rings.slowest->ring_allreduce_seconds(bytes, copies) : rings.slowest->started_ring_allreduce_seconds(bytes, copies));
}

double MoveCosts::weight_sum_seconds(int need, int first, bool waited) {
  const pcg::ParallelShape& shape = shapes_.value(need);
  if (shape.R <= 1) return 0;
  const Sum key{need, first, waited};
  if (auto it = sums_.find(key); it != sums_.end()) return it->second;
  const double bytes = static_cast<double>(pcg::piece_elements(shape)) * kBytesPerElement;
  const double s = ring_seconds(need, first, bytes, static_cast<int>(shape.R), waited);
  sums_.emplace(key, s);
  return s;
}

double MoveCosts::weight_sums_seconds(std::span<const int> needs, int first, bool ends_pass) {
  struct Packed {
    std::int64_t tasks = 0, copies = 0;
    double bytes = 0;
    int need = 0;
  };
  absl::InlinedVector<Packed, 4> packed;  // by the devices their rings take
  double seconds = 0;
  for (int need : needs) {
    const pcg::ParallelShape& shape = shapes_.value(need);
    if (shape.R <= 1) continue;
    if (shape.tasks() == shape.R) {  // whole on every device: summed where it lies
      seconds += weight_sum_seconds(need, first, ends_pass);
      continue;
    }
    auto it = std::find_if(packed.begin(), packed.end(), [&](const Packed& p) { return p.tasks == shape.tasks() && p.copies == shape.R; });
    if (it == packed.end()) it = packed.insert(packed.end(), Packed{shape.tasks(), shape.R});
    it->bytes += static_cast<double>(pcg::piece_elements(shape)) * kBytesPerElement;
    it->need = need;
  }
  for (const Packed& p : packed) seconds += ring_seconds(p.need, first, p.bytes, static_cast<int>(p.copies), false);
  return seconds;
}

double MoveCosts::exposed_sum_seconds(double sums, double backward_seconds) const {
  return machine_.device.overlaps_communication ? std::max(0.0, sums - backward_seconds) : sums;
}

}  // namespace loom::search::mapping
