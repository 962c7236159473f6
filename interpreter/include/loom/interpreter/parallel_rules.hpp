#pragma once
// Which parallel shapes an operator accepts and what it produces, derived from its comprehension
// (DESIGN.md section 2): a free index may be split if it is read bare everywhere and split alike
// in every input; a summed index split in its inputs yields partial sums (V); V may enter only
// where every monomial of the body holds exactly one partial-sum factor; every input must spread
// over the same number of tasks.
#include <string>
#include <vector>

#include "loom/interpreter/ast.hpp"
#include "loom/interpreter/program.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::spec {

// Output parallel shapes of a compiled instance given its inputs' parallel shapes; throws
// LoomError saying why the combination is not legal.
std::vector<pcg::ParallelShape> derive_output_degrees(const Program& program, const std::vector<pcg::ParallelShape>& inputs);

// How one input dimension may be split, as a readable summary for `loom show`.
struct DimensionRole {
  std::string input;
  std::size_t dim = 0;
  std::string index;
  enum Kind { Free, Summed, Fixed } kind = Fixed;  // Free: output partitioned; Summed: output V
};

struct ParallelSummary {
  std::vector<DimensionRole> roles;
  std::vector<std::string> linear_inputs;  // inputs that may carry partial sums (V)
};

ParallelSummary summarize_parallelism(const Program& program);

// Input shapes that split dimension `dim` of input `input` `degree` ways, together with every
// other input dimension read by the same index; inputs that do not read it are replicated.
// Whether the op accepts them is for derive_output_degrees to say.
std::vector<pcg::ParallelShape> split_inputs(const Program& program, std::size_t input, std::size_t dim, std::int64_t degree);

// The index through which the comprehension reads each input dimension, by the name it is written
// with (the k-th dimension a pack `*i` covers reads as i<k>): per input, per dimension, "" where
// no bare index reads it. The first read of an input decides.
std::vector<std::vector<std::string>> input_index_names(const OpDecl& op, const std::vector<std::vector<std::int64_t>>& input_dims);

// Applies a parallel form's degree updates to one parallel shape.
pcg::ParallelShape apply_parallel_form(const ParallelDecl& form, const pcg::AttrMap& attrs, const pcg::ParallelShape& input);

}  // namespace loom::spec
