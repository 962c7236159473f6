#include "loom/search/reshard.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"

namespace loom::search {
namespace {

struct DimensionSwap {
  std::int64_t from = 0, to = 0, degree = 1;
};

// A split moved from one dimension to another by the same factor (all else equal) is one
// all-to-all, with no task ever holding more than its piece.
std::optional<DimensionSwap> one_dimension_for_another(const std::vector<std::int64_t>& held, const std::vector<std::int64_t>& want) {
  std::optional<DimensionSwap> swap;
  std::int64_t down = -1, up = -1;
  for (std::size_t d = 0; d < held.size(); ++d) {
    if (held[d] == want[d]) continue;
    if (held[d] > want[d] && held[d] % want[d] == 0 && down < 0)
      down = static_cast<std::int64_t>(d);
    else if (want[d] > held[d] && want[d] % held[d] == 0 && up < 0)
      up = static_cast<std::int64_t>(d);
    else
      return std::nullopt;
  }
  if (down < 0 || up < 0) return std::nullopt;
  const std::int64_t k = held[static_cast<std::size_t>(down)] / want[static_cast<std::size_t>(down)];
  if (want[static_cast<std::size_t>(up)] / held[static_cast<std::size_t>(up)] != k) return std::nullopt;
  return DimensionSwap{down, up, k};
}

}  // namespace

bool reshardable(const pcg::ParallelShape& from, const pcg::ParallelShape& to) {
  return from.dims == to.dims && from.P == to.P && to.V <= from.V && from.V % to.V == 0 && to.R >= from.R && to.R % from.R == 0;
}

std::optional<std::vector<ReshardStep>> reshard_steps(const ReshardForms& forms, const pcg::ParallelShape& from,
                                                      const pcg::ParallelShape& to) {
  if (!reshardable(from, to)) return std::nullopt;
  const auto step = [](const LayoutForm& form, std::int64_t degree, std::optional<std::size_t> dim = std::nullopt) {
    ReshardStep s{form.op, {{form.degree_attr, degree}}};
    if (dim) s.attrs[form.dim_attr] = static_cast<std::int64_t>(*dim);
    return s;
  };
  std::vector<ReshardStep> steps;
  if (from.V > to.V) steps.push_back(step(forms.sum, from.V / to.V));
  std::vector<std::int64_t> held = from.D;
  if (auto swap = forms.swap ? one_dimension_for_another(held, to.D) : std::nullopt) {
    steps.push_back(
        {forms.swap->op, {{forms.swap->from_attr, swap->from}, {forms.swap->to_attr, swap->to}, {forms.swap->degree_attr, swap->degree}}});
    held = to.D;
  }
  for (std::size_t d = 0; d < held.size(); ++d) {
    if (held[d] <= to.D[d] && to.D[d] % held[d] == 0) continue;
    const std::int64_t by = held[d] % to.D[d] == 0 ? held[d] / to.D[d] : held[d];
    steps.push_back(step(forms.join, by, d));
    held[d] /= by;
  }
  if (to.R > from.R) steps.push_back(step(forms.copy, to.R / from.R));
  for (std::size_t d = 0; d < held.size(); ++d)
    if (to.D[d] > held[d]) steps.push_back(step(forms.split, to.D[d] / held[d], d));
  return steps;
}

double reshard_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                       const pcg::MachineView& to_view, const Machine& machine) {
  if (!reshardable(from, to)) return std::numeric_limits<double>::infinity();
  if (from == to && from_view == to_view) return 0;
  std::map<std::pair<int, int>, double> pair_bytes;
  for (const pcg::PieceMove& m : pcg::piece_moves(from, from_view, to, to_view)) {
    const int source = from_view.devices[static_cast<std::size_t>(m.from)], device = to_view.devices[static_cast<std::size_t>(m.to)];
    if (source != device) pair_bytes[{source, device}] += static_cast<double>(m.region.elements()) * kBytesPerElement;
  }
  double sum_seconds = 0;
  if (from.V > to.V) {  // every receiving device reads its partial pieces and writes their sum
    const double bytes = static_cast<double>((from.V / to.V + 1) * pcg::piece_elements(to)) * kBytesPerElement;
    sum_seconds = bytes / machine.device.memory_bandwidth + machine.device.kernel_overhead;
  }
  double move_seconds = 0;
  for (const auto& [pair, bytes] : pair_bytes)
    move_seconds = std::max(move_seconds, machine.link_between(pair.first, pair.second).transfer_seconds(bytes));
  return move_seconds + sum_seconds;
}

}  // namespace loom::search
