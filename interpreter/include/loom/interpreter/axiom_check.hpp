#pragma once
// Numeric soundness check of axioms: each axiom is evaluated on random instances (sizes that
// satisfy its side conditions, random values); an axiom whose two sides differ in value or in
// parallel shape is reported with the concrete instance that breaks it.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"

namespace loom::spec {

struct AxiomCheckOptions {
  int instances = 4;  // well-typed instances per axiom
  std::uint64_t seed = 1;
  std::int64_t max_dim = 5;  // dimension symbols are drawn from 1..max_dim
  int max_tries = 400;       // samples drawn to find the instances
  // Elements a variable may hold: a binder written with larger literal sizes is not drawn (the
  // check says so) rather than allocated.
  std::int64_t max_elements = std::int64_t{1} << 22;
};

struct AxiomResult {
  const EquationDecl* axiom = nullptr;
  int instances = 0;  // instances evaluated
  bool sound = false;
  std::string problem;  // why not sound: the instance and what differs
};

AxiomResult check_axiom(const Library& library, const EquationDecl& axiom, const AxiomCheckOptions& options = {});

}  // namespace loom::spec
