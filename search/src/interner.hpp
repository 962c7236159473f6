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
  int id(const Key& key) { return ids_.emplace(key, static_cast<int>(ids_.size())).first->second; }

 private:
  std::unordered_map<Key, int, Hash> ids_;
};

struct TokensHash {
  std::size_t operator()(const std::vector<std::int64_t>& tokens) const {
    std::uint64_t h = tokens.size();
    for (std::int64_t t : tokens) h = pcg::hash_mix(h, static_cast<std::uint64_t>(t));
    return static_cast<std::size_t>(h);
  }
};

}  // namespace loom::search
