#include "loom/runtime/gpu_placement.hpp"

#include <cstdlib>
#include <optional>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {
namespace {

std::optional<int> number_variable(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1 << 20) throw LoomError(std::string(name) + "='" + text + "' is not a process number");
  return static_cast<int>(value);
}

// The first of two launchers' variables that is set.
std::optional<int> either_variable(const char* openmpi, const char* mpich) {
  if (const std::optional<int> value = number_variable(openmpi)) return value;
  return number_variable(mpich);
}

}  // namespace

GpuPlacement place_on_gpus(const NodeRanks& node) {
  if (node.devices < 1) throw LoomError("no GPU is visible to this process");
  if (node.local_ranks < 1 || node.local_rank < 0 || node.local_rank >= node.local_ranks)
    throw LoomError("process " + std::to_string(node.local_rank) + " of " + std::to_string(node.local_ranks) +
                    " on this node: the launcher's numbering is out of range");
  GpuPlacement p;
  p.device = node.local_rank % node.devices;
  if (node.local_ranks > node.devices) {
    p.nccl = false;
    p.why_not_nccl = std::to_string(node.local_ranks) + " processes share " + std::to_string(node.devices) + " GPU" +
                     (node.devices == 1 ? "" : "s") + " on this node, and NCCL needs a GPU of its own per process";
  }
  return p;
}

NodeRanks node_ranks_from_environment(int devices) {
  NodeRanks node;
  node.devices = devices;
  if (const std::optional<int> rank = either_variable("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")) node.local_rank = *rank;
  if (const std::optional<int> ranks = either_variable("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")) node.local_ranks = *ranks;
  return node;
}

}  // namespace loom::runtime
