#pragma once
// Which GPU each process of a run takes, and whether NCCL can move the processes' values: NCCL
// needs a device of its own per process, so processes that share a GPU move their values through
// MPI instead, staged in host memory.
#include <string>

namespace loom::runtime {

// The processes on this node, as the MPI launcher numbers them, and the GPUs they see.
struct NodeRanks {
  int local_rank = 0;
  int local_ranks = 1;
  int devices = 1;
};

struct GpuPlacement {
  int device = 0;  // local_rank modulo the devices
  bool nccl = true;
  std::string why_not_nccl;  // empty when nccl
};

// Throws LoomError when there are no devices or the numbering is out of range.
GpuPlacement place_on_gpus(const NodeRanks& node);

// This process's place among the node's processes from the launcher's variables (OpenMPI's
// OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE, or MPICH's MPI_LOCALRANKID / MPI_LOCALNRANKS); the only
// process when none is set. `devices` is taken as given.
NodeRanks node_ranks_from_environment(int devices);

}  // namespace loom::runtime
