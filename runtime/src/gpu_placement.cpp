#include "loom/runtime/gpu_placement.hpp"

#include <set>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {

GpuPlacement place_on_gpus(const std::vector<std::string>& gpus_on_node, int local_rank, int device) {
  if (gpus_on_node.empty() || local_rank < 0 || static_cast<std::size_t>(local_rank) >= gpus_on_node.size())
    throw LoomError("process " + std::to_string(local_rank) + " of " + std::to_string(gpus_on_node.size()) +
                    " on this node: the numbering is out of range");
  GpuPlacement p;
  p.device = device;
  p.first_on_node = local_rank == 0;
  const std::set<std::string> distinct(gpus_on_node.begin(), gpus_on_node.end());
  if (distinct.size() < gpus_on_node.size()) {
    p.nccl = false;
    p.why_not_nccl = std::to_string(gpus_on_node.size()) + " processes share " + std::to_string(distinct.size()) + " GPU" +
                     (distinct.size() == 1 ? "" : "s") + " on this node, and NCCL needs a GPU of its own per process";
  }
  return p;
}

}  // namespace loom::runtime
