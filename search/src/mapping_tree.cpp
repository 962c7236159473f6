#include "mapping_tree.hpp"

#include <algorithm>
#include <functional>
#include <map>

namespace loom::search::mapping {
namespace {

// Tokens that mark the parts of a tree's content; ids and positions are never negative, and -1
// stands for "none" where a marker says what follows.
enum Marker : std::int64_t {
  kMember = -100,
  kFromMember,
  kFromGraphInput,
  kFromBoundary,
  kMemberEnd,
  kOutput,
  kToBoundary,
  kSplitNode,
  kChild,
};

class Decomposition {
 public:
  Decomposition(const MappedGraph& g, TreeContents& contents, std::vector<Tree>& trees) : g_(g), contents_(contents), trees_(trees) {}

  int build(std::vector<int> members) {
    Tree t;
    t.members = members;
    if (members.size() == 1) {
      t.node = members[0];
    } else if (auto parts = components(members); parts.size() > 1) {
      t.kind = Tree::Parallel;
      for (auto& part : parts) t.children.push_back(build(std::move(part)));
    } else {
      t.kind = Tree::Series;
      const std::size_t p = split_point(members);
      t.node = members[p];
      std::vector<int> before(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(p));
      std::vector<int> after(members.begin() + static_cast<std::ptrdiff_t>(p) + 1, members.end());
      t.children = {before.empty() ? -1 : build(std::move(before)), after.empty() ? -1 : build(std::move(after))};
    }
    t.content_id = contents_.trees.id(describe(t));
    trees_.push_back(std::move(t));
    return static_cast<int>(trees_.size()) - 1;
  }

 private:
  std::vector<int> neighbours(int node) const {
    std::vector<int> out;
    for (pcg::PortRef in : g_.graph->node(node).inputs)
      if (g_.decides(in.node)) out.push_back(in.node);
    for (int m : g_.consumers[static_cast<std::size_t>(node)]) out.push_back(m);
    return out;
  }

  std::vector<std::vector<int>> components(const std::vector<int>& members) const {
    std::map<int, int> parent;
    for (int m : members) parent[m] = m;
    std::function<int(int)> root = [&](int x) { return parent[x] == x ? x : parent[x] = root(parent[x]); };
    for (int m : members)
      for (int o : neighbours(m))
        if (parent.count(o)) parent[root(m)] = root(o);
    std::map<int, std::vector<int>> groups;
    for (int m : members) groups[root(m)].push_back(m);
    std::vector<std::vector<int>> out;
    for (auto& [r, group] : groups) out.push_back(std::move(group));
    return out;
  }

  // A member no edge jumps over (the first always qualifies), as near the middle as there is.
  std::size_t split_point(const std::vector<int>& members) const {
    std::map<int, std::size_t> pos;
    for (std::size_t i = 0; i < members.size(); ++i) pos[members[i]] = i;
    std::size_t best = 0, reach = 0;
    const std::size_t middle = members.size() / 2;
    for (std::size_t p = 0; p < members.size(); ++p) {
      if (reach <= p && (p > middle ? p - middle : middle - p) < (best > middle ? best - middle : middle - best)) best = p;
      for (int m : g_.consumers[static_cast<std::size_t>(members[p])])
        if (auto it = pos.find(m); it != pos.end()) reach = std::max(reach, it->second);
    }
    return best;
  }

  template <class Key>
  std::int64_t pin_id(const std::map<Key, Pin>& pinned, Key key) {
    auto it = pinned.find(key);
    return it == pinned.end() ? -1 : contents_.pins.id(it->second);
  }

  // What the tree's cost depends on apart from the choices at its boundary: its members' kinds,
  // the edges among them and to the boundary (in order of first use), pins, graph outputs, its
  // split node and its children's contents. Fills in t.boundary.
  std::vector<std::int64_t> describe(Tree& t) {
    std::map<int, int> local;
    for (std::size_t i = 0; i < t.members.size(); ++i) local[t.members[i]] = static_cast<int>(i);
    auto boundary_index = [&](int node) {
      auto it = std::find(t.boundary.begin(), t.boundary.end(), node);
      if (it != t.boundary.end()) return static_cast<std::int64_t>(it - t.boundary.begin());
      t.boundary.push_back(node);
      return static_cast<std::int64_t>(t.boundary.size()) - 1;
    };
    const pcg::Graph& graph = *g_.graph;
    std::vector<std::int64_t> s{t.kind};
    for (int m : t.members) {
      const pcg::Node& n = graph.node(m);
      s.insert(s.end(), {kMember, g_.signature_id[static_cast<std::size_t>(m)]});
      for (pcg::PortRef in : n.inputs) {
        if (auto it = local.find(in.node); it != local.end())
          s.insert(s.end(), {kFromMember, it->second});
        else if (graph.node(in.node).is_graph_input())
          s.insert(s.end(), {kFromGraphInput, pin_id(g_.pins.inputs, in.node)});
        else
          s.insert(s.end(), {kFromBoundary, boundary_index(in.node)});
        s.push_back(in.port);
      }
      s.push_back(kMemberEnd);
      for (std::size_t k = 0; k < graph.outputs().size(); ++k)
        if (graph.outputs()[k].node == m) s.insert(s.end(), {kOutput, graph.outputs()[k].port, pin_id(g_.pins.outputs, k)});
      for (int c : g_.consumers[static_cast<std::size_t>(m)]) {
        if (local.count(c)) continue;
        const pcg::Node& cn = graph.node(c);
        for (std::size_t i = 0; i < cn.inputs.size(); ++i)
          if (cn.inputs[i].node == m) s.insert(s.end(), {kToBoundary, boundary_index(c), cn.inputs[i].port, static_cast<std::int64_t>(i)});
      }
    }
    if (t.node >= 0) s.insert(s.end(), {kSplitNode, local[t.node]});
    for (int c : t.children) s.insert(s.end(), {kChild, c < 0 ? -1 : trees_[static_cast<std::size_t>(c)].content_id});
    return s;
  }

  const MappedGraph& g_;
  TreeContents& contents_;
  std::vector<Tree>& trees_;
};

}  // namespace

int decompose(const MappedGraph& graph, std::vector<int> members, TreeContents& contents, std::vector<Tree>& trees) {
  return Decomposition(graph, contents, trees).build(std::move(members));
}

}  // namespace loom::search::mapping
