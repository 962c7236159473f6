#pragma once
// What the substitution generator enumerates and how it checks and reports what it finds.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/pcg/parallel_shape.hpp"

namespace loom::superopt {

// A graph input of the enumeration: a named variable with a concrete example shape and degrees.
struct InputTensor {
  std::string name;
  pcg::ParallelShape shape;
};

struct GeneratorOptions {
  std::vector<std::string> ops;       // compute ops of the spec library
  std::vector<std::string> parallel;  // parallel and fused forms of the spec library
  int max_ops = 3;                    // operators per graph (per side of a rule)
  // Values of every attribute called `degree` (the parallel forms' degree); also the degree the
  // default inputs carry.
  std::vector<std::int64_t> degrees = {2};
  // Values of other attributes by name (e.g. stride_h = {1}), intersected with each form's
  // declared domain; attributes not listed take their declared domain.
  std::map<std::string, std::vector<std::int64_t>> attr_domains;
  std::vector<InputTensor> inputs;  // empty: default_inputs(degrees.front())
  // Values tried for attributes declared without a domain (e.g. split's position); empty: the
  // inputs' dimension sizes. Such attributes are written symbolically in rule text.
  std::vector<std::int64_t> free_attr_values;
  int fingerprint_bits = 64;  // fewer bits force collisions (for testing the numeric check)
  int jobs = 1;
  std::uint64_t seed = 1;      // fixed random input values of the fingerprint, and check values
  bool prune_implied = false;  // drop pairs already connected through smaller accepted rules
  // Also enumerate graphs with two outputs (two sinks, or the two outputs of one operator), so
  // that rules with two outputs, such as merges of operators reading one input, come out.
  bool two_outputs = false;
  int check_instances = 4;         // random instances of each double-precision check
  std::int64_t check_max_dim = 8;  // largest dimension drawn for the shape-generic check
  std::string id_prefix = "g";
};

// The default graph inputs for parallel degree d: x, y, u: [2d, 3d]; w, v: [3d, 5d]; z: [2d, 3d] as
// d partial sums (so `reduce` applies); t: [2d, 3d] split d ways along dimension 1 (so `combine`
// applies).
std::vector<InputTensor> default_inputs(std::int64_t degree);

// Parses inputs written as spec-language binders, e.g. `x: [4, 6], z: [4, 6] {V: 2}`. Sizes and
// degrees must be integer literals. Throws LoomError naming `origin`, line and column.
std::vector<InputTensor> parse_inputs(const std::string& text, const std::string& origin = "--inputs");

}  // namespace loom::superopt
