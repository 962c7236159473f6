#pragma once
// The library's parallel forms that a move between two parallel shapes is built from, found by
// what each does to the degrees (specs/ops/parallel.loom), so that C++ names none of them.
#include <optional>
#include <string>

#include "loom/interpreter/library.hpp"

namespace loom::search {

// A parallel form with a single degree update, and the attributes that give its dimension (for
// updates of D) and its degree.
struct LayoutForm {
  std::string op;
  std::string dim_attr;
  std::string degree_attr;
};

// A fused form that moves a split from one dimension to another: split<to>(join<from>(x)).
struct SwapForm {
  std::string op;
  std::string from_attr, to_attr, degree_attr;
};

struct ReshardForms {
  LayoutForm sum;    // V /= degree: adds up partial sums
  LayoutForm join;   // D[dim] /= degree: puts pieces of a dimension together
  LayoutForm copy;   // R *= degree: makes copies
  LayoutForm split;  // D[dim] *= degree: cuts a dimension into pieces
  std::optional<SwapForm> swap;
};

// The first form of each kind in the library's order. Throws LoomError naming the degree update
// no form of the library makes.
ReshardForms reshard_forms(const spec::Library& library);

}  // namespace loom::search
