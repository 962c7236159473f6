#include "loom/search/coshard.hpp"

#include "loom/search/parallel_config.hpp"

namespace loom::search {
namespace {

// "input 0 dim 1 / 4" -> "input 0 dim 1 / ": what a finer cut along the same dimension starts with.
std::string split_dimension(const std::string& split) { return split.substr(0, split.rfind('/') + 1) + " "; }

}  // namespace

std::vector<Placement> coshard_placements(const spec::Library& library, const pcg::Graph& graph, const std::vector<Placement>& placements,
                                          int pieces_per_device, std::size_t* coshards) {
  std::vector<Placement> out = placements;
  std::size_t cut = 0;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input() || n.id.index() >= placements.size()) continue;
    const Placement& p = placements[n.id.index()];
    const std::int64_t tasks = p.config.tasks();
    const std::vector<int> devices = p.view().devices;
    if (static_cast<std::int64_t>(devices.size()) != tasks) continue;
    const std::int64_t finer = tasks * pieces_per_device;
    for (const ParallelConfig& c : node_configs(library, graph, n, {finer})) {
      if (c.split.empty() || c.tasks() != finer) continue;
      if (!p.config.split.empty() && c.split.rfind(split_dimension(p.config.split), 0) != 0) continue;
      Placement co{c, 0, {}};
      for (std::int64_t t = 0; t < finer; ++t) co.devices.push_back(devices[static_cast<std::size_t>(t / pieces_per_device)]);
      out[n.id.index()] = std::move(co);
      ++cut;
      break;
    }
  }
  if (coshards) *coshards = cut;
  return out;
}

}  // namespace loom::search
