#pragma once
// Which GPU each process of a run takes, and whether NCCL can move the processes' values: NCCL
// needs a GPU of its own per process, so processes that share one move their values through MPI
// instead, staged in host memory.
#include <string>
#include <vector>

namespace loom::runtime {

struct GpuPlacement {
  int device = 0;  // among the GPUs this process sees
  bool nccl = true;
  std::string why_not_nccl;   // empty when nccl
  bool first_on_node = true;  // the process that speaks for its node
};

// This process's placement from the GPUs the processes on its node take: `gpus_on_node[i]` names
// the physical GPU (e.g. its PCI bus id) that local process i takes, whatever numbering each
// process sees (CUDA_VISIBLE_DEVICES may give each its own), and `local_rank` is this process's
// index there; `device` is the GPU it takes among those it sees. NCCL is used when no two
// processes take the same GPU. Throws LoomError for an empty list or a rank outside it.
GpuPlacement place_on_gpus(const std::vector<std::string>& gpus_on_node, int local_rank, int device);

}  // namespace loom::runtime
