#include "loom/runtime/kernel.hpp"

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {

template <class T, class Held>
std::int64_t OpCall<T, Held>::attr(const std::string& name) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) throw LoomError(op + ": attribute '" + name + "' is not given");
  return it->second;
}

template <class T, class Held>
const std::vector<std::int64_t>& OpCall<T, Held>::output_shape(std::size_t i) const {
  if (i >= output_dims.size())
    throw LoomError(op + ": the call gives no dims for output " + std::to_string(i) + " (OpCall::output_dims is filled from the spec)");
  return output_dims[i];
}

template struct OpCall<float>;
template struct OpCall<double>;
template struct OpCall<float, Value<float>>;
template struct OpCall<double, Value<double>>;

}  // namespace loom::runtime
