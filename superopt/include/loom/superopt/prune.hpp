#pragma once
// Candidate substitutions from fingerprint buckets, and TASO's pruning of redundant ones:
//  0. unused computation: a pair with a side holding an operator whose values never reach the
//     output (e.g. the discarded half of a split) is an instance of a smaller pair;
//  1. input renaming: of the pairs that are the same up to swapping inputs of identical shape,
//     only one is kept;
//  2. common subgraph: a pair whose sides contain the same operator on the same tensors (at the
//     inputs), or end in the same operator applied to equivalent tensors (at the output), follows
//     from a smaller substitution; so does a pair of graphs with two outputs that is not a merge
//     (one side computing its outputs apart, each last by the same operator instance, the other
//     sharing computation between them with fewer applications of that instance);
//  3. optionally, implied pairs: a pair with an inner tensor computed by a larger graph than the
//     smallest enumerated one of its fingerprint (or an equally small one with a greater key)
//     follows from the pair that substitutes it; and within a bucket, processing pairs from the
//     smallest, a pair whose sides are already connected through kept pairs follows from them by
//     transitivity. A merge whose side computing its outputs apart has an output that a smaller
//     graph computes follows from that output's rule.
#include <cstddef>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/superopt/enumerate.hpp"
#include "loom/superopt/op_set.hpp"
#include "loom/superopt/options.hpp"
#include "loom/superopt/progress.hpp"

namespace loom::superopt {

struct PruneStats {
  std::size_t buckets = 0;     // fingerprints shared by two or more graphs
  std::size_t candidates = 0;  // pairs of graphs with equal fingerprints
  std::size_t removed_unused = 0;
  std::size_t removed_renaming = 0;
  std::size_t removed_common_subgraph = 0;
  std::size_t removed_implied = 0;
  std::size_t kept = 0;
};

// Two views of the enumeration with equal fingerprints; `lhs` is the side a rule rewrites.
struct CandidatePair {
  std::size_t lhs = 0;
  std::size_t rhs = 0;
};

// Which side of an equivalence a rule rewrites: the smaller graph (fewer operators, then fewer
// parallel forms), except that a bare input is never a left-hand side.
bool rewrites_from(const GraphView& a, const GraphView& b, const OpSet& ops);

// The input renamings that map each input to one of identical shape (the identity first).
std::vector<std::vector<std::size_t>> input_renamings(const std::vector<InputTensor>& inputs);

std::vector<CandidatePair> prune_candidates(const spec::Library& library, const OpSet& ops, const std::vector<InputTensor>& inputs,
                                            const Enumeration& enumeration, const GeneratorOptions& options, PruneStats& stats,
                                            const ProgressFn& progress = {});

}  // namespace loom::superopt
