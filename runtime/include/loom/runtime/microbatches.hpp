#pragma once
// What a pipelined plan's training step needs beyond a plain one: the batch cut into micro-batches,
// and the order in which a process runs their passes.
#include <cstdint>
#include <utility>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/search/pipeline_order.hpp"
#include "loom/search/plan.hpp"

namespace loom::runtime {

// Rows [part * n / parts, (part + 1) * n / parts) of `t` along its first dimension of n. Throws
// LoomError when t has no dimension or `parts` does not divide n.
template <class T>
Tensor<T> batch_rows(const Tensor<T>& t, int part, int parts);

// The steps (search::PipelineStep) process `rank` of `processes` runs, in order. Each process of a
// distributed run takes the order of its device's stage; every process runs the first stage's order
// in one process, with `one_order`, or where the plan runs in one order (search::runs_in_one_order
// with `takes_gradient`, per node: a node's pieces lie in several stages, or a lap before the last
// trains). `devices`: the plan's. Throws LoomError when a distributed run's stages do not divide
// the devices.
std::vector<search::PipelineStep> process_passes(const pcg::Graph& graph, const search::Pipeline& pipeline, int rank, int processes,
                                                 int devices, bool one_order = false, const std::vector<bool>& takes_gradient = {});

}  // namespace loom::runtime
