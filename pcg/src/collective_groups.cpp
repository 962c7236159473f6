#include "loom/pcg/collective_groups.hpp"

#include "loom/pcg/task_layout.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

namespace loom::pcg {
namespace {

// The old and new tasks whose pieces lie in one box, and the moves between them.
struct BoxMoves {
  std::set<std::int64_t> from, to;
  std::size_t moves = 0;
};

// Regions of one shape's pieces that are distinct, of equal size and `box`'s size together, so
// they split the box into equal blocks.
bool split_equally(const std::vector<Region>& blocks, const Region& box) {
  std::set<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> distinct;
  for (const Region& b : blocks) {
    if (b.elements() != blocks.front().elements()) return false;
    distinct.insert({b.lo, b.hi});
  }
  return distinct.size() == blocks.size() && blocks.front().elements() * static_cast<std::int64_t>(blocks.size()) == box.elements();
}

// The collective of one box's group, with its blocks; empty when it is none.
std::optional<Collective> classify(const Region& box, CollectiveGroup& group, const ParallelShape& from, const ParallelShape& to) {
  std::vector<Region> old_regions, new_regions;
  for (std::size_t k = 0; k < group.ranks.size(); ++k) {
    old_regions.push_back(piece_region(from, group.from[k]));
    new_regions.push_back(piece_region(to, group.to[k]));
  }
  const auto all_box = [&](const std::vector<Region>& regions) {
    return std::all_of(regions.begin(), regions.end(), [&](const Region& r) { return r == box; });
  };
  if (all_box(old_regions) && all_box(new_regions)) return Collective::allreduce;
  if (all_box(old_regions) && split_equally(new_regions, box)) {
    group.blocks = std::move(new_regions);
    return Collective::reduce_scatter;
  }
  if (all_box(new_regions) && split_equally(old_regions, box)) {
    group.blocks = std::move(old_regions);
    return Collective::all_gather;
  }
  return std::nullopt;
}

// The change as one collective over boxes: allreduce, reduce-scatter or all-gather.
std::optional<CollectiveGroups> box_groups(const ParallelShape& from, const ParallelShape& to, const std::vector<PieceMove>& moves,
                                           const std::function<int(std::int64_t)>& from_rank,
                                           const std::function<int(std::int64_t)>& to_rank);

// The change as all-to-alls: the old and new tasks joined by moves fall into groups in which every
// old piece gives one equal block to every new piece, one old and one new piece on each process.
std::optional<CollectiveGroups> all_to_all_groups(const ParallelShape& from, const ParallelShape& to, const std::vector<PieceMove>& moves,
                                                  const std::function<int(std::int64_t)>& from_rank,
                                                  const std::function<int(std::int64_t)>& to_rank) {
  if (from.V != to.V || from.R != to.R || piece_elements(from) != piece_elements(to)) return std::nullopt;
  // Lists rather than sets, and each move's region looked up rather than intersected again: a
  // change among 192 tasks has 192 * 192 moves.
  std::map<std::int64_t, std::vector<std::int64_t>> new_of_old;
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> old_of_new;
  std::unordered_map<std::int64_t, const Region*> region_of;  // by old task * new tasks + new task
  const std::int64_t new_tasks_count = to.tasks();
  for (const PieceMove& m : moves) {
    new_of_old[m.from].push_back(m.to);
    old_of_new[m.to].push_back(m.from);
    region_of.emplace(m.from * new_tasks_count + m.to, &m.region);
  }
  const auto sorted_unique = [](std::vector<std::int64_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  for (auto& [old_task, tasks] : new_of_old) sorted_unique(tasks);
  CollectiveGroups out;
  out.kind = Collective::all_to_all;
  std::set<std::int64_t> placed_old;
  std::set<int> grouped;
  std::size_t moved = 0;
  for (const auto& [old_task, new_tasks] : new_of_old) {
    if (placed_old.count(old_task)) continue;
    std::vector<std::int64_t> old_tasks;
    for (std::int64_t t : new_tasks) old_tasks.insert(old_tasks.end(), old_of_new[t].begin(), old_of_new[t].end());
    sorted_unique(old_tasks);
    const std::size_t k = new_tasks.size();
    if (k < 2 || old_tasks.size() != k) return std::nullopt;
    std::map<int, std::int64_t> old_on, new_on;  // by rank
    for (std::int64_t f : old_tasks) old_on.emplace(from_rank(f), f);
    for (std::int64_t t : new_tasks) new_on.emplace(to_rank(t), t);
    if (old_on.size() != k || new_on.size() != k) return std::nullopt;
    CollectiveGroup g;
    for (const auto& [rank, f] : old_on) {
      const auto t = new_on.find(rank);
      if (t == new_on.end() || !grouped.insert(rank).second) return std::nullopt;
      g.ranks.push_back(rank);
      g.from.push_back(f);
      g.to.push_back(t->second);
      placed_old.insert(f);
    }
    const std::int64_t block = piece_elements(from) / static_cast<std::int64_t>(k);
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < k; ++j) {
        const auto found = region_of.find(g.from[i] * new_tasks_count + g.to[j]);
        Region r = found != region_of.end() ? *found->second : intersect(piece_region(from, g.from[i]), piece_region(to, g.to[j]));
        if (r.elements() != block) return std::nullopt;
        g.blocks.push_back(std::move(r));
      }
    moved += k * k;
    out.groups.push_back(std::move(g));
  }
  if (moved != moves.size()) return std::nullopt;
  return out;
}

}  // namespace

std::size_t CollectiveGroup::position(int rank) const {
  return static_cast<std::size_t>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
}

const CollectiveGroup* CollectiveGroups::containing(int rank) const {
  for (const CollectiveGroup& g : groups)
    if (std::binary_search(g.ranks.begin(), g.ranks.end(), rank)) return &g;
  return nullptr;
}

std::optional<CollectiveGroups> collective_groups(const ParallelShape& from, const ParallelShape& to, const std::vector<PieceMove>& moves,
                                                  const std::function<int(std::int64_t)>& from_rank,
                                                  const std::function<int(std::int64_t)>& to_rank) {
  if (moves.empty()) return std::nullopt;
  if (auto boxes = box_groups(from, to, moves, from_rank, to_rank)) return boxes;
  return all_to_all_groups(from, to, moves, from_rank, to_rank);
}

namespace {

std::optional<CollectiveGroups> box_groups(const ParallelShape& from, const ParallelShape& to, const std::vector<PieceMove>& moves,
                                           const std::function<int(std::int64_t)>& from_rank,
                                           const std::function<int(std::int64_t)>& to_rank) {
  // Each move carries the whole of the smaller of its two pieces, which lies in the larger: the
  // box the group's pieces cover.
  std::map<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>, BoxMoves> boxes;
  for (const PieceMove& m : moves) {
    const Region old_region = piece_region(from, m.from), new_region = piece_region(to, m.to);
    const bool old_larger = old_region.elements() >= new_region.elements();
    const Region& box = old_larger ? old_region : new_region;
    const Region& part = old_larger ? new_region : old_region;
    if (!(m.region == part) || !(intersect(box, part) == part)) return std::nullopt;
    BoxMoves& b = boxes[{box.lo, box.hi}];
    b.from.insert(m.from);
    b.to.insert(m.to);
    ++b.moves;
  }
  CollectiveGroups out;
  std::set<int> grouped;
  for (const auto& [corners, b] : boxes) {
    // Every old piece goes into every new piece, one of each on every process of the group.
    if (b.moves != b.from.size() * b.to.size() || b.from.size() != b.to.size()) return std::nullopt;
    std::map<int, std::int64_t> from_on, to_on;  // by rank
    for (std::int64_t f : b.from) from_on.emplace(from_rank(f), f);
    for (std::int64_t t : b.to) to_on.emplace(to_rank(t), t);
    if (from_on.size() != b.from.size() || to_on.size() != b.to.size()) return std::nullopt;
    CollectiveGroup g;
    for (const auto& [rank, f] : from_on) {
      auto t = to_on.find(rank);
      if (t == to_on.end() || !grouped.insert(rank).second) return std::nullopt;
      g.ranks.push_back(rank);
      g.from.push_back(f);
      g.to.push_back(t->second);
    }
    const std::optional<Collective> kind = classify({corners.first, corners.second}, g, from, to);
    if (!kind || (!out.groups.empty() && *kind != out.kind)) return std::nullopt;
    out.kind = *kind;
    out.groups.push_back(std::move(g));
  }
  return out;
}

}  // namespace

Collective transpose(Collective kind) {
  switch (kind) {
    case Collective::reduce_scatter: return Collective::all_gather;
    case Collective::all_gather: return Collective::reduce_scatter;
    case Collective::allreduce: break;
    case Collective::all_to_all: return Collective::all_to_all;
  }
  return Collective::allreduce;
}

}  // namespace loom::pcg
