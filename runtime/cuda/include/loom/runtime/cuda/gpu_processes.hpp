#pragma once
// The placement of this process of an MPI run on the node's GPUs, agreed by every process: each
// takes the GPU of its rank on the node modulo the GPUs it sees, the processes of each node compare
// the physical GPUs they took (PCI bus ids), and NCCL is used only if no two processes of any node
// share one, so that every process makes the same transport.
#include "loom/runtime/gpu_placement.hpp"

namespace loom::runtime {

// A collective every process calls once MPI is running. Throws CudaError when this process sees no
// GPU, naming why.
GpuPlacement place_processes_on_gpus();

}  // namespace loom::runtime
