#pragma once
// Which input element each element of a value is a copy of, for values that only rearrange their
// inputs. An operator qualifies when its one statement picks an input element by conditions on
// indices alone (reads and selects: concatenations, transposes); which element, and that each is
// taken once, comes from walking its body at every point of its output, the conditions evaluated
// as evaluation does and the reads' positions taken, with no value computed. A recipe of several
// operators is evaluated on inputs numbered 1, 2, ... across all of them (exact in doubles). The
// spec alone decides it.
#include <cstdint>
#include <optional>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/program.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::spec {

// For each element of the instance's one output, the position of the input element it copies, the
// inputs' elements counted one input after another; nothing unless the output holds every input
// element exactly once and nothing else.
std::optional<std::vector<std::int64_t>> element_sources(const Program& program, const std::vector<std::vector<std::int64_t>>& input_dims);

// Whether element_sources has a value, with no more memory than a bit per element: what the
// rewrite engine asks of every operator a merge inserts, at the weights' own sizes.
bool moves_each_element_once(const Program& program, const std::vector<std::vector<std::int64_t>>& input_dims);

// The same for a folded weight's recipe (pcg::FoldRecipe), its weights taken in graph order: each
// of its operators must qualify.
std::optional<std::vector<std::int64_t>> element_sources(const Library& library, const pcg::Graph& recipe);

}  // namespace loom::spec
