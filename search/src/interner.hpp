#pragma once
// Small integer ids for values, in the order they are first seen: equal values, equal ids.
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "loom/pcg/hash_mix.hpp"

namespace loom::search {

template <class Key, class Hash = std::hash<Key>>
class Interner {
 public:
  int id(const Key& key) {
    const auto [it, added] = ids_.emplace(key, static_cast<int>(ids_.size()));
    if (added) keys_.push_back(&it->first);
    return it->second;
  }
  // The value of an id `id` gave.
  const Key& value(int id) const { return *keys_[static_cast<std::size_t>(id)]; }

 private:
  std::unordered_map<Key, int, Hash> ids_;
  std::vector<const Key*> keys_;  // by id; a node-based map's keys stay where they are
};

struct TokensHash {
  std::size_t operator()(const std::vector<std::int64_t>& tokens) const {
    std::uint64_t h = tokens.size();
    for (std::int64_t t : tokens) h = pcg::hash_mix(h, static_cast<std::uint64_t>(t));
    return static_cast<std::size_t>(h);
  }
};

}  // namespace loom::search
