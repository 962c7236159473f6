#include "loom/search/machine_mapping.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>

#include "loom/pcg/task_layout.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/reshard.hpp"

namespace loom::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Values move forward and their gradients back.
constexpr double kMoveFactor = 2;

struct Resource {
  int first = 0;
  int count = 0;
};

struct Choice {
  int config = -1;
  int first = 0;
};

struct ConfigInfo {
  ParallelConfig config;
  double seconds = 0;           // forward and backward of one task
  double backward_seconds = 0;  // the backward alone
  double memory = 0;            // bytes one task touches: its inputs, outputs and weights' state
  double kept = 0;              // bytes one task adds to its device: its outputs and weights' state
  int content = 0;              // interned id of the config's shapes
};

struct Tree {
  enum Kind { Leaf, Series, Parallel } kind = Leaf;
  int node = -1;              // Leaf: the node; Series: the split node
  std::vector<int> children;  // Series: {before, after} (-1 when empty); Parallel: the parts
  std::vector<int> members;   // graph nodes, ascending
  std::vector<int> boundary;  // decision nodes outside that share an edge with a member
  std::string content;        // what the sub-problem's cost depends on, apart from its context
  int content_id = -1;        // `content` interned
};

// A sub-problem of the DP: a tree's content on a block of devices under a memory scale, with the
// choices of the decided nodes at its boundary (config content and first device, in turn).
struct MemoKey {
  int content = 0;
  int first = 0, count = 0;
  std::uint64_t memory_scale = 0;  // the double's bits
  std::vector<int> boundary;

  bool operator==(const MemoKey&) const = default;
};

struct MemoKeyHash {
  std::size_t operator()(const MemoKey& k) const {
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    auto mix = [&h](std::uint64_t v) {
      h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
      h *= 0xBF58476D1CE4E5B9ULL;
    };
    mix(static_cast<std::uint64_t>(k.content));
    mix((static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.first)) << 32) | static_cast<std::uint32_t>(k.count));
    mix(k.memory_scale);
    for (int b : k.boundary) mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(b)));
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

struct Entry {
  double cost = kInf;
  Choice choice;                 // Leaf and Series: the decided node's choice
  std::vector<int> split_sizes;  // Parallel: per part, 0 to share the devices, else its share
};

std::vector<int> split_sizes_of(int count) {
  std::vector<int> out;
  for (int parts : {2, 3, 4})
    if (count % parts == 0)
      for (int i = 1; i < parts; ++i) out.push_back(count / parts * i);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::vector<std::int64_t> mapping_degrees(const Machine& machine) {
  std::vector<std::int64_t> out;
  for (std::int64_t d :
       {static_cast<std::int64_t>(machine.devices()), static_cast<std::int64_t>(machine.devices_per_node()), std::int64_t{2}})
    if (d >= 2 && machine.devices() % d == 0 && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  return out;
}

struct MachineMapper::Impl {
  Impl(const spec::Library& library, const CostModel& model, MappingOptions options)
      : library(library), model(model), machine(model.machine()), options(std::move(options)) {
    if (this->options.degrees.empty()) this->options.degrees = mapping_degrees(machine);
  }

  const spec::Library& library;
  const CostModel& model;
  const Machine& machine;
  MappingOptions options;
  MappingStats stats;

  // Shared across graphs.
  std::unordered_map<std::string, std::vector<ConfigInfo>> configs_by_signature;
  std::unordered_map<std::string, int> interned;
  std::unordered_map<MemoKey, Entry, MemoKeyHash> memo;
  std::unordered_map<std::string, double> reshard_cache;

  // The graph being mapped.
  const pcg::Graph* graph = nullptr;
  std::vector<const std::vector<ConfigInfo>*> configs;  // per node id (decision nodes)
  std::vector<Choice> fixed;                            // per node id; config -1 when not decided
  std::vector<Tree> trees;
  std::vector<int> signature_id;
  std::vector<std::vector<int>> consumers;  // per node id: Graph::consumers, computed once
  Pins pins;
  double memory_scale = 1;  // device capacity over the unsplit graph's need, when below 1

  int intern(const std::string& s) { return interned.emplace(s, static_cast<int>(interned.size())).first->second; }

  bool decides(int node) const { return !graph->node(node).is_graph_input(); }

  // ---- choices -------------------------------------------------------------------------------

  std::string signature(const pcg::Node& n) const {
    std::string s = n.op + "{";
    for (const auto& [k, v] : n.attrs) s += k + "=" + std::to_string(v) + ",";
    s += "}";
    for (pcg::PortRef in : n.inputs) s += graph->shape_of(in).to_string() + (graph->node(in.node).op == pcg::kWeightOp ? "w" : "") + ";";
    return s;
  }

  const std::vector<ConfigInfo>& configs_of(const pcg::Node& n) {
    const std::string sig = signature(n);
    auto it = configs_by_signature.find(sig);
    if (it != configs_by_signature.end()) return it->second;
    std::vector<ConfigInfo> out;
    for (ParallelConfig& c : node_configs(library, *graph, n, options.degrees)) {
      if (!out.empty() && options.admit && !options.admit(n, c)) continue;
      ConfigInfo info;
      const TaskEstimate estimate = model.compute(n, c.inputs);
      info.seconds = estimate.seconds + estimate.backward_seconds;
      info.backward_seconds = estimate.backward_seconds;
      for (std::size_t i = 0; i < c.inputs.size(); ++i) {
        const bool weight = graph->node(n.inputs[i].node).op == pcg::kWeightOp;
        const double bytes = static_cast<double>(pcg::piece_elements(c.inputs[i])) * kBytesPerElement * (weight ? 4 : 1);
        info.memory += bytes;
        if (weight) info.kept += bytes;
      }
      for (const auto& o : c.outputs) {
        info.memory += static_cast<double>(pcg::piece_elements(o)) * kBytesPerElement;
        info.kept += static_cast<double>(pcg::piece_elements(o)) * kBytesPerElement;
      }
      std::string content;
      for (const auto& s : c.inputs) content += s.to_string() + ";";
      content += ">";
      for (const auto& s : c.outputs) content += s.to_string() + ";";
      info.content = intern(content);
      info.config = std::move(c);
      out.push_back(std::move(info));
    }
    return configs_by_signature.emplace(sig, std::move(out)).first->second;
  }

  std::vector<Choice> choices(int node, Resource r) const {
    std::vector<Choice> out;
    const auto& list = *configs[static_cast<std::size_t>(node)];
    for (std::size_t c = 0; c < list.size(); ++c) {
      const int tasks = static_cast<int>(list[c].config.tasks());
      if (tasks > r.count || list[c].memory > memory_limit(list)) continue;
      std::vector<int> offsets;
      for (int o = r.first; o + tasks <= r.first + r.count; ++o)
        if (o % tasks == 0) offsets.push_back(o);
      if (offsets.empty()) offsets.push_back(r.first);
      const std::size_t keep = std::min(options.max_views, offsets.size());
      for (std::size_t k = 0; k < keep; ++k) out.push_back({static_cast<int>(c), offsets[k * offsets.size() / keep]});
    }
    return out;
  }

  // What one task of the node may keep. When the whole graph does not fit on one device, each
  // node gets its share of a device in proportion to what it needs unsplit: a device then holds at
  // most one task of each node, so the shares add up to no more than the device. (Copied weights
  // do not shrink with a split; the simulated plan's memory is checked in the end.)
  double memory_limit(const std::vector<ConfigInfo>& list) const {
    if (memory_scale >= 1) return machine.device.memory_bytes;
    double least = list.front().memory;
    for (const ConfigInfo& c : list) least = std::min(least, c.memory);
    // A node that cannot get down to its share takes its smallest split.
    return std::min(machine.device.memory_bytes, std::max(list.front().memory * memory_scale, least));
  }

  // ---- costs ---------------------------------------------------------------------------------

  const ConfigInfo& info(int node, Choice c) const {
    return (*configs[static_cast<std::size_t>(node)])[static_cast<std::size_t>(c.config)];
  }

  double move(const pcg::ParallelShape& from, int from_first, const pcg::ParallelShape& to, int to_first) {
    if (from == to && from_first == to_first) return 0;
    const std::string key = from.to_string() + "@" + std::to_string(from_first) + ">" + to.to_string() + "@" + std::to_string(to_first);
    auto it = reshard_cache.find(key);
    if (it != reshard_cache.end()) return it->second;
    const double s = kMoveFactor * reshard_seconds(from, pcg::MachineView::contiguous(from_first, from.tasks()), to,
                                                   pcg::MachineView::contiguous(to_first, to.tasks()), machine);
    reshard_cache.emplace(key, s);
    return s;
  }

  // A weight copied to several devices stays with each copy from one iteration to the next; the
  // copies' gradients are summed by a ring allreduce that starts once the backward pass has made
  // them, as the simulator's task graph has it.
  double weight_sum_seconds(const pcg::ParallelShape& need, int first) const {
    if (need.R <= 1) return 0;
    const double bytes = static_cast<double>(pcg::piece_elements(need)) * kBytesPerElement;
    return machine.link_between(first, first + static_cast<int>(need.tasks()) - 1)
        .started_ring_allreduce_seconds(bytes, static_cast<int>(need.R));
  }

  // Layer after layer, the backward pass and the sums of the weights it has made run as a
  // pipeline whose step is the longer of the two: what a node's sums add beyond its own backward
  // is the part the pass cannot hide (all of them on devices that do not overlap communication).
  double exposed_sum_seconds(double sums, double backward_seconds) const {
    return machine.device.overlaps_communication ? std::max(0.0, sums - backward_seconds) : sums;
  }

  // The node's own time plus every edge to a node decided before it.
  double leaf_cost(int node, Choice c) {
    const pcg::Node& n = graph->node(node);
    const ConfigInfo& mine = info(node, c);
    double cost = mine.seconds;
    double sums = 0;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const pcg::PortRef in = n.inputs[i];
      const pcg::Node& p = graph->node(in.node);
      if (p.is_graph_input()) {
        if (p.op == pcg::kWeightOp) sums += weight_sum_seconds(mine.config.inputs[i], c.first);
        if (auto pin = pins.inputs.find(in.node); pin != pins.inputs.end())
          cost += move(pin->second.shape, pin->second.first_device, mine.config.inputs[i], c.first);
        continue;
      }
      const Choice pc = fixed[static_cast<std::size_t>(in.node)];
      if (pc.config < 0) continue;
      cost += move(info(in.node, pc).config.outputs[static_cast<std::size_t>(in.port)], pc.first, mine.config.inputs[i], c.first);
      if (cost == kInf) return kInf;
    }
    cost += exposed_sum_seconds(sums, mine.backward_seconds);
    for (std::size_t k = 0; k < graph->outputs().size(); ++k) {
      const pcg::PortRef o = graph->outputs()[k];
      if (o.node != node) continue;
      const pcg::ParallelShape& given = mine.config.outputs[static_cast<std::size_t>(o.port)];
      if (auto pin = pins.outputs.find(k); pin != pins.outputs.end())
        cost += move(given, c.first, pin->second.shape, pin->second.first_device);
      else if (given.V > 1)  // the loss reads a graph output whole or in pieces, but never as partial sums
        cost += move(given, c.first, graph->shape_of(o), c.first);
    }
    for (int m : consumers[static_cast<std::size_t>(node)]) {
      const Choice mc = fixed[static_cast<std::size_t>(m)];
      if (mc.config < 0) continue;
      const pcg::Node& consumer = graph->node(m);
      for (std::size_t i = 0; i < consumer.inputs.size(); ++i) {
        if (consumer.inputs[i].node != node) continue;
        cost +=
            move(mine.config.outputs[static_cast<std::size_t>(consumer.inputs[i].port)], c.first, info(m, mc).config.inputs[i], mc.first);
      }
      if (cost == kInf) return kInf;
    }
    return cost;
  }

  // ---- decomposition -------------------------------------------------------------------------

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
    describe(t);
    t.content_id = intern(t.content);
    trees.push_back(std::move(t));
    return static_cast<int>(trees.size()) - 1;
  }

  std::vector<int> neighbours(int node) const {
    std::vector<int> out;
    for (pcg::PortRef in : graph->node(node).inputs)
      if (decides(in.node)) out.push_back(in.node);
    for (int m : consumers[static_cast<std::size_t>(node)]) out.push_back(m);
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
    for (auto& [r, g] : groups) out.push_back(std::move(g));
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
      for (int m : consumers[static_cast<std::size_t>(members[p])])
        if (auto it = pos.find(m); it != pos.end()) reach = std::max(reach, it->second);
    }
    return best;
  }

  template <class Key>
  std::string pin_tag(const std::map<Key, Pin>& pinned, Key key) {
    auto it = pinned.find(key);
    if (it == pinned.end()) return "";
    return "p" + std::to_string(intern(it->second.shape.to_string() + "@" + std::to_string(it->second.first_device)));
  }

  void describe(Tree& t) {
    std::map<int, int> local;
    for (std::size_t i = 0; i < t.members.size(); ++i) local[t.members[i]] = static_cast<int>(i);
    auto boundary_index = [&](int node) {
      auto it = std::find(t.boundary.begin(), t.boundary.end(), node);
      if (it != t.boundary.end()) return static_cast<int>(it - t.boundary.begin());
      t.boundary.push_back(node);
      return static_cast<int>(t.boundary.size()) - 1;
    };
    std::string& s = t.content;
    s = std::to_string(t.kind) + "|";
    for (int m : t.members) {
      const pcg::Node& n = graph->node(m);
      s += std::to_string(signature_id[static_cast<std::size_t>(m)]) + "(";
      for (pcg::PortRef in : n.inputs) {
        if (auto it = local.find(in.node); it != local.end())
          s += "m" + std::to_string(it->second);
        else if (graph->node(in.node).is_graph_input())
          s += "g" + pin_tag(pins.inputs, in.node);
        else
          s += "b" + std::to_string(boundary_index(in.node));
        s += "." + std::to_string(in.port) + ",";
      }
      s += ")";
      for (std::size_t k = 0; k < graph->outputs().size(); ++k)
        if (graph->outputs()[k].node == m) s += "o" + std::to_string(graph->outputs()[k].port) + pin_tag(pins.outputs, k);
      for (int c : consumers[static_cast<std::size_t>(m)]) {
        if (local.count(c)) continue;
        const pcg::Node& cn = graph->node(c);
        for (std::size_t i = 0; i < cn.inputs.size(); ++i)
          if (cn.inputs[i].node == m)
            s += ">b" + std::to_string(boundary_index(c)) + "." + std::to_string(cn.inputs[i].port) + "/" + std::to_string(i);
      }
    }
    if (t.node >= 0) s += "@" + std::to_string(local[t.node]);
    for (int c : t.children) s += "[" + (c < 0 ? std::string("-") : std::to_string(trees[static_cast<std::size_t>(c)].content_id)) + "]";
  }

  // ---- dynamic programming -------------------------------------------------------------------

  MemoKey key(const Tree& t, Resource r) const {
    MemoKey k{t.content_id, r.first, r.count, std::bit_cast<std::uint64_t>(memory_scale), {}};
    k.boundary.reserve(2 * t.boundary.size());
    for (int b : t.boundary) {
      const Choice c = fixed[static_cast<std::size_t>(b)];
      k.boundary.push_back(info(b, c).content);
      k.boundary.push_back(c.first);
    }
    return k;
  }

  double solve(int index, Resource r) {
    if (index < 0) return 0;
    const Tree& t = trees[static_cast<std::size_t>(index)];
    MemoKey k = key(t, r);
    if (auto it = memo.find(k); it != memo.end()) {
      ++stats.cache_hits;
      return it->second.cost;
    }
    ++stats.solved;
    Entry e;
    if (t.kind == Tree::Parallel) {
      e.cost = solve_parts(t, 0, r, e.split_sizes);
    } else {
      std::vector<Choice> options_here = choices(t.node, r);
      if (t.kind == Tree::Series && t.boundary.size() > options.max_boundary && !options_here.empty())
        options_here = {best_alone(t.node, options_here)};
      for (Choice c : options_here) {
        double cost = leaf_cost(t.node, c);
        if (cost >= e.cost) continue;
        if (t.kind == Tree::Series) {
          fixed[static_cast<std::size_t>(t.node)] = c;
          cost += solve(t.children[0], r);
          if (cost < e.cost) cost += solve(t.children[1], r);
          fixed[static_cast<std::size_t>(t.node)] = {};
        }
        if (cost < e.cost) {
          e.cost = cost;
          e.choice = c;
        }
      }
    }
    const double cost = e.cost;
    memo.emplace(std::move(k), std::move(e));
    return cost;
  }

  // The choice that costs least given the decided nodes alone.
  Choice best_alone(int node, const std::vector<Choice>& among) {
    Choice best;
    double best_cost = kInf;
    for (Choice c : among) {
      const double cost = leaf_cost(node, c);
      if (cost < best_cost || best.config < 0) {
        best_cost = cost;
        best = c;
      }
    }
    return best;
  }

  // Parts k.. of a parallel split on `r`: part k shares the devices with the rest (run one after
  // the other) or takes a share of them and runs beside the rest.
  double solve_parts(const Tree& t, std::size_t k, Resource r, std::vector<int>& sizes) {
    if (k == t.children.size()) return 0;
    std::vector<int> rest_sizes;
    double best = solve(t.children[k], r) + solve_parts(t, k + 1, r, rest_sizes);
    std::vector<int> best_sizes{0};
    best_sizes.insert(best_sizes.end(), rest_sizes.begin(), rest_sizes.end());
    if (k + 1 < t.children.size()) {
      for (int share : split_sizes_of(r.count)) {
        std::vector<int> tail;
        const double mine = solve(t.children[k], {r.first, share});
        if (mine >= best) continue;
        const double cost = std::max(mine, solve_parts(t, k + 1, {r.first + share, r.count - share}, tail));
        if (cost < best) {
          best = cost;
          best_sizes = {share};
          best_sizes.insert(best_sizes.end(), tail.begin(), tail.end());
        }
      }
    }
    sizes = std::move(best_sizes);
    return best;
  }

  void reconstruct(int index, Resource r, std::vector<Choice>& out) {
    if (index < 0) return;
    const Tree& t = trees[static_cast<std::size_t>(index)];
    const Entry& e = memo.at(key(t, r));
    if (t.kind == Tree::Parallel) {
      for (std::size_t k = 0; k < t.children.size(); ++k) {
        const int share = e.split_sizes[k];
        reconstruct(t.children[k], share == 0 ? r : Resource{r.first, share}, out);
        if (share != 0) r = {r.first + share, r.count - share};
      }
      return;
    }
    out[static_cast<std::size_t>(t.node)] = e.choice;
    if (t.kind == Tree::Series) {
      fixed[static_cast<std::size_t>(t.node)] = e.choice;
      reconstruct(t.children[0], r, out);
      reconstruct(t.children[1], r, out);
      fixed[static_cast<std::size_t>(t.node)] = {};
    }
  }

  // ---- exhaustive search of the same choices -------------------------------------------------

  // Enumerates every choice of every node and every division of devices, calling `done` with
  // the objective of each complete combination.
  void enumerate(int index, Resource r, const std::function<void(double)>& done, double so_far) {
    enumerate_list({{index, r}}, done, so_far);
  }

  struct Pending {
    int index;
    Resource r;
  };

  void enumerate_list(std::vector<Pending> todo, const std::function<void(double)>& done, double so_far) {
    while (!todo.empty() && todo.back().index < 0) todo.pop_back();
    if (todo.empty()) return done(so_far);
    const Pending p = todo.back();
    todo.pop_back();
    const Tree& t = trees[static_cast<std::size_t>(p.index)];
    if (t.kind == Tree::Parallel) {
      enumerate_parts(t, 0, p.r, todo, done, so_far);
      return;
    }
    for (Choice c : choices(t.node, p.r)) {
      const double here = leaf_cost(t.node, c);
      fixed[static_cast<std::size_t>(t.node)] = c;
      std::vector<Pending> next = todo;
      if (t.kind == Tree::Series) {
        next.push_back({t.children[1], p.r});
        next.push_back({t.children[0], p.r});
      }
      enumerate_list(std::move(next), done, so_far + here);
      fixed[static_cast<std::size_t>(t.node)] = {};
    }
  }

  void enumerate_parts(const Tree& t, std::size_t k, Resource r, const std::vector<Pending>& todo, const std::function<void(double)>& done,
                       double so_far) {
    if (k == t.children.size()) return enumerate_list(todo, done, so_far);
    // Sharing: this part, then the others, on the same devices, times added.
    enumerate(
        t.children[k], r, [&](double part) { enumerate_parts(t, k + 1, r, todo, done, so_far + part); }, 0);
    if (k + 1 == t.children.size()) return;
    for (int share : split_sizes_of(r.count)) {
      enumerate(
          t.children[k], {r.first, share},
          [&](double part) {
            enumerate_rest(
                t, k + 1, {r.first + share, r.count - share},
                [&](double rest) { enumerate_list(todo, done, so_far + std::max(part, rest)); }, 0);
          },
          0);
    }
  }

  // Parts k.. alone (no pending work after them), each total reported to `done`.
  void enumerate_rest(const Tree& t, std::size_t k, Resource r, const std::function<void(double)>& done, double so_far) {
    if (k == t.children.size()) return done(so_far);
    enumerate(
        t.children[k], r, [&](double part) { enumerate_rest(t, k + 1, r, done, so_far + part); }, 0);
    if (k + 1 == t.children.size()) return;
    for (int share : split_sizes_of(r.count))
      enumerate(
          t.children[k], {r.first, share},
          [&](double part) {
            enumerate_rest(
                t, k + 1, {r.first + share, r.count - share}, [&](double rest) { done(so_far + std::max(part, rest)); }, 0);
          },
          0);
  }

  // ---- entry points --------------------------------------------------------------------------

  int prepare(const pcg::Graph& g, const Pins& pinned) {
    graph = &g;
    pins = pinned;
    trees.clear();
    configs.assign(g.size(), nullptr);
    fixed.assign(g.size(), Choice{});
    signature_id.assign(g.size(), -1);
    consumers.assign(g.size(), {});
    for (const pcg::Node& n : g.nodes())
      for (pcg::PortRef in : n.inputs) {
        auto& list = consumers[static_cast<std::size_t>(in.node)];
        if (list.empty() || list.back() != n.id) list.push_back(n.id);
      }
    std::vector<int> members;
    for (const pcg::Node& n : g.nodes()) {
      if (n.is_graph_input()) continue;
      configs[static_cast<std::size_t>(n.id)] = &configs_of(n);
      signature_id[static_cast<std::size_t>(n.id)] = intern(signature(n));
      members.push_back(n.id);
    }
    double total = 0;
    for (int m : members) total += configs[static_cast<std::size_t>(m)]->front().memory;
    memory_scale = total > machine.device.memory_bytes ? machine.device.memory_bytes / total : 1;
    if (!options.share_cache) memo.clear();
    return members.empty() ? -1 : build(std::move(members));
  }

  // What the chosen tasks keep on the device that keeps the most: every output piece, and every
  // weight piece with its gradient and optimizer state. A lower bound of the plan's memory (which
  // also holds the pieces its layout changes make), cheap enough to rule a mapping out.
  double fullest_device_bytes(const std::vector<Choice>& chosen) const {
    std::vector<double> bytes(static_cast<std::size_t>(machine.devices()), 0);
    for (const pcg::Node& n : graph->nodes()) {
      const Choice c = chosen[static_cast<std::size_t>(n.id)];
      if (n.is_graph_input() || c.config < 0) continue;
      const ConfigInfo& i = info(n.id, c);
      for (int d = c.first; d < c.first + static_cast<int>(i.config.tasks()) && d < machine.devices(); ++d)
        bytes[static_cast<std::size_t>(d)] += i.kept;
    }
    return bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end());
  }

  // Whether the plan the placements make fits every device, as the simulated plan's memory counts.
  bool fits(const pcg::Graph& g, const std::vector<Placement>& placements) const {
    try {
      return first_overfull_device(plan_memory(materialize(g, placements, library), model), machine) < 0;
    } catch (const LoomError&) {
      return false;
    }
  }

  Mapping result(const pcg::Graph& g, const std::vector<Choice>& chosen, double estimate) const {
    Mapping m;
    m.estimate = estimate;
    for (const pcg::Node& n : g.nodes()) {
      const Choice c = chosen[static_cast<std::size_t>(n.id)];
      if (n.is_graph_input() || c.config < 0)
        m.placements.push_back({unsplit_config(g, n), 0});
      else
        m.placements.push_back({info(n.id, c).config, c.first});
    }
    return m;
  }
};

MachineMapper::MachineMapper(const spec::Library& library, const CostModel& model, MappingOptions options)
    : impl_(std::make_unique<Impl>(library, model, std::move(options))) {}

MachineMapper::~MachineMapper() = default;

const MappingStats& MachineMapper::stats() const { return impl_->stats; }

Mapping MachineMapper::map(const pcg::Graph& graph, const Pins& pins) {
  Impl& m = *impl_;
  const int root = m.prepare(graph, pins);
  const Resource all{0, m.machine.devices()};
  // Shares in proportion to the unsplit need are safe but blunt: a node whose weights are cheap
  // to copy may be denied its copies for the sake of activations that a split shrinks anyway. So
  // the mapping is first sought with no shares, and kept when its plan fits every device.
  const double shares = m.memory_scale;
  std::vector<Choice> chosen(graph.size());
  if (shares < 1) {
    m.memory_scale = 1;
    const double estimate = m.solve(root, all);
    if (std::isfinite(estimate)) {
      m.reconstruct(root, all, chosen);
      if (m.fullest_device_bytes(chosen) <= m.machine.device.memory_bytes) {
        Mapping found = m.result(graph, chosen, estimate);
        if (m.fits(graph, found.placements)) return found;
      }
    }
    m.memory_scale = shares;
    m.fixed.assign(graph.size(), Choice{});
    chosen.assign(graph.size(), Choice{});
  }
  const double estimate = m.solve(root, all);
  if (std::isfinite(estimate)) m.reconstruct(root, all, chosen);
  return m.result(graph, chosen, estimate);
}

Mapping MachineMapper::brute_force(const pcg::Graph& graph, const Pins& pins) {
  Impl& m = *impl_;
  map(graph, pins);  // settles whether the mapping runs with memory shares, as it does for the DP
  const int root = static_cast<int>(m.trees.size()) - 1;
  double best = kInf;
  m.enumerate(
      root, {0, m.machine.devices()}, [&](double cost) { best = std::min(best, cost); }, 0);
  Mapping out;
  out.estimate = best;
  return out;
}

}  // namespace loom::search
