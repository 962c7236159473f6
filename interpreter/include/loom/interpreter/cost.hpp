#pragma once
#include <vector>

#include "loom/interpreter/program.hpp"
#include "loom/pcg/op_catalog.hpp"

namespace loom::spec {

// Arithmetic operations of the whole instance, counted from its comprehension (every +, -, *,
// /, comparison, function and reduction step; reads and constants are free). A reduction that
// does not depend on some of the result's indices counts once for the points that share it, as a
// kernel computes softmax's row sum once per row.
double total_flops(const Program& program);

// Arithmetic of the instance's derived gradient (evaluate_gradient, as a kernel runs it): twice the
// forward's for each operation, a contraction's two gradient products (and the product again where
// the gradient reads its value, as GLU's gated product does), and every `let` computed again; a
// function of one value at a statement's root takes its derivative from the kept output, as
// hand-written kernels do. A matrix product's gradient is twice its forward, a fused matmul-ReLU's
// too; GLU's, three times. `wanted`, per input, whether its gradient is computed (empty: every
// input's): no gradient flows into a part of the comprehension that reads only inputs taking none,
// so a product of a first layer's data and its weights computes one gradient product, not two.
double gradient_flops(const Program& program, const std::vector<bool>& wanted = {});

// The loop shape of the statement doing the most arithmetic (pcg::KernelShape): a sum of a
// product of two different reads is a contraction, a convolution where a read slides a window (an
// index computed from both a summed index and an index of the result); any other sum, max or min
// a reduction; no reduction, elementwise, or transcendental where it calls exp, log, tanh, sigmoid,
// erf or pow.
pcg::KernelShape kernel_shape(const Program& program);

// Work per task when the instance runs on these parallel shapes: flops (forward, and its gradient's)
// split evenly over the pieces of the output, bytes of the shards each task reads and writes (4-byte elements), the
// program's kernel shape (Program::shape, which compile() sets) and, for a convolution, the elements
// of the task's windows unfolded into a matrix (pcg::TaskCost::unfolded_elements): the values its
// window read's indices take together, an index that appears only divided by a constant (a grouped
// convolution's group) counted as the values of the quotient. A task split along the batch or the
// image unfolds its part; one split along the filters unfolds every window.
pcg::TaskCost task_cost(const Program& program, const std::vector<pcg::ParallelShape>& inputs,
                        const std::vector<pcg::ParallelShape>& outputs);

}  // namespace loom::spec
