#include "loom/pcg/collective_groups.hpp"

#include <algorithm>
#include <map>
#include <set>
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

Collective transpose(Collective kind) {
  switch (kind) {
    case Collective::reduce_scatter: return Collective::all_gather;
    case Collective::all_gather: return Collective::reduce_scatter;
    case Collective::allreduce: break;
  }
  return Collective::allreduce;
}

}  // namespace loom::pcg
