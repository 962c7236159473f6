#include "layout.hpp"

#include <algorithm>
#include <numeric>

#include "loom/pcg/diagnostic.hpp"

namespace loom::models {
namespace {

std::int64_t product(const Dims& d) { return std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>()); }

std::string dims_text(const Dims& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

}  // namespace

PortRef reshape_to(GraphBuilder& b, PortRef x, const Dims& target) {
  const Dims from = b.dims(x);
  if (from == target) return x;
  if (product(from) != product(target)) {
    throw LoomError("cannot reshape " + dims_text(from) + " to " + dims_text(target) + ": the element counts differ");
  }
  // Walk both shapes in groups of equal products: each group is merged into one dimension and
  // split into the target's dimensions; size-1 dimensions left over are squeezed or inserted.
  std::size_t i = 0, j = 0;
  std::int64_t pos = 0;
  while (i < from.size() || j < target.size()) {
    if (i == from.size()) {
      x = b.op("unsqueeze_axis", {x}, {{"axis", pos++}});
      ++j;
      continue;
    }
    if (j == target.size()) {
      x = b.op("squeeze_axis", {x}, {{"axis", pos}});
      ++i;
      continue;
    }
    Dims group_from{from[i++]}, group_to{target[j++]};
    std::int64_t pa = group_from.back(), pb = group_to.back();
    while (pa != pb) {
      if (pa < pb) {
        group_from.push_back(from.at(i++));
        pa *= group_from.back();
      } else {
        group_to.push_back(target.at(j++));
        pb *= group_to.back();
      }
    }
    if (group_from == group_to) {
      pos += static_cast<std::int64_t>(group_to.size());
      continue;
    }
    for (std::size_t k = 1; k < group_from.size(); ++k) x = b.op("merge_axes", {x}, {{"axis", pos}});
    for (std::size_t k = 0; k + 1 < group_to.size(); ++k) {
      x = b.op("split_axis", {x}, {{"axis", pos}, {"parts", group_to[k]}});
      ++pos;
    }
    ++pos;
  }
  return x;
}

PortRef permute(GraphBuilder& b, PortRef x, const std::vector<std::int64_t>& perm) {
  const std::size_t rank = b.rank(x);
  if (perm.size() != rank) throw LoomError("a permutation of " + std::to_string(perm.size()) + " axes for rank " + std::to_string(rank));
  std::vector<std::int64_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = 0; i < rank; ++i) {
    auto at = std::find(order.begin() + static_cast<std::ptrdiff_t>(i), order.end(), perm[i]);
    if (at == order.end()) throw LoomError("the permutation repeats axis " + std::to_string(perm[i]));
    for (auto k = static_cast<std::size_t>(at - order.begin()); k > i; --k) {
      std::swap(order[k - 1], order[k]);
      x = k == rank - 1 ? b.op("transpose", {x}) : b.op("swap_axes", {x}, {{"axis", static_cast<std::int64_t>(k - 1)}});
    }
  }
  return x;
}

PortRef broadcast_to(GraphBuilder& b, PortRef x, const Dims& target) {
  if (b.rank(x) > target.size()) {
    throw LoomError("cannot broadcast " + dims_text(b.dims(x)) + " to " + dims_text(target));
  }
  while (b.rank(x) < target.size()) x = b.op("unsqueeze_axis", {x}, {{"axis", 0}});
  for (std::size_t a = 0; a < target.size(); ++a) {
    const std::int64_t have = b.dim(x, a);
    if (have == target[a]) continue;
    if (have != 1) throw LoomError("cannot broadcast " + dims_text(b.dims(x)) + " to " + dims_text(target));
    x = b.op("expand_axis", {x}, {{"axis", static_cast<std::int64_t>(a)}, {"size", target[a]}});
  }
  return x;
}

}  // namespace loom::models
