#include "loom/models/onnx_export.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "loom/pcg/diagnostic.hpp"

namespace loom::models {
namespace {

// The initializer's values from the weight's: scaled back, and transposed back for a matrix.
TensorValue initializer_values(const TensorValue& weight, const InitializerSource& source) {
  TensorValue out = weight;
  for (double& v : out.data) v /= source.scale;
  if (!source.transposed) return out;
  const std::int64_t rows = weight.dims.at(0), cols = weight.dims.at(1);
  out.dims = {cols, rows};
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out.data[static_cast<std::size_t>(c * rows + r)] = weight.data[static_cast<std::size_t>(r * cols + c)] / source.scale;
  return out;
}

void set_values(onnx::TensorProto& t, const TensorValue& values, const std::string& path) {
  std::vector<std::int64_t> dims(t.dims().begin(), t.dims().end());
  if (dims != values.dims)
    throw LoomError(path + ": initializer '" + t.name() + "' is " + spec::dims_to_string(dims) + ", but its weight gives " +
                    spec::dims_to_string(values.dims));
  t.clear_raw_data();
  t.clear_float_data();
  t.clear_double_data();
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    for (double v : values.data) t.add_float_data(static_cast<float>(v));
  } else if (t.data_type() == onnx::TensorProto::DOUBLE) {
    for (double v : values.data) t.add_double_data(v);
  } else {
    throw LoomError(path + ": initializer '" + t.name() + "' holds elements of ONNX type " + std::to_string(t.data_type()) +
                    "; weights are written back into float and double initializers only");
  }
}

// The initializer called `name`; an exporter's Identity copy of one (PyTorch writes equal
// initializers once) becomes an initializer of its own in the Identity's place.
onnx::TensorProto& initializer_called(onnx::GraphProto& graph, std::map<std::string, onnx::TensorProto*>& initializers,
                                      const std::string& name, const std::string& path) {
  if (auto it = initializers.find(name); it != initializers.end()) return *it->second;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& n = graph.node(i);
    if (n.op_type() != "Identity" || n.output_size() != 1 || n.output(0) != name || n.input_size() != 1 || !initializers.count(n.input(0)))
      continue;
    onnx::TensorProto* copy = graph.add_initializer();
    *copy = *initializers.at(n.input(0));
    copy->set_name(name);
    graph.mutable_node()->DeleteSubrange(i, 1);
    return *(initializers[name] = copy);
  }
  throw LoomError(path + ": the file has no initializer '" + name + "'");
}

bool same_values(const TensorValue& a, const TensorValue& b) {
  if (a.dims != b.dims) return false;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    if (std::abs(a.data[i] - b.data[i]) > 1e-6 * std::max(std::abs(a.data[i]), std::abs(b.data[i]))) return false;
  return true;
}

}  // namespace

OnnxExport export_onnx_weights(const std::string& path, const spec::Library& library, const OnnxImportOptions& options,
                               const NamedValues& weights) {
  const ImportedModel imported = import_onnx_file(path, library, options);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream file;
  file << in.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(file.str())) throw LoomError(path + ": not an ONNX model: the protobuf message does not parse");
  std::map<std::string, onnx::TensorProto*> initializers;
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) initializers[t.name()] = &t;
  OnnxExport out;
  std::map<std::string, std::pair<std::string, TensorValue>> written;  // by initializer: the weight, the values
  for (const pcg::Node& n : imported.graph.nodes()) {
    if (n.op != pcg::kWeightOp) continue;
    auto value = weights.find(n.name);
    if (value == weights.end()) {
      if (imported.sources.count(n.name)) throw LoomError(path + ": no value is given for weight '" + n.name + "'");
      continue;
    }
    if (value->second.dims != n.output_shapes.front().dims)
      throw LoomError(path + ": weight '" + n.name + "' is " + spec::dims_to_string(n.output_shapes.front().dims) + " in the model, but " +
                      spec::dims_to_string(value->second.dims) + " is given");
    auto source = imported.sources.find(n.name);
    if (source == imported.sources.end()) {
      if (imported.constants.count(n.name))
        out.left_out.push_back(n.name + ": computed at import from the file's values, not held by one initializer");
      else
        out.left_out.push_back(n.name + ": a graph input of the file, which holds no value for it");
      continue;
    }
    if (source->second.scale == 0) {
      out.left_out.push_back(n.name + ": the file scales '" + source->second.initializer + "' by 0");
      continue;
    }
    const std::string& initializer = source->second.initializer;
    TensorValue values = initializer_values(value->second, source->second);
    if (auto earlier = written.find(initializer); earlier != written.end()) {
      if (!same_values(earlier->second.second, values))
        out.left_out.push_back(n.name + ": its initializer '" + initializer + "' is also weight '" + earlier->second.first +
                               "', whose values differ; the file keeps those");
      continue;
    }
    set_values(initializer_called(*model.mutable_graph(), initializers, initializer, path), values, path);
    written.emplace(initializer, std::make_pair(n.name, std::move(values)));
    out.written.push_back(initializer);
  }
  if (!model.SerializeToString(&out.bytes))
    throw LoomError(path + ": the model with its weights written in cannot be serialized (ONNX files hold at most 2 GiB)");
  return out;
}

}  // namespace loom::models
