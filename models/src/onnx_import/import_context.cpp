#include "onnx_import/import_context.hpp"

#include "loom/pcg/diagnostic.hpp"
#include "onnx_import/library_epsilon.hpp"

namespace loom::models::onnx_import {

const HostTensor& ImportContext::constant(const std::string& value) const {
  auto it = constants_.find(value);
  if (it == constants_.end()) throw LoomError("'" + value + "' is not known at import time");
  return it->second;
}

PortRef ImportContext::place(const HostTensor& tensor, const std::string& name) {
  // Integers (ids, indices) are data fed to the graph, not parameters.
  PortRef port = tensor.integral ? builder_.input(name, tensor.dims) : builder_.weight(name, tensor.dims);
  graph_constants_[name] = tensor.to_value();
  return port;
}

PortRef ImportContext::port(const std::string& value) {
  if (auto it = ports_.find(value); it != ports_.end()) return it->second;
  const HostTensor& tensor = constant(value);
  const std::string name = fresh_name(value);
  PortRef p = place(tensor, name);
  if (is_initializer(value)) sources_[name] = InitializerSource{value};
  ports_[value] = p;
  integral_ports_[value] = tensor.integral;
  return p;
}

PortRef ImportContext::constant_port(const HostTensor& tensor, const std::string& hint, std::optional<InitializerSource> source) {
  const std::string name = fresh_name(hint);
  if (source && is_initializer(source->initializer)) sources_[name] = std::move(*source);
  return place(tensor, name);
}

Dims ImportContext::dims(const std::string& value) const {
  if (auto it = ports_.find(value); it != ports_.end()) return builder_.dims(it->second);
  return constant(value).dims;
}

bool ImportContext::integral(const std::string& value) const {
  if (auto it = constants_.find(value); it != constants_.end()) return it->second.integral;
  auto it = integral_ports_.find(value);
  return it != integral_ports_.end() && it->second;
}

void ImportContext::set_port(const std::string& value, PortRef port, bool integral) {
  ports_[value] = port;
  integral_ports_[value] = integral;
}

void ImportContext::set_constant(const std::string& value, HostTensor tensor) { constants_[value] = std::move(tensor); }

void ImportContext::set_initializer(const std::string& value, HostTensor tensor) {
  set_constant(value, std::move(tensor));
  initializers_.insert(value);
}

std::string ImportContext::fresh_name(const std::string& hint) {
  std::string name = hint.empty() ? "constant" : hint;
  for (int k = 2; !used_names_.insert(name).second; ++k) name = hint + "#" + std::to_string(k);
  return name;
}

double ImportContext::batchnorm_epsilon() {
  if (!batchnorm_epsilon_) batchnorm_epsilon_ = onnx_import::batchnorm_epsilon(library_);
  return *batchnorm_epsilon_;
}

double ImportContext::layer_norm_epsilon() {
  if (!layer_norm_epsilon_) layer_norm_epsilon_ = onnx_import::layer_norm_epsilon(library_);
  return *layer_norm_epsilon_;
}

}  // namespace loom::models::onnx_import
