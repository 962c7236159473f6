#include "loom/pcg/piece_moves.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/task_layout.hpp"

namespace loom::pcg {

std::int64_t Region::elements() const {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < lo.size(); ++i) n *= std::max<std::int64_t>(0, hi[i] - lo[i]);
  return n;
}

std::vector<std::int64_t> Region::extent() const {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < lo.size(); ++i) out.push_back(std::max<std::int64_t>(0, hi[i] - lo[i]));
  return out;
}

Region piece_region(const ParallelShape& shape, std::int64_t task) {
  const TaskPiece piece = task_piece(shape, task);
  Region r;
  for (std::size_t i = 0; i < shape.rank(); ++i) {
    const std::int64_t width = shape.dims[i] / shape.D[i];
    r.lo.push_back(piece.block[i] * width);
    r.hi.push_back((piece.block[i] + 1) * width);
  }
  return r;
}

Region whole_region(const std::vector<std::int64_t>& dims) { return {std::vector<std::int64_t>(dims.size(), 0), dims}; }

bool any_overlap(const std::vector<Region>& boxes) {
  for (std::size_t a = 0; a < boxes.size(); ++a)
    for (std::size_t b = a + 1; b < boxes.size(); ++b)
      if (!intersect(boxes[a], boxes[b]).empty()) return true;
  return false;
}

Region intersect(const Region& a, const Region& b) {
  Region r;
  for (std::size_t i = 0; i < a.lo.size(); ++i) {
    r.lo.push_back(std::max(a.lo[i], b.lo[i]));
    r.hi.push_back(std::max(r.lo.back(), std::min(a.hi[i], b.hi[i])));
  }
  return r;
}

namespace {

bool overlap(const Region& a, const Region& b) {
  for (std::size_t i = 0; i < a.lo.size(); ++i)
    if (std::max(a.lo[i], b.lo[i]) >= std::min(a.hi[i], b.hi[i])) return false;
  return true;
}

}  // namespace

std::vector<PieceMove> piece_moves(const ParallelShape& from, const MachineView& from_view, const ParallelShape& to,
                                   const MachineView& to_view) {
  if (from.dims != to.dims) throw LoomError("cannot move pieces between different tensors: " + from.to_string() + " and " + to.to_string());
  auto device_of = [](const MachineView& view, std::int64_t task) {
    return static_cast<std::size_t>(task) < view.devices.size() ? view.devices[static_cast<std::size_t>(task)] : static_cast<int>(task);
  };
  // The sources: first replicas only, each with its region, found once for every target.
  struct Source {
    TaskPiece piece;
    Region region;
  };
  std::vector<Source> sources;
  for (std::int64_t s = 0; s < from.tasks(); ++s) {
    TaskPiece have = task_piece(from, s);
    if (have.replica == 0) sources.push_back({std::move(have), piece_region(from, s)});
  }
  std::vector<PieceMove> out;
  for (std::int64_t t = 0; t < to.tasks(); ++t) {
    const TaskPiece want = task_piece(to, t);
    const Region wanted = piece_region(to, t);
    const int device = device_of(to_view, t);
    for (const Source& source : sources) {
      if (source.piece.partial % to.V != want.partial || !overlap(source.region, wanted)) continue;
      TaskPiece have = source.piece;
      have.replica = want.replica % from.R;
      for (std::int64_t r = 0; r < from.R; ++r) {
        TaskPiece candidate = source.piece;
        candidate.replica = r;
        if (device_of(from_view, task_of(from, candidate)) == device) have.replica = r;
      }
      out.push_back({task_of(from, have), t, intersect(source.region, wanted)});
    }
  }
  return out;
}

}  // namespace loom::pcg
