#include <set>

#include "loom/interpreter/int_eval.hpp"
#include "loom/interpreter/parser.hpp"
#include "loom/superopt/options.hpp"

namespace loom::superopt {

std::vector<InputTensor> default_inputs(std::int64_t degree) {
  const std::int64_t m = 2 * degree, n = 3 * degree, k = 5 * degree;
  auto plain = [](std::vector<std::int64_t> dims) { return pcg::ParallelShape::unpartitioned(std::move(dims)); };
  pcg::ParallelShape partial = plain({m, n});
  partial.V = degree;
  pcg::ParallelShape split_cols = plain({m, n});
  split_cols.D = {1, degree};
  // Three activations and two weights, as TASO's generator takes them: laws of three variables
  // (distributivity, associativity) and merges of two weights need that many.
  return {{"x", plain({m, n})}, {"y", plain({m, n})}, {"u", plain({m, n})}, {"w", plain({n, k})},
          {"v", plain({n, k})}, {"z", partial},       {"t", split_cols}};
}

namespace {

// The user's text sits on line 2 of the wrapper, so its diagnostics move up one line.
LoomError relocated(const LoomError& e, const std::string& origin) {
  std::vector<Diagnostic> out;
  for (Diagnostic d : e.diagnostics()) {
    if (d.where.line == 2) {
      d.where = {origin, 1, d.where.column};
    } else {
      d.where = {origin, 0, 0};
    }
    out.push_back(std::move(d));
  }
  if (out.empty()) out.push_back({{origin, 0, 0}, e.what()});
  return LoomError(std::move(out));
}

}  // namespace

std::vector<InputTensor> parse_inputs(const std::string& text, const std::string& origin) {
  if (text.find('\n') != std::string::npos) throw LoomError({{{origin, 0, 0}, "write the inputs on one line"}});
  spec::Module module;
  try {
    module = spec::parse_module("rule inputs: forall\n" + text + "\n. inputs => inputs;", origin);
  } catch (const LoomError& e) {
    throw relocated(e, origin);
  }
  const auto& quantifier = module.rules.at(0).quantifier;
  std::vector<InputTensor> inputs;
  std::set<std::string> names;
  const spec::IntScope no_names;
  try {
    if (quantifier.where) throw LoomError({{quantifier.where->loc, "inputs take no where-condition"}});
    for (const auto& b : quantifier.binders) {
      if (b.is_int || !b.shape) throw LoomError({{b.loc, "give input '" + b.name + "' a shape, e.g. " + b.name + ": [4, 6]"}});
      if (!names.insert(b.name).second) throw LoomError({{b.loc, "input '" + b.name + "' is declared twice"}});
      std::vector<std::int64_t> dims;
      for (const auto& d : b.shape->dims) {
        if (d.is_pack()) throw LoomError({{b.loc, "input '" + b.name + "': sizes must be integers, not a pack"}});
        dims.push_back(spec::eval_int(*d.expr, no_names));
      }
      pcg::ParallelShape shape = pcg::ParallelShape::unpartitioned(dims);
      auto fill = [&](const std::vector<spec::ExprPtr>& list, std::vector<std::int64_t>& target, const char* what) {
        if (list.empty()) return;
        if (list.size() != dims.size())
          throw LoomError({{b.loc, "input '" + b.name + "': " + what + " lists " + std::to_string(list.size()) + " degrees for rank " +
                                       std::to_string(dims.size())}});
        for (std::size_t i = 0; i < list.size(); ++i) target[i] = spec::eval_int(*list[i], no_names);
      };
      fill(b.degrees.D, shape.D, "D");
      fill(b.degrees.P, shape.P, "P");
      if (b.degrees.V) shape.V = spec::eval_int(*b.degrees.V, no_names);
      if (b.degrees.R) shape.R = spec::eval_int(*b.degrees.R, no_names);
      try {
        shape.validate();
      } catch (const LoomError& e) {
        throw LoomError({{b.loc, "input '" + b.name + "': " + e.what()}});
      }
      inputs.push_back({b.name, std::move(shape)});
    }
  } catch (const LoomError& e) {
    throw relocated(e, origin);
  }
  if (inputs.empty()) throw LoomError({{{origin, 0, 0}, "no inputs given"}});
  return inputs;
}

}  // namespace loom::superopt
