#pragma once
// Helpers of the generator tests: the bundled library, small generator runs, rule lookup by
// equation text, scratch directories, and an evaluator of rule graphs written for the tests
// (each op through the interpreter's compiled comprehension, every parallel or fused form the
// identity on values) that compares both sides of a rule in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/superopt/generator.hpp"

namespace loom::superopt::test {

inline const spec::Library& bundled() {
  static spec::Library lib = spec::Library::load({spec::Library::default_specs_dir()});
  return lib;
}

inline GeneratorOptions small_run(std::vector<std::string> ops, std::vector<std::string> parallel, int max_ops, const std::string& inputs) {
  GeneratorOptions o;
  o.ops = std::move(ops);
  o.parallel = std::move(parallel);
  o.max_ops = max_ops;
  o.inputs = parse_inputs(inputs);
  o.jobs = 2;
  return o;
}

// "LHS => RHS" of a rule's text, without its name and quantifier.
inline std::string equation(const pcg::Rule& rule) {
  std::string text = rule.text;
  std::size_t start = text.find(": ") + 2;
  if (text.compare(start, 7, "forall ") == 0) start = text.find(". ", start) + 2;
  return text.substr(start, text.size() - start - 1);
}

// The rule equating the two terms, in either direction, or null.
inline const pcg::Rule* find_rule(const pcg::RuleLibrary& rules, const std::string& a, const std::string& b) {
  for (const auto& r : rules.rules) {
    const std::string e = equation(r);
    if (e == a + " => " + b || e == b + " => " + a) return &r;
  }
  return nullptr;
}

inline std::string list_rules(const pcg::RuleLibrary& rules, std::size_t limit = 60) {
  std::string out;
  for (std::size_t i = 0; i < rules.rules.size() && i < limit; ++i) out += rules.rules[i].text + "\n";
  return out;
}

inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("loom_superopt_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

struct GraphValue {
  pcg::ParallelShape shape;
  spec::Tensor<double> value;
};

// Output `output` of a rule graph on the given input values.
inline GraphValue evaluate_graph(const spec::Library& library, const pcg::Graph& graph,
                                 const std::map<std::string, spec::Tensor<double>>& inputs, std::size_t output = 0) {
  std::vector<std::vector<spec::Tensor<double>>> values(graph.size());
  for (const pcg::Node& n : graph.nodes()) {
    auto& out = values[n.id.index()];
    if (n.is_graph_input()) {
      out.push_back(inputs.at(n.name));
      continue;
    }
    std::vector<const spec::Tensor<double>*> args;
    std::vector<std::vector<std::int64_t>> dims;
    for (const auto& p : n.inputs) {
      args.push_back(&values[p.node.index()][static_cast<std::size_t>(p.port)]);
      dims.push_back(args.back()->dims);
    }
    if (library.find_op(n.op))
      out = spec::evaluate<spec::RealDomain>(library.instantiate(n.op, n.attrs, dims), args);
    else
      out.push_back(*args.at(0));
  }
  const pcg::PortRef o = graph.outputs().at(output);
  return {graph.shape_of(o), values[o.node.index()][static_cast<std::size_t>(o.port)]};
}

// Empty when both sides of the rule agree in shape and value on random inputs; else why not.
inline std::string disagreement(const spec::Library& library, const pcg::Rule& rule, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::map<std::string, spec::Tensor<double>> inputs;
  for (const pcg::Node& n : rule.lhs.nodes()) {
    if (!n.is_graph_input()) continue;
    spec::Tensor<double> t(n.output_shapes.at(0).dims);
    for (auto& v : t.data) v = uniform(rng);
    inputs[n.name] = t;
  }
  if (rule.lhs.outputs().size() != rule.rhs.outputs().size()) return rule.text + ": the sides have different numbers of outputs";
  for (std::size_t o = 0; o < rule.lhs.outputs().size(); ++o) {
    const GraphValue l = evaluate_graph(library, rule.lhs, inputs, o), r = evaluate_graph(library, rule.rhs, inputs, o);
    const std::string which = "output " + std::to_string(o) + ": ";
    if (l.shape != r.shape) return rule.text + ": " + which + "shapes " + l.shape.to_string() + " vs " + r.shape.to_string();
    for (std::size_t i = 0; i < l.value.data.size(); ++i) {
      const double a = l.value.data[i], b = r.value.data[i];
      if (std::fabs(a - b) > 1e-9 * (1 + std::fabs(a) + std::fabs(b)))
        return rule.text + ": " + which + "element " + std::to_string(i) + " differs: " + std::to_string(a) + " vs " + std::to_string(b);
    }
  }
  return "";
}

}  // namespace loom::superopt::test
