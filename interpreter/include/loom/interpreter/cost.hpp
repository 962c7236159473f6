#pragma once
#include <vector>

#include "loom/interpreter/program.hpp"
#include "loom/pcg/op_catalog.hpp"

namespace loom::spec {

// Arithmetic operations of the whole instance, counted from its comprehension (every +, -, *,
// /, comparison, function and reduction step; reads and constants are free).
double total_flops(const Program& program);

// Work per task when the instance runs on these parallel shapes: flops split evenly over the
// pieces of the output, bytes of the shards each task reads and writes (4-byte elements).
pcg::TaskCost task_cost(const Program& program, const std::vector<pcg::ParallelShape>& inputs,
                        const std::vector<pcg::ParallelShape>& outputs);

}  // namespace loom::spec
