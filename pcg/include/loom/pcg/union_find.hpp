#pragma once
// Disjoint sets of 0..n-1, joined pairwise: which set each element is in.
#include <cstddef>
#include <numeric>
#include <vector>

namespace loom::pcg {

struct UnionFind {
  std::vector<std::size_t> parent;

  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), std::size_t{0}); }
  // The element standing for x's set.
  std::size_t find(std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  // Joins the sets of a and b; false when they were one already.
  bool unite(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    parent[a] = b;
    return true;
  }
};

}  // namespace loom::pcg
