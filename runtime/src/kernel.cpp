#include "loom/runtime/kernel.hpp"

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {

template <class T>
std::int64_t OpCall<T>::attr(const std::string& name) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) throw LoomError(op + ": attribute '" + name + "' is not given");
  return it->second;
}

template struct OpCall<float>;
template struct OpCall<double>;

}  // namespace loom::runtime
