#pragma once
// The machine mapping's choices for one node: its splits (from the spec, through node_configs)
// with what one task of each costs in time and memory, computed once per kind of node and shared
// by every graph the mapper sees.
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "interner.hpp"
#include "loom/search/machine_mapping.hpp"
#include "mapping_costs.hpp"

namespace loom::search::mapping {

inline constexpr double kNoPlan = std::numeric_limits<double>::infinity();

// A block of devices: first, first + 1, ..., first + count - 1.
struct Resource {
  int first = 0;
  int count = 0;
};

// One of a node's splits (an index into its ConfigInfo list) on devices from `first`; config -1
// when the node is not decided.
struct Choice {
  int config = -1;
  int first = 0;
};

struct ConfigInfo {
  ParallelConfig config;
  double seconds = 0;                // forward and backward of one task
  double backward_seconds = 0;       // the backward alone
  double memory = 0;                 // bytes one task touches: its inputs, outputs and weights' state
  double kept = 0;                   // bytes one task adds to its device: its outputs and weights' state
  int content = 0;                   // the id of the split's shapes
  std::vector<int> inputs, outputs;  // ShapeTable ids of config.inputs and config.outputs
};

// What a node's splits and their costs depend on: its operator, attributes, input shapes, which
// inputs are weights and take gradients, and whether its backward ends the pass (its weights' sums
// are then waited in: nodes alike but for that are not alike to the mapping's memo).
struct NodeSignature {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<pcg::ParallelShape> inputs;
  std::vector<bool> weights;
  std::vector<bool> gradients;  // per input, whether it takes one (inputs_taking_gradients)
  bool ends_backward = false;

  static NodeSignature of(const pcg::Graph& graph, const pcg::Node& node, const CostModel& model);
  bool operator==(const NodeSignature&) const = default;
};

struct NodeSignatureHash {
  std::size_t operator()(const NodeSignature& s) const;
};

// A split's shapes, in and out: what a neighbour's cost depends on.
struct SplitShapes {
  std::vector<pcg::ParallelShape> inputs, outputs;
  bool operator==(const SplitShapes&) const = default;
};

struct SplitShapesHash {
  std::size_t operator()(const SplitShapes& s) const;
};

class ConfigTable {
 public:
  ConfigTable(const spec::Library& library, const CostModel& model, const MappingOptions& options, ShapeTable& shapes)
      : library_(library), model_(model), options_(options), shapes_(shapes) {}

  // What nodes of one signature share: an id, and their splits, the unsplit one first.
  struct Kind {
    int id = 0;
    std::vector<ConfigInfo> configs;
    bool takes_gradients = false;  // some input takes a gradient: the node runs a backward
  };
  const Kind& kind_of(const pcg::Graph& graph, const pcg::Node& node, bool ends_backward = false);

 private:
  const spec::Library& library_;
  const CostModel& model_;
  const MappingOptions& options_;
  ShapeTable& shapes_;
  std::unordered_map<NodeSignature, Kind, NodeSignatureHash> by_signature_;
  Interner<SplitShapes, SplitShapesHash> splits_;
};

}  // namespace loom::search::mapping
