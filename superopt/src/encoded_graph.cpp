#include "loom/superopt/encoded_graph.hpp"

#include <algorithm>
#include <functional>

namespace loom::superopt {

Key128 input_key(std::size_t input) { return Key128{}.add(0x1A9D7ULL).add(input); }

Key128 port_key(const Key128& node, std::size_t port) { return Key128{}.add(node).add(port); }

std::vector<Key128> node_keys(const GraphView& view, const std::vector<std::size_t>* renaming) {
  std::vector<Key128> keys;
  keys.reserve(view.steps.size());
  for (const Step& s : view.steps) {
    Key128 k;
    k.add(0x5EEDULL).add(s.inst);
    for (std::size_t i = 0; i < s.argc; ++i) {
      const TensorRef a = s.args[i];
      if (is_input_ref(a))
        k.add(input_key(renaming ? (*renaming)[input_of(a)] : input_of(a)));
      else
        k.add(port_key(keys[node_of(a)], port_of(a)));
    }
    keys.push_back(k);
  }
  return keys;
}

Key128 view_key(const GraphView& view, const std::vector<std::size_t>* renaming) {
  const auto keys = node_keys(view, renaming);
  auto key_of = [&](TensorRef r) {
    return is_input_ref(r) ? input_key(renaming ? (*renaming)[input_of(r)] : input_of(r)) : port_key(keys[node_of(r)], port_of(r));
  };
  if (!view.has_two_outputs()) return key_of(view.output);
  return Key128{}.add(0x7A1ED0ULL).add(key_of(view.output)).add(key_of(view.second));
}

GraphView canonical_order(const GraphView& view) {
  GraphView out;
  std::vector<int> placed(view.steps.size(), -1);
  std::function<TensorRef(TensorRef)> visit = [&](TensorRef r) -> TensorRef {
    if (is_input_ref(r)) return r;
    const std::size_t n = node_of(r);
    if (placed[n] < 0) {
      Step s = view.steps[n];
      for (std::size_t i = 0; i < s.argc; ++i) s.args[i] = visit(s.args[i]);
      placed[n] = static_cast<int>(out.steps.size());
      out.steps.push_back(s);
    }
    return node_ref(static_cast<std::size_t>(placed[n]), port_of(r));
  };
  out.output = visit(view.output);
  if (view.has_two_outputs()) out.second = visit(view.second);
  return out;
}

std::vector<std::size_t> used_inputs(const GraphView& view) {
  std::vector<std::size_t> used;
  for (TensorRef r : view.outputs())
    if (is_input_ref(r)) used.push_back(input_of(r));
  for (const Step& s : view.steps)
    for (std::size_t i = 0; i < s.argc; ++i)
      if (is_input_ref(s.args[i])) used.push_back(input_of(s.args[i]));
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

}  // namespace loom::superopt
