#pragma once
// What messages that run at once between nodes put through each network port (NetworkPorts): a
// port sends one message at a time and receives one at a time, so the messages sharing it take
// turns, as the simulator runs them. The move search's step prices and the mapping's gradient
// sums count them here.
#include <map>
#include <utility>
#include <vector>

#include "loom/search/machine.hpp"

namespace loom::search {

// The messages through one port in one direction, and the elements they carry.
struct PortLoad {
  int messages = 0;
  double elements = 0;

  bool operator<(const PortLoad& o) const { return std::pair(messages, elements) < std::pair(o.messages, o.elements); }
  bool operator==(const PortLoad&) const = default;
};

class PortLoads {
 public:
  explicit PortLoads(NetworkPorts ports) : ports_(ports) {}

  // A message of `elements` from device `from` to device `to`: through the sender's port out and
  // the receiver's port in where the two are on different nodes, else through no port.
  void add(int from, int to, double elements = 0);
  // The loads of the ports used, each once (no two alike).
  std::vector<PortLoad> distinct() const;
  // The most messages that one of the ports a message from `from` to `to` uses carries; 1 where
  // it stays on one node.
  int turns_on_way(int from, int to) const;

 private:
  NetworkPorts ports_;
  std::map<std::pair<int, bool>, PortLoad> loads_;  // by (port, sending)
};

// Rings that run at once, each its devices in ring order (a step from each to the next, the last
// to the first): per ring, how many ring steps take turns at the busiest port on its way (at least
// 1). Every step of a ring runs for the whole collective, so a ring that shares a port with k - 1
// other steps takes k times as long.
std::vector<int> ring_port_turns(const NetworkPorts& ports, const std::vector<std::vector<int>>& rings);

// An all-to-all among `devices`, each sending one block to each other: the most blocks that one
// network port sends or receives; 0 where the devices share a node.
int all_to_all_port_blocks(const NetworkPorts& ports, const std::vector<int>& devices);

}  // namespace loom::search
