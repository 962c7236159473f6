#pragma once
// Shared by the model tests: the bundled library, and a small builder of ONNX models written the
// way exporters write them (initializers, typed inputs and outputs, opset 13 unless told).
#include <gtest/gtest.h>

#include <cmath>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/onnx_import.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/verifier/rule_selection.hpp"

namespace loom::models::test {

// Sizes at which every zoo model is small enough to evaluate in the interpreter.
inline const std::map<std::string, ParamValues>& tiny_sizes() {
  static const std::map<std::string, ParamValues> sizes = {
      {"resnext50", {{"batch", 1}, {"image", 32}, {"classes", 5}, {"width_div", 16}, {"groups", 4}}},
      {"inception_v3", {{"batch", 1}, {"image", 75}, {"classes", 5}, {"width_div", 16}}},
      {"bert_large", {{"batch", 2}, {"seq", 4}, {"layers", 1}, {"hidden", 8}, {"heads", 2}, {"vocab", 11}, {"max_positions", 6}}},
      {"dlrm", {{"batch", 2}, {"dim", 4}, {"tables", 3}, {"rows", 5}}},
      {"xdl", {{"batch", 2}, {"dim", 4}, {"tables", 2}, {"rows", 6}, {"hidden", 8}}},
      {"candle_uno", {{"batch", 2}, {"feature_layers", 1}, {"feature_width", 8}, {"dense_layers", 1}, {"dense_width", 8}}},
      {"mlp", {{"batch", 2}, {"in", 4}, {"hidden", 8}, {"layers", 2}}},
      {"mlp_fig1", {{"batch", 2}, {"in", 6}, {"hidden", 5}, {"out", 3}}},
      {"alexnet", {{"batch", 1}, {"image", 63}, {"classes", 5}, {"width_div", 64}}},
      {"resnet101", {{"batch", 1}, {"image", 32}, {"classes", 5}, {"width_div", 16}}},
      {"rnntc", {{"batch", 2}, {"steps", 3}, {"layers", 2}, {"hidden", 4}, {"vocab", 7}}},
      {"rnnlm", {{"batch", 2}, {"steps", 3}, {"layers", 2}, {"hidden", 4}, {"vocab", 7}}},
      {"nmt", {{"batch", 2}, {"steps", 3}, {"layers", 2}, {"hidden", 4}, {"vocab", 7}}},
      {"swin", {{"batch", 1}, {"resolution", 16}, {"patch", 2}, {"window", 4}, {"hidden", 8}, {"heads", 2}}},
      {"gpt3", {{"batch", 2}, {"seq", 4}, {"layers", 2}, {"hidden", 8}, {"heads", 2}}},
      {"mbart", {{"batch", 1}, {"seq", 3}, {"vocab", 9}, {"hidden", 8}, {"heads", 2}}},
      {"alphafold2", {{"batch", 1}, {"sequences", 3}, {"residues", 4}, {"hidden", 8}, {"heads", 2}, {"opm", 2}}},
  };
  return sizes;
}

inline const spec::Library& library() {
  static const spec::Library lib = spec::Library::load({spec::Library::default_specs_dir()});
  return lib;
}

// The proved import rules the commands fuse an ONNX file with (specs/rules/onnx.verified.json).
inline const std::vector<pcg::Rule>& bundled_import_rules() {
  static const std::vector<pcg::Rule> rules = verifier::import_rules(library()).rules;
  return rules;
}

class OnnxModel {
 public:
  explicit OnnxModel(int opset = 13) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // A graph input with fixed dimensions (a negative one is symbolic, named `symbol`).
  void input(const std::string& name, const std::vector<std::int64_t>& dims, bool integer = false, const std::string& symbol = "") {
    add_value(model_.mutable_graph()->add_input(), name, dims, integer, symbol);
  }
  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }

  void initializer(const std::string& name, const std::vector<std::int64_t>& dims, const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void int_initializer(const std::string& name, const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (auto d : dims) t->add_dims(d);
    for (auto v : values) t->add_int64_data(v);
  }
  void scalar(const std::string& name, float value) { initializer(name, {}, {value}); }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                        const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr_float(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  // A float initializer whose data lives in the file `location` beside the model.
  void external_initializer(const std::string& name, const std::vector<std::int64_t>& dims, const std::string& location) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    for (auto d : dims) t->add_dims(d);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = t->add_external_data();
    entry->set_key("location");
    entry->set_value(location);
  }

  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static void add_value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::int64_t>& dims, bool integer,
                        const std::string& symbol) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(integer ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    auto* shape = tt->mutable_shape();
    for (auto d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0)
        dim->set_dim_param(symbol);
      else
        dim->set_dim_value(d);
    }
  }
  onnx::ModelProto model_;
};

// Uniform values in [-1, 1) from a fixed seed.
inline TensorValue random_tensor(const std::vector<std::int64_t>& dims, std::uint64_t seed) {
  TensorValue t(dims);
  std::uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (double& v : t.data) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<double>(s >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
  }
  return t;
}

// A tensor's values as the float data of an ONNX initializer.
inline std::vector<float> floats(const TensorValue& t) { return {t.data.begin(), t.data.end()}; }

// The graph's outputs, evaluated by the interpreter in double precision.
inline std::vector<TensorValue> evaluate(const pcg::Graph& g, const NamedValues& values) {
  return spec::evaluate_graph<spec::RealDomain>(library(), g, values);
}

// The model imported from its bytes, fused with `rules` only.
inline ImportedModel import_with_rules(const OnnxModel& m, std::vector<pcg::Rule> rules, const std::string& source = "model.onnx") {
  OnnxImportOptions options;
  options.fusion_rules = std::move(rules);
  return import_onnx_bytes(m.bytes(), source, library(), options);
}

// `feeds` with the values the file gives its constants.
inline NamedValues with_constants(const ImportedModel& imported, NamedValues feeds) {
  for (const auto& [name, value] : imported.constants) feeds.emplace(name, value);
  return feeds;
}

inline std::size_t count_ops(const pcg::Graph& g, const std::string& op) {
  std::size_t n = 0;
  for (const auto& node : g.nodes()) n += node.op == op;
  return n;
}

inline void expect_near_all(const TensorValue& got, const TensorValue& want, double tolerance = 1e-9) {
  ASSERT_EQ(got.dims, want.dims);
  for (std::size_t i = 0; i < want.data.size(); ++i) {
    ASSERT_NEAR(got.data[i], want.data[i], tolerance * (1 + std::abs(want.data[i]))) << "element " << i;
  }
}

}  // namespace loom::models::test
