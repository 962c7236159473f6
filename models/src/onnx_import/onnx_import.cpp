#include "loom/models/onnx_import.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <onnx/onnx_pb.h>

#include "loom/pcg/diagnostic.hpp"
#include "onnx_import/constant_folding.hpp"
#include "onnx_import/import_context.hpp"
#include "onnx_import/node_attrs.hpp"
#include "onnx_import/op_mapping.hpp"
#include "onnx_import/plain_layer_norm.hpp"
#include "onnx_import/rule_fusion.hpp"
#include "onnx_import/weight_roles.hpp"

namespace loom::models {
namespace {

using namespace onnx_import;

int default_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return static_cast<int>(o.version());
  }
  return 1;
}

class Importer {
 public:
  // `rebatch`: the batch the data inputs' first dimension takes instead of the file's 1.
  Importer(const onnx::ModelProto& model, std::string source, const spec::Library& library, const OnnxImportOptions& options,
           std::string model_dir, std::optional<std::int64_t> rebatch = std::nullopt)
      : graph_(model.graph()),
        library_(library),
        source_(std::move(source)),
        options_(options),
        model_dir_(std::move(model_dir)),
        rebatch_(rebatch),
        cx_(library, default_opset(model)) {}

  // Whether --batch meets a file whose data inputs all have static shapes with a first dimension of
  // 1: the batch to re-batch. Read off the inputs' declared types; nothing is decoded.
  bool needs_rebatch() const { return options_.default_dim_required && options_.default_dim != 1 && static_at_batch_one(); }

  // Each node's outputs with their dimensions, in node order, as run() imported them.
  struct TracedValue {
    int node = 0;
    std::string value;
    Dims dims;
  };
  const std::vector<TracedValue>& traced() const { return traced_; }

  ImportedModel run() {
    check_supported();
    check_arity();
    decode_initializers();
    add_graph_inputs();
    check_default_dim_taken();
    for (int i = 0; i < graph_.node_size(); ++i) {
      import_node(i);
      for (const auto& out : graph_.node(i).output())
        if (!out.empty() && cx_.known(out)) traced_.push_back({i, out, cx_.dims(out)});
    }
    mark_outputs();
    if (!problems_.empty()) throw LoomError(std::move(problems_));
    ImportedModel out{cx_.builder().take(), std::move(cx_.graph_constants()), std::move(notes_), {}, {}};
    for (std::string& note : fuse_with_rules(out.graph, out.constants, options_.fusion_rules, library_))
      out.notes.push_back(std::move(note));
    use_library_layer_norm(out.graph, out.constants, [this] { return cx_.layer_norm_epsilon(); });
    for (const std::string& note : options_.fusion_notes) out.notes.push_back("import rule left out: " + note);
    for (const pcg::Node& n : out.graph.nodes())
      if (n.op == pcg::kWeightOp && n.output_shapes.front().dims.empty() && out.constants.count(n.name)) out.fixed.insert(n.name);
    for (auto& [name, source] : cx_.sources())
      if (out.constants.count(name)) out.sources.emplace(name, std::move(source));
    return out;
  }

 private:
  void report(const std::string& message) { problems_.push_back(Diagnostic{{source_, 0, 0}, message}); }

  // Every node gives an output, and the common operators have all their inputs: every malformed
  // node is reported at once, before any is mapped.
  void check_arity() {
    static const std::map<std::string, int> fixed_inputs = {{"Add", 2},    {"Sub", 2},  {"Mul", 2}, {"Div", 2},  {"Pow", 2},
                                                            {"MatMul", 2}, {"Sqrt", 1}, {"Erf", 1}, {"Relu", 1}, {"ReduceMean", 1}};
    std::vector<Diagnostic> malformed;
    for (int i = 0; i < graph_.node_size(); ++i) {
      const auto& node = graph_.node(i);
      std::string problem;
      if (node.output_size() < 1) problem = "the node gives no output";
      if (auto it = fixed_inputs.find(node.op_type()); it != fixed_inputs.end() && node.input_size() < it->second)
        problem = node.op_type() + " takes " + std::to_string(it->second) + " inputs, the node has " + std::to_string(node.input_size());
      if (!problem.empty()) malformed.push_back({{source_, 0, 0}, describe_node(node, i) + ": " + problem});
    }
    if (!malformed.empty()) throw LoomError(std::move(malformed));
  }

  void check_supported() {
    std::vector<Diagnostic> unsupported;
    for (int i = 0; i < graph_.node_size(); ++i) {
      const auto& node = graph_.node(i);
      const bool standard = node.domain().empty() || node.domain() == "ai.onnx";
      if (standard && (is_mappable(node.op_type()) || is_foldable(node.op_type()))) continue;
      std::string what = "unsupported operator " + node.op_type();
      if (!standard) what += " of domain '" + node.domain() + "'";
      unsupported.push_back({{source_, 0, 0}, describe_node(node, i) + ": " + what});
    }
    if (!unsupported.empty()) throw LoomError(std::move(unsupported));
  }

  void decode_initializers() {
    for (const auto& t : graph_.initializer()) {
      try {
        initializers_.emplace(t.name(), decode_tensor(t, model_dir_));
      } catch (const LoomError& e) {
        report("initializer '" + t.name() + "': " + e.what());
      }
    }
    for (const auto& [name, tensor] : initializers_) cx_.set_initializer(name, tensor);
  }

  std::int64_t resolve_dim(const onnx::TensorShapeProto_Dimension& d, const std::string& input, int axis) {
    if (d.has_dim_value() && d.dim_value() > 0) return d.dim_value();
    const std::string symbol = d.has_dim_param() ? d.dim_param() : "";
    if (auto it = options_.dims.find(symbol); !symbol.empty() && it != options_.dims.end()) return it->second;
    notes_.push_back("input '" + input + "' dimension " + std::to_string(axis) + " (" +
                     (symbol.empty() ? std::string("unknown") : "'" + symbol + "'") + ") set to " + std::to_string(options_.default_dim));
    default_dim_taken_ = true;
    return options_.default_dim;
  }

  // A batch asked for, on a file whose inputs all have static shapes: nothing would take it.
  void check_default_dim_taken() {
    if (!options_.default_dim_required || default_dim_taken_ || !problems_.empty() || rebatch_) return;
    if (options_.default_dim == 1 && static_at_batch_one()) return;  // the batch asked for is the file's
    std::string shapes;
    for (const auto& in : graph_.input()) {
      if (initializers_.count(in.name()) || !cx_.known(in.name()) || cx_.is_constant(in.name())) continue;
      shapes += (shapes.empty() ? "" : ", ") + in.name() + " " + dims_text(cx_.dims(in.name()));
    }
    report("a batch of " + std::to_string(options_.default_dim) +
           " was asked for, but the file's inputs have static shapes, which pin the batch (" + shapes +
           "): export the model with a symbolic batch dimension (e.g. torch.onnx.export's dynamic_axes), or leave --batch out");
  }

  // Whether the file has data inputs, every one with a static shape whose first dimension is 1.
  bool static_at_batch_one() const {
    std::set<std::string> initializer_names;
    for (const auto& t : graph_.initializer()) initializer_names.insert(t.name());
    const std::set<std::string> weights = weight_inputs(graph_);
    bool any = false;
    for (const auto& in : graph_.input()) {
      if (initializer_names.count(in.name()) || weights.count(in.name()) || options_.known_inputs.count(in.name())) continue;
      if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) return false;
      const auto& shape = in.type().tensor_type().shape();
      for (int k = 0; k < shape.dim_size(); ++k)
        if (!shape.dim(k).has_dim_value() || shape.dim(k).dim_value() <= 0) return false;
      if (shape.dim_size() == 0 || shape.dim(0).dim_value() != 1) return false;
      any = true;
    }
    return any;
  }

  void add_graph_inputs() {
    const std::set<std::string> weights = weight_inputs(graph_);
    for (const auto& in : graph_.input()) {
      if (initializers_.count(in.name())) continue;  // older exporters list initializers as inputs too
      if (auto known = options_.known_inputs.find(in.name()); known != options_.known_inputs.end()) {
        const bool integral = in.type().has_tensor_type() && is_integral_type(in.type().tensor_type().elem_type());
        cx_.set_constant(in.name(), HostTensor{known->second.dims, known->second.data, integral});
        continue;
      }
      if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) {
        report("graph input '" + in.name() + "' is not a tensor with a known rank");
        continue;
      }
      const auto& tt = in.type().tensor_type();
      Dims dims;
      for (int k = 0; k < tt.shape().dim_size(); ++k) dims.push_back(resolve_dim(tt.shape().dim(k), in.name(), k));
      if (rebatch_ && !weights.count(in.name()) && !dims.empty()) dims.front() = *rebatch_;
      const bool integral = is_integral_type(tt.elem_type());
      GraphBuilder& g = cx_.builder();
      const std::string name = cx_.fresh_name(in.name());
      PortRef p = weights.count(in.name()) ? g.weight(name, dims) : g.input(name, dims);
      cx_.set_port(in.name(), p, integral);
    }
  }

  // True when every named input is known; an input left unknown by an earlier failure makes the
  // node fail silently (the failure is already reported).
  bool inputs_known(int index) {
    const auto& node = graph_.node(index);
    for (const auto& in : node.input()) {
      if (in.empty() || cx_.known(in)) continue;
      if (failed_.count(in)) {
        for (const auto& out : node.output()) failed_.insert(out);
        return false;
      }
      report(describe_node(node, index) + ": input '" + in + "' is not produced by any earlier node");
      for (const auto& out : node.output()) failed_.insert(out);
      return false;
    }
    return true;
  }

  void import_node(int index) {
    const auto& node = graph_.node(index);
    if (!inputs_known(index)) return;
    try {
      bool all_constant = true;
      std::vector<const HostTensor*> known;
      for (const auto& in : node.input()) {
        if (in.empty()) {
          known.push_back(nullptr);
          continue;
        }
        all_constant &= cx_.is_constant(in);
        known.push_back(cx_.is_constant(in) ? &cx_.constant(in) : nullptr);
      }
      if (node.op_type() == "Shape") {
        // Only the input's dimensions matter, and they are always known.
        if (node.input_size() < 1 || node.output_size() < 1) throw LoomError("Shape takes one input and gives one output");
        HostTensor dims_only{cx_.dims(node.input(0)), {}, false};
        known = {&dims_only};
        cx_.set_constant(node.output(0), fold_node(node, known, cx_.opset(), model_dir_).front());
        return;
      }
      if (node.op_type() == "Identity" && node.input_size() == 1 && node.output_size() == 1 && cx_.is_initializer(node.input(0))) {
        // PyTorch writes equal initializers once and the others as an Identity of it: each copy is a
        // weight of its own that starts equal (loom export writes it back as its own initializer).
        cx_.set_initializer(node.output(0), cx_.constant(node.input(0)));
        return;
      }
      if (all_constant && is_foldable(node.op_type())) {
        auto outputs = fold_node(node, known, cx_.opset(), model_dir_);
        for (std::size_t k = 0; k < outputs.size() && static_cast<int>(k) < node.output_size(); ++k) {
          if (!node.output(static_cast<int>(k)).empty()) cx_.set_constant(node.output(static_cast<int>(k)), outputs[k]);
        }
        return;
      }
      if (!is_mappable(node.op_type())) {
        throw LoomError(node.op_type() + " is supported only on values known at import time");
      }
      map_node(cx_, node);
      for (const auto& out : node.output()) {
        if (!out.empty() && !cx_.known(out)) failed_.insert(out);
      }
    } catch (const LoomError& e) {
      report(describe_node(node, index) + ": " + e.what());
      for (const auto& out : node.output()) failed_.insert(out);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      report(describe_node(node, index) + ": its inputs or attributes do not fit together (" + e.what() + ")");
      for (const auto& out : node.output()) failed_.insert(out);
    }
  }

  void mark_outputs() {
    GraphBuilder& g = cx_.builder();
    std::set<pcg::PortRef> marked;
    for (const auto& out : graph_.output()) {
      if (failed_.count(out.name())) continue;
      if (!cx_.known(out.name())) {
        report("graph output '" + out.name() + "' is not produced by any node");
        continue;
      }
      try {
        PortRef p = cx_.port(out.name());
        // A value that is already an output (or is a graph input) gets its own copy.
        if (marked.count(p) || g.graph().node(p.node).is_graph_input()) p = g.op("identity", {p});
        marked.insert(p);
        g.output(p);
      } catch (const LoomError& e) {
        report("graph output '" + out.name() + "': " + e.what());
      }
    }
  }

  const onnx::GraphProto& graph_;
  const spec::Library& library_;
  std::string source_;
  const OnnxImportOptions& options_;
  std::string model_dir_;
  std::optional<std::int64_t> rebatch_;
  std::vector<TracedValue> traced_;
  ImportContext cx_;
  std::map<std::string, HostTensor> initializers_;
  std::set<std::string> failed_;
  bool default_dim_taken_ = false;
  std::vector<Diagnostic> problems_;
  std::vector<std::string> notes_;
};

// The model imported with its data inputs' first dimension, 1 in the file, set to the batch
// --batch asks for. The batch must be traced through the graph: imported at 1 and at the batch,
// every value has the same dimensions but for ones of 1 that became the batch; the first node
// whose output breaks this (a Reshape to a fixed 1, a flattening of the batch) pins the batch,
// and the import is refused naming it.
ImportedModel rebatched(const onnx::ModelProto& model, const std::string& source, const spec::Library& library,
                        const OnnxImportOptions& options, const std::string& model_dir) {
  const std::int64_t batch = options.default_dim;
  OnnxImportOptions as_exported = options;
  as_exported.default_dim_required = false;
  std::map<std::string, Dims> exported;
  {
    Importer at_one(model, source, library, as_exported, model_dir);
    at_one.run();
    for (const auto& v : at_one.traced()) exported.emplace(v.value, v.dims);
  }
  Importer at_batch(model, source, library, as_exported, model_dir, batch);
  const std::string asked = "--batch " + std::to_string(batch) + " re-batches the static export";
  ImportedModel out;
  try {
    out = at_batch.run();
  } catch (const LoomError& e) {
    throw LoomError({{{source, 0, 0}, asked + ", but at that batch " + e.what()}});
  }
  const auto grew = [&](const Dims& one, const Dims& at) {
    for (std::size_t k = 0; k < at.size(); ++k)
      if (one[k] == 1 && at[k] == batch) return true;
    return false;
  };
  for (const auto& v : at_batch.traced()) {
    auto one = exported.find(v.value);
    if (one == exported.end()) continue;
    bool traced = one->second.size() == v.dims.size();
    for (std::size_t k = 0; traced && k < v.dims.size(); ++k)
      traced = v.dims[k] == one->second[k] || (one->second[k] == 1 && v.dims[k] == batch);
    if (!traced)
      throw LoomError(
          {{{source, 0, 0},
            asked + ", but " + describe_node(model.graph().node(v.node), v.node) + " pins the batch: its output '" + v.value + "' is " +
                dims_text(one->second) + " at the exported batch of 1 and " + dims_text(v.dims) + " at " + std::to_string(batch) +
                " (export the model with a symbolic batch dimension, e.g. torch.onnx.export's dynamic_axes)"}});
  }
  // An output with no dimension that became the batch mixes the samples (a sum over the batch).
  for (int i = 0; i < model.graph().output_size(); ++i) {
    const std::string& name = model.graph().output(i).name();
    auto one = exported.find(name);
    const Dims at = out.graph.shape_of(out.graph.outputs().at(static_cast<std::size_t>(i))).dims;
    if (one != exported.end() && one->second.size() == at.size() && !grew(one->second, at))
      throw LoomError({{{source, 0, 0},
                        asked + ", but output '" + name + "' is " + dims_text(at) + " at " + std::to_string(batch) +
                            ": none of its dimensions is the batch, so the samples are not kept apart"}});
  }
  out.notes.push_back("the static export re-batched from 1 to " + std::to_string(batch) + " (--batch)");
  return out;
}

}  // namespace

ImportedModel import_onnx_bytes(const std::string& bytes, const std::string& source, const spec::Library& library,
                                const OnnxImportOptions& options, const std::string& model_dir) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw LoomError({{{source, 0, 0}, "not an ONNX model: the protobuf message does not parse"}});
  }
  if (!model.has_graph()) throw LoomError({{{source, 0, 0}, "the ONNX model has no graph"}});
  try {
    if (Importer(model, source, library, options, model_dir).needs_rebatch()) return rebatched(model, source, library, options, model_dir);
    return Importer(model, source, library, options, model_dir).run();
  } catch (const LoomError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw LoomError({{{source, 0, 0}, "the model's tensors are too large to import in this machine's memory"}});
  } catch (const std::exception& e) {
    throw LoomError({{{source, 0, 0}, std::string("the model is malformed: ") + e.what()}});
  }
}

ImportedModel import_onnx_file(const std::string& path, const spec::Library& library, const OnnxImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LoomError({{{path, 0, 0}, "cannot open the file"}});
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return import_onnx_bytes(bytes.str(), path, library, options, dir.empty() ? "." : dir);
}

}  // namespace loom::models
