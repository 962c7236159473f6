#pragma once
// The state of one import: what every ONNX value name stands for (a port of the graph being built,
// or a tensor known at import time) and the values of the constants placed in the graph.
#include <map>
#include <optional>
#include <set>
#include <string>

#include "graph_builder.hpp"
#include "loom/models/onnx_import.hpp"
#include "loom/models/values.hpp"
#include "onnx_import/host_tensor.hpp"

namespace loom::models::onnx_import {

class ImportContext {
 public:
  ImportContext(const spec::Library& library, int opset) : library_(library), builder_(library), opset_(opset) {}

  GraphBuilder& builder() { return builder_; }
  int opset() const { return opset_; }

  bool known(const std::string& value) const { return ports_.count(value) || constants_.count(value); }
  bool is_constant(const std::string& value) const { return constants_.count(value) > 0; }
  const HostTensor& constant(const std::string& value) const;
  // The value as a graph port; a constant is placed in the graph the first time (a weight, or an
  // input holding integers), named after the value.
  PortRef port(const std::string& value);
  // A new constant placed in the graph under a fresh name derived from `hint`; `source`: the
  // initializer it is computed from, when it is one transposed or scaled.
  PortRef constant_port(const HostTensor& tensor, const std::string& hint, std::optional<InitializerSource> source = std::nullopt);
  Dims dims(const std::string& value) const;
  bool integral(const std::string& value) const;

  void set_port(const std::string& value, PortRef port, bool integral = false);
  void set_constant(const std::string& value, HostTensor tensor);
  // A constant the file stores as an initializer: the model's weights are among them.
  void set_initializer(const std::string& value, HostTensor tensor);
  bool is_initializer(const std::string& value) const { return initializers_.count(value) > 0; }

  // `hint` if unused so far, else `hint#2`, `hint#3`, ...; the name is then taken.
  std::string fresh_name(const std::string& hint);

  NamedValues& graph_constants() { return graph_constants_; }
  // The initializer each placed constant comes from, where one does (ImportedModel::sources).
  std::map<std::string, InitializerSource>& sources() { return sources_; }

  // The epsilons of the library's batchnorm and layer_norm (library_epsilon.hpp), found once.
  double batchnorm_epsilon();
  double layer_norm_epsilon();

 private:
  PortRef place(const HostTensor& tensor, const std::string& name);

  const spec::Library& library_;
  GraphBuilder builder_;
  int opset_;
  std::optional<double> batchnorm_epsilon_, layer_norm_epsilon_;
  std::set<std::string> used_names_;
  std::map<std::string, PortRef> ports_;
  std::map<std::string, bool> integral_ports_;
  std::map<std::string, HostTensor> constants_;
  std::set<std::string> initializers_;
  NamedValues graph_constants_;
  std::map<std::string, InitializerSource> sources_;
};

}  // namespace loom::models::onnx_import
