#include "onnx_import/patterns.hpp"

#include <cmath>
#include <vector>

#include "onnx_import/node_attrs.hpp"

namespace loom::models::onnx_import {
namespace {

bool near(std::optional<double> v, double target) { return v && std::abs(*v - target) <= 1e-4 * std::abs(target); }

class GraphIndex {
 public:
  explicit GraphIndex(const onnx::GraphProto& graph) : graph_(graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      for (const auto& out : graph.node(i).output()) producer_[out] = i;
      for (const auto& in : graph.node(i).input()) {
        auto& list = consumers_[in];
        if (list.empty() || list.back() != i) list.push_back(i);
      }
    }
    for (const auto& out : graph.output()) outputs_.insert(out.name());
  }

  const onnx::NodeProto& node(int i) const { return graph_.node(i); }
  std::optional<int> producer(const std::string& value) const {
    auto it = producer_.find(value);
    return it == producer_.end() ? std::nullopt : std::optional<int>(it->second);
  }
  // The only node reading `value`, when it is read by exactly one node and is no graph output.
  std::optional<int> sole_consumer(const std::string& value) const {
    auto it = consumers_.find(value);
    if (outputs_.count(value) || it == consumers_.end() || it->second.size() != 1) return std::nullopt;
    return it->second.front();
  }
  std::vector<int> consumers(const std::string& value) const {
    auto it = consumers_.find(value);
    return it == consumers_.end() ? std::vector<int>{} : it->second;
  }
  bool is_output(const std::string& value) const { return outputs_.count(value) > 0; }

  // The node if it has type `op`.
  const onnx::NodeProto* typed(std::optional<int> i, const std::string& op) const {
    return i && node(*i).op_type() == op ? &node(*i) : nullptr;
  }

 private:
  const onnx::GraphProto& graph_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<std::string> outputs_;
};

// The input of a binary node other than `known`, or "" when `known` is not one of its two inputs.
std::string other_input(const onnx::NodeProto& n, const std::string& known) {
  if (n.input_size() != 2) return "";
  if (n.input(0) == known) return n.input(1);
  if (n.input(1) == known) return n.input(0);
  return "";
}

// A ReduceMean over the last axis that keeps it.
bool is_last_axis_mean(const onnx::NodeProto& n, const ScalarLookup& scalar) {
  if (n.op_type() != "ReduceMean") return false;
  const NodeAttrs attrs(n);
  if (attrs.get_int("keepdims", 1) != 1) return false;
  if (n.input_size() > 1 && !n.input(1).empty()) return near(scalar(n.input(1)), -1);
  const auto axes = attrs.get_ints("axes");
  return axes.size() == 1 && axes[0] == -1;
}

std::optional<Fusion> match_layer_norm(const GraphIndex& g, int r1, const ScalarLookup& scalar) {
  const onnx::NodeProto& mean = g.node(r1);
  if (!is_last_axis_mean(mean, scalar)) return std::nullopt;
  const std::string x = mean.input(0);
  const auto d = g.sole_consumer(mean.output(0));
  const auto* sub = g.typed(d, "Sub");
  if (!sub || sub->input(0) != x || sub->input(1) != mean.output(0)) return std::nullopt;
  const std::string centered = sub->output(0);
  const auto readers = g.consumers(centered);
  if (g.is_output(centered) || readers.size() != 2) return std::nullopt;
  int p = readers[0], y = readers[1];
  if (g.node(p).op_type() == "Div") std::swap(p, y);
  const onnx::NodeProto& square = g.node(p);
  const bool squares = (square.op_type() == "Pow" && square.input(0) == centered && near(scalar(square.input(1)), 2)) ||
                       (square.op_type() == "Mul" && square.input(0) == centered && square.input(1) == centered);
  if (!squares) return std::nullopt;
  const auto r2 = g.sole_consumer(square.output(0));
  if (!r2 || !is_last_axis_mean(g.node(*r2), scalar) || g.node(*r2).input(0) != square.output(0)) return std::nullopt;
  const auto a = g.sole_consumer(g.node(*r2).output(0));
  const auto* add_eps = g.typed(a, "Add");
  if (!add_eps) return std::nullopt;
  const auto eps = scalar(other_input(*add_eps, g.node(*r2).output(0)));
  if (!eps) return std::nullopt;
  const auto s = g.sole_consumer(add_eps->output(0));
  const auto* root = g.typed(s, "Sqrt");
  if (!root || g.sole_consumer(root->output(0)) != y) return std::nullopt;
  const onnx::NodeProto& div = g.node(y);
  if (div.op_type() != "Div" || div.input(0) != centered || div.input(1) != root->output(0)) return std::nullopt;
  Fusion f;
  f.x = x;
  f.epsilon = *eps;
  f.nodes = {r1, *d, p, *r2, *a, *s, y};
  f.output = div.output(0);
  f.last_node = y;
  // The affine tail, when there is one: * gamma, + beta.
  const auto m = g.sole_consumer(div.output(0));
  const auto* mul = g.typed(m, "Mul");
  if (!mul || other_input(*mul, div.output(0)).empty()) return f;
  const auto b = g.sole_consumer(mul->output(0));
  const auto* add = g.typed(b, "Add");
  if (!add || other_input(*add, mul->output(0)).empty()) return f;
  f.gamma = other_input(*mul, div.output(0));
  f.beta = other_input(*add, mul->output(0));
  f.nodes.insert({*m, *b});
  f.output = add->output(0);
  f.last_node = *b;
  return f;
}

}  // namespace

std::map<int, Fusion> find_fusions(const onnx::GraphProto& graph, const ScalarLookup& scalar) {
  const GraphIndex index(graph);
  std::map<int, Fusion> found;
  std::set<int> covered;
  for (int i = 0; i < graph.node_size(); ++i) {
    std::optional<Fusion> f = match_layer_norm(index, i, scalar);
    if (!f) continue;
    bool overlaps = false;
    for (int n : f->nodes) overlaps |= covered.count(n) > 0;
    if (overlaps) continue;
    covered.insert(f->nodes.begin(), f->nodes.end());
    found.emplace(f->last_node, std::move(*f));
  }
  return found;
}

}  // namespace loom::models::onnx_import
