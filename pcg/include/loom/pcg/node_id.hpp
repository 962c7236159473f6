#pragma once
#include <cassert>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace loom::pcg {

// A node's id in its graph: the node's index in creation order. It reads as its number wherever
// an int is expected (ordering, arithmetic, messages) and is made from one, so literal ids stay
// plain; what it adds is `index()`, the position in any vector kept per node. Where "no node" must
// be said (an unmatched slot, a removed node), `kNoNode` says it.
class NodeId {
 public:
  constexpr NodeId() = default;
  constexpr NodeId(int value) : value_(value) {}     // NOLINT(google-explicit-constructor)
  constexpr operator int() const { return value_; }  // NOLINT(google-explicit-constructor)

  constexpr int value() const { return value_; }
  // Whether it names a node rather than none.
  constexpr bool valid() const { return value_ >= 0; }
  // The id as a position in a per-node vector; only a valid id has one.
  constexpr std::size_t index() const {
    assert(valid());
    return static_cast<std::size_t>(value_);
  }

 private:
  int value_ = 0;
};

// No node: not a valid id.
inline constexpr NodeId kNoNode{-1};

inline std::string to_string(NodeId id) { return std::to_string(id.value()); }
inline std::ostream& operator<<(std::ostream& out, NodeId id) { return out << id.value(); }
// In JSON an id is its number.
void to_json(nlohmann::json& j, NodeId id);
void from_json(const nlohmann::json& j, NodeId& id);

}  // namespace loom::pcg

template <>
struct std::hash<loom::pcg::NodeId> {
  std::size_t operator()(loom::pcg::NodeId id) const noexcept { return std::hash<int>{}(id.value()); }
};
