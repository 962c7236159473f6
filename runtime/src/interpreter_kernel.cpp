#include "loom/runtime/interpreter_kernel.hpp"

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/gradient.hpp"

namespace loom::runtime {
namespace {

template <class T>
std::vector<Tensor<double>> to_double(const std::vector<const Tensor<T>*>& tensors) {
  std::vector<Tensor<double>> out;
  for (const Tensor<T>* t : tensors) out.push_back(convert<double>(*t));
  return out;
}

std::vector<const Tensor<double>*> pointers(const std::vector<Tensor<double>>& tensors) {
  std::vector<const Tensor<double>*> out;
  for (const auto& t : tensors) out.push_back(&t);
  return out;
}

template <class T>
std::vector<Tensor<T>> from_double(std::vector<Tensor<double>> tensors) {
  std::vector<Tensor<T>> out;
  for (auto& t : tensors) out.push_back(convert<T>(t));
  return out;
}

}  // namespace

template <class T>
Kernel<T> interpreter_kernel(const spec::Library& library, const std::string& op, const pcg::AttrMap& attrs,
                             const std::vector<std::vector<std::int64_t>>& input_dims,
                             const std::vector<std::vector<std::int64_t>>& /*logical_input_dims*/) {
  auto program = std::make_shared<const spec::Program>(library.instantiate(op, attrs, input_dims));
  Kernel<T> k;
  k.forward = [program](const OpCall<T>& call) {
    const auto inputs = to_double(call.inputs);
    return from_double<T>(spec::evaluate<spec::RealDomain>(*program, pointers(inputs)));
  };
  k.backward = [program](const GradCall<T>& g) {
    const auto inputs = to_double(g.call.inputs);
    const auto grads = to_double(g.output_grads);
    return from_double<T>(spec::evaluate_gradient(*program, pointers(inputs), pointers(grads)));
  };
  return k;
}

template Kernel<float> interpreter_kernel<float>(const spec::Library&, const std::string&, const pcg::AttrMap&,
                                                 const std::vector<std::vector<std::int64_t>>&,
                                                 const std::vector<std::vector<std::int64_t>>&);
template Kernel<double> interpreter_kernel<double>(const spec::Library&, const std::string&, const pcg::AttrMap&,
                                                   const std::vector<std::vector<std::int64_t>>&,
                                                   const std::vector<std::vector<std::int64_t>>&);

}  // namespace loom::runtime
