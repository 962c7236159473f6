#pragma once
// What an operator's spec says of the values of its inputs, for those who make them (initial
// weights, test values, the baselines): the notes written on an input (docs/language.md, "Input
// notes"), and a weight's fan-in, which its comprehension gives.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/interpreter/ast.hpp"
#include "loom/interpreter/library.hpp"

namespace loom::spec {

// The declaration of input `slot` of operator `op`, or null (no such operator in `library`, or no
// such input).
const InputParam* declared_input(const Library& library, const std::string& op, std::size_t slot);

// The position among `op`'s inputs of the table that `declared`'s `@index(table)` note names
// (none without the note).
std::optional<std::size_t> indexed_table(const OpDecl& op, const InputParam& declared);

// Which of input `input`'s `rank` dimensions the operator's statements read at an index a sum
// binds (all false when there is no such input).
std::vector<bool> summed_dimensions(const OpDecl& op, std::size_t input, std::size_t rank);

// The product of the extents of input `input`'s dimensions (`dims`, its shape at a use) that the
// operator's statements read at an index a sum binds: the fan-in of a weight (a matrix's rows, a
// convolution kernel's channels times its window). 0 when the operator sums over none of them.
std::int64_t summed_extent(const OpDecl& op, std::size_t input, const std::vector<std::int64_t>& dims);

}  // namespace loom::spec
