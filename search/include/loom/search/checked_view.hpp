#pragma once
// A node's devices on a machine, refused by name where they are not the machine's.
#include <string>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/search/machine.hpp"

namespace loom::search {

// The node's machine view (device 0 onwards when it has none); throws LoomError naming the node
// when it uses a device the machine lacks.
inline pcg::MachineView checked_view(const pcg::Node& n, const Machine& machine) {
  pcg::MachineView view = n.view_or_default();
  for (int d : view.devices)
    if (d < 0 || d >= machine.devices())
      throw LoomError(n.describe() + ": its machine view uses device " + std::to_string(d) + ", but " + machine.name + " has " +
                      std::to_string(machine.devices()) + " devices");
  return view;
}

}  // namespace loom::search
