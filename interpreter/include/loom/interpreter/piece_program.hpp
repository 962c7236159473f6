#pragma once
// An operator run on one piece of split values. A program compiled for the pieces' dimensions
// computes the piece of the logical result as long as its body only addresses elements with
// indices; a body that reads a dimension's size (`/ sqrt(d)`) or an index's value (`c <= r`,
// `ids[i] == r`, `x[i + k]`) would see piece sizes and piece-local positions instead, and pieces
// need not even satisfy the op's shape equations (rows of square scores). `place_piece` derives
// the piece program from the logical one instead.
#include <vector>

#include "loom/interpreter/program.hpp"
#include "loom/pcg/piece_moves.hpp"

namespace loom::spec {

// Whether some body reads a dimension symbol's size or an index's value other than as the bare
// index of a read.
bool reads_sizes_or_positions(const Program& program);

// Where the pieces lie: for every input and output, the box of its logical value the piece covers
// (a partial-sum piece covers its whole box). A missing box: the value is whole.
struct PiecePlacement {
  std::vector<pcg::Region> inputs, outputs;
};

// `logical` (compiled for the logical dimensions) restricted to the pieces at `where`: inputs and
// outputs take the pieces' shapes, every index ranges over its piece's part and reads as its
// logical position wherever its value is used, and dimension symbols keep their logical sizes.
// Evaluated or differentiated on the input pieces, it gives the output pieces of the logical
// operator; a sum over an index the pieces split covers their part only (a partial sum). An index
// takes its part from the output box it ranges over, else from the first read that addresses a
// placed value with it bare, else it ranges over all of its logical extent.
Program place_piece(const Program& logical, const PiecePlacement& where);

}  // namespace loom::spec
