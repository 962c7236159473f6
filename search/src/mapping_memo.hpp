#pragma once
// The results of the mapping's sub-problems. The DP looks up tens of millions of them, most found
// solved, so a key is probed without building it, and keys and results are kept inline in
// open-addressed tables, their boundaries and part sizes in shared arrays: the memo allocates
// nothing per sub-problem, and dropping it frees a few arrays. Each tree content has a table of
// its own: the DP looks up the same tree under the choices around it in turn, and a small table
// stays in the processor's caches.
#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "mapping_choices.hpp"

namespace loom::search::mapping {

// A hash of what keys of sub-problems and of choices share: an id, a block of devices and a memory
// scale.
std::uint64_t hash_of_block(int id, int first, int count, std::uint64_t memory_scale);

// A sub-problem of the DP: a tree's content on a block of devices under a memory scale, with the
// choices of the decided nodes at its boundary (split content and first device, in turn).
struct SubProblem {
  int content = 0;
  int first = 0, count = 0;
  std::uint64_t memory_scale = 0;  // the double's bits
  std::span<const int> boundary;
  std::uint64_t hash = 0;  // of the fields above, set by `hashed`

  SubProblem& hashed();
};

// A sub-problem's result: its least cost and what achieves it.
struct Solution {
  double cost = kNoPlan;
  Choice choice;                     // Leaf and Series: the decided node's choice
  std::span<const int> split_sizes;  // Parallel: per part, 0 to share the devices, else its share
};

class Memo {
 public:
  Memo() = default;
  Memo(const Memo&) = delete;
  Memo& operator=(const Memo&) = delete;

  // The solution of `p` (hashed), if it has been solved; its part sizes stay valid until the next
  // settle.
  std::optional<Solution> find(const SubProblem& p) const;
  // A sub-problem being solved: entered before its parts are solved (which overwrite the probe it
  // was found by), and given its solution once they are. Throws LoomError when the arrays would
  // outgrow their 32-bit indices.
  struct Key {
    std::uint64_t hash;
    int content, first, count;  // content: the table's
    std::uint64_t memory_scale;
    std::uint32_t boundary_at, boundary_size;  // in the memo's array of boundaries
  };
  Key enter(const SubProblem& p);
  void settle(const Key& key, double cost, Choice choice, std::span<const int> split_sizes = {});
  void clear();
  // Whether every sub-problem entered has been settled: an exception thrown while solving leaves
  // some that were not, which the memo must not serve.
  bool settled() const { return open_ == 0; }

 private:
  struct Value {
    double cost;
    Choice choice;
    std::uint32_t sizes_at, sizes_size;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(const Key& k) const { return static_cast<std::size_t>(k.hash); }
    std::size_t operator()(const SubProblem* p) const { return static_cast<std::size_t>(p->hash); }
  };
  struct Equal {
    using is_transparent = void;
    const std::vector<int>* boundaries;
    bool operator()(const Key& a, const Key& b) const;
    bool operator()(const Key& a, const SubProblem* b) const;
    bool operator()(const SubProblem* a, const Key& b) const { return (*this)(b, a); }
  };

  std::vector<int> boundaries_;
  std::vector<int> sizes_;
  using Table = absl::flat_hash_map<Key, Value, Hash, Equal>;
  std::vector<Table> tables_;  // by tree content
  std::size_t open_ = 0;
};

}  // namespace loom::search::mapping
