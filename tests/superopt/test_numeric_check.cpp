// Every emitted rule holds in double precision, checked here by an evaluator of the rule graphs
// separate from the generator's, and by the parsed spec text; forced fingerprint collisions are
// caught and dropped.
#include "support.hpp"

#include <algorithm>

#include "loom/interpreter/term_eval.hpp"

namespace loom::superopt::test {
namespace {

TEST(NumericCheck, EveryEmittedRuleOfTheUnitySetAgreesInDoublePrecision) {
  GeneratorOptions o;
  o.ops = unity_ops();
  o.parallel = unity_parallel_forms();
  o.max_ops = 2;
  o.jobs = 2;
  auto r = generate(bundled(), o);
  ASSERT_GT(r.rules.rules.size(), 100u);
  EXPECT_GT(r.summary["by_category"]["parallel"].get<int>(), 0);
  EXPECT_GT(r.summary["by_category"]["hybrid"].get<int>(), 0);
  EXPECT_EQ(r.summary["numeric_check"]["fingerprint_collisions"], 0);
  for (std::size_t i = 0; i < r.rules.rules.size(); ++i) {
    EXPECT_EQ(disagreement(bundled(), r.rules.rules[i], 100 + i), "");
    EXPECT_EQ(r.rules.rules[i].provenance["numeric_check"]["passed"], true);
  }
}

TEST(NumericCheck, ForcedFingerprintCollisionsAreCaughtAndDropped) {
  auto o = small_run({"relu", "ewadd", "ewmul"}, {"partition", "combine"}, 2, "x: [4, 6], y: [4, 6]");
  o.fingerprint_bits = 6;
  auto r = generate(bundled(), o);
  const auto& check = r.summary["numeric_check"];
  EXPECT_GT(check["fingerprint_collisions"].get<int>(), 0);
  EXPECT_EQ(check["passed"].get<std::size_t>(), r.rules.rules.size());
  ASSERT_FALSE(check["dropped_examples"].empty());
  EXPECT_EQ(check["dropped_examples"][0]["reason"], "fingerprint collision");
  for (std::size_t i = 0; i < r.rules.rules.size(); ++i) EXPECT_EQ(disagreement(bundled(), r.rules.rules[i], 7 + i), "");

  // With full fingerprints the same run has no collision, and keeps every rule the truncated
  // run kept.
  o.fingerprint_bits = 64;
  auto full = generate(bundled(), o);
  EXPECT_EQ(full.summary["numeric_check"]["fingerprint_collisions"], 0);
  EXPECT_GE(full.rules.rules.size(), r.rules.rules.size());
}

// Binds each binder's size symbols to the sizes of the rule graph's input of that name.
spec::IntScope example_sizes(const spec::EquationDecl& rule, const pcg::Rule& graphs) {
  spec::IntScope scope;
  for (const auto& b : rule.quantifier.binders) {
    if (b.is_int) continue;
    const auto node = graphs.lhs.find(b.name);
    const auto& dims = graphs.lhs.node(*node).output_shapes.at(0).dims;
    for (std::size_t i = 0; i < b.shape->dims.size(); ++i) scope.values[b.shape->dims[i].expr->name] = dims[i];
  }
  return scope;
}

TEST(NumericCheck, TheSpecFileParsesAndEachRuleHoldsAtItsExampleSizes) {
  auto o = small_run({"matmul", "relu", "ewadd", "split", "concat"}, {"partition", "combine", "replicate", "reduce"}, 2,
                     "x: [4, 6], w: [6, 10], z: [4, 6] {V: 2}");
  auto r = generate(bundled(), o);
  const auto dir = scratch_dir("spec_file");
  write_text(dir / "rules.loom", rules_spec_text(bundled(), r, dir.string()));
  const spec::Library loaded = spec::Library::load({(dir / "rules.loom").string()});
  ASSERT_EQ(loaded.rules().size(), r.rules.rules.size());
  std::map<std::string, const pcg::Rule*> by_id;
  for (const auto& rule : r.rules.rules) by_id[rule.id] = &rule;
  spec::TermEvaluator<spec::RealDomain> eval(loaded);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::size_t evaluated = 0;
  for (const auto* decl : loaded.rules()) {
    const pcg::Rule& graphs = *by_id.at(decl->name);
    if (std::any_of(decl->quantifier.binders.begin(), decl->quantifier.binders.end(), [](const auto& b) { return b.is_int; }))
      continue;  // split positions not among the sizes: the generator's random-size check covers them
    const spec::IntScope scope = example_sizes(*decl, graphs);
    spec::TermEvaluator<spec::RealDomain>::Bindings vars;
    for (const auto& n : graphs.lhs.nodes()) {
      if (!n.is_graph_input()) continue;
      spec::Tensor<double> t(n.output_shapes[0].dims);
      for (auto& v : t.data) v = uniform(rng);
      vars[n.name] = {n.output_shapes[0], t};
    }
    if (decl->quantifier.where) {
      EXPECT_NE(spec::eval_int(*decl->quantifier.where, scope), 0) << decl->name;
    }
    const auto lhs = eval.eval_single(*decl->lhs, vars, scope), rhs = eval.eval_single(*decl->rhs, vars, scope);
    EXPECT_EQ(lhs.shape, rhs.shape) << graphs.text;
    for (std::size_t i = 0; i < lhs.value.data.size(); ++i) ASSERT_NEAR(lhs.value.data[i], rhs.value.data[i], 1e-9) << graphs.text;
    ++evaluated;
  }
  EXPECT_GT(evaluated, r.rules.rules.size() / 2);
  std::filesystem::remove_all(dir);
}

TEST(NumericCheck, TheJsonLibraryRoundTripsWithProvenance) {
  auto r = generate(bundled(), small_run({"relu", "matmul"}, {"partition", "combine", "replicate", "reduce"}, 2, "x: [4, 6], w: [6, 10]"));
  ASSERT_FALSE(r.rules.rules.empty());
  const auto json = pcg::rule_library_to_json(r.rules);
  EXPECT_EQ(json["format"], "loom-rules");
  const pcg::RuleLibrary back = pcg::rule_library_from_json(json, bundled());
  ASSERT_EQ(back.rules.size(), r.rules.rules.size());
  for (std::size_t i = 0; i < back.rules.size(); ++i) {
    EXPECT_EQ(back.rules[i].text, r.rules.rules[i].text);
    EXPECT_EQ(back.rules[i].lhs, r.rules.rules[i].lhs);
    EXPECT_EQ(back.rules[i].rhs, r.rules.rules[i].rhs);
    EXPECT_EQ(back.rules[i].category, r.rules.rules[i].category);
    EXPECT_EQ(back.rules[i].provenance["fingerprint"].get<std::string>().size(), 16u);
    EXPECT_TRUE(back.rules[i].provenance["numeric_check"]["passed"].get<bool>());
  }
  for (const char* key : {"graphs", "candidates", "rules", "by_category", "seconds", "pruning", "peak_memory_mib"})
    EXPECT_TRUE(back.summary.contains(key)) << key;
}

}  // namespace
}  // namespace loom::superopt::test
