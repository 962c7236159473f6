#pragma once
#include <string>
#include <vector>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/op_catalog.hpp"

namespace loom::pcg::test_support {

// A hand-written stand-in for the spec library with three operators:
//   relu(x)        -> same shape; rejects a value-split (V > 1) input.
//   matmul(a, b)   -> [m, k] x [k, n] = [m, n]; a's m split gives D[0], b's n split gives D[1],
//                     k split the same way in both gives V.
//   split(x){axis} -> two halves of x along `axis`; only unpartitioned inputs.
// `relu_scale` multiplies relu's output dims, so a second catalog can disagree with the first.
class FakeCatalog : public OpCatalog {
 public:
  explicit FakeCatalog(std::int64_t relu_scale = 1) : relu_scale_(relu_scale) {}

  bool has_op(const std::string& name) const override { return name == "relu" || name == "matmul" || name == "split"; }

  std::size_t input_count(const std::string& name) const override { return name == "matmul" ? 2 : 1; }

  std::size_t output_count(const std::string& name) const override { return name == "split" ? 2 : 1; }

  std::vector<ParallelShape> infer(const std::string& name, const AttrMap& attrs, const std::vector<ParallelShape>& in) const override {
    if (name == "relu") return {relu(in.at(0))};
    if (name == "matmul") return {matmul(in.at(0), in.at(1))};
    return split(attrs, in.at(0));
  }

  TaskCost task_cost(const std::string& name, const AttrMap&, const std::vector<ParallelShape>& in) const override {
    TaskCost cost;
    cost.bytes_read = static_cast<double>(in.at(0).elements()) * 4;
    if (name == "matmul") {
      cost.flops = 2.0 * static_cast<double>(in[0].elements() * in[1].dims[1]);
    }
    return cost;
  }

 private:
  ParallelShape relu(ParallelShape x) const {
    if (x.V != 1) throw LoomError("relu cannot take a value-split (V) input");
    for (auto& d : x.dims) d *= relu_scale_;
    return x;
  }

  static ParallelShape matmul(const ParallelShape& a, const ParallelShape& b) {
    if (a.rank() != 2 || b.rank() != 2) throw LoomError("matmul needs two rank-2 inputs");
    if (a.dims[1] != b.dims[0]) {
      throw LoomError("matmul: inner sizes differ (" + std::to_string(a.dims[1]) + " vs " + std::to_string(b.dims[0]) + ")");
    }
    if (a.D[1] != b.D[0]) throw LoomError("matmul: k is split differently in the two inputs");
    if (a.tasks() != b.tasks()) throw LoomError("matmul: inputs run as different task counts");
    ParallelShape out = ParallelShape::unpartitioned({a.dims[0], b.dims[1]});
    out.D = {a.D[0], b.D[1]};
    out.V = a.D[1];
    out.R = a.tasks() / (out.D[0] * out.D[1] * out.V);
    return out;
  }

  static std::vector<ParallelShape> split(const AttrMap& attrs, const ParallelShape& x) {
    auto axis_it = attrs.find("axis");
    if (axis_it == attrs.end()) throw LoomError("split needs an 'axis' attribute");
    const std::int64_t axis = axis_it->second;
    if (axis < 0 || axis >= static_cast<std::int64_t>(x.rank())) {
      throw LoomError("split: axis " + std::to_string(axis) + " is out of range");
    }
    if (!x.is_unpartitioned()) throw LoomError("split only takes unpartitioned inputs");
    auto dims = x.dims;
    if (dims[static_cast<std::size_t>(axis)] % 2 != 0) throw LoomError("split: odd dimension");
    dims[static_cast<std::size_t>(axis)] /= 2;
    return {ParallelShape::unpartitioned(dims), ParallelShape::unpartitioned(dims)};
  }

  std::int64_t relu_scale_;
};

}  // namespace loom::pcg::test_support
