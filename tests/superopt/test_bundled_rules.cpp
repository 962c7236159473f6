// The bundled libraries of generated rules (specs/rules/generated.verified.json and
// feature_maps.verified.json, made by scripts/bundle_rules.sh) are what the generator finds: a
// fresh generation on the same options at 2 operators gives exactly the bundled rules of that size.
#include <fstream>
#include <set>

#include "support.hpp"

namespace loom::superopt::test {
namespace {

std::size_t operators(const pcg::Graph& g) {
  std::size_t n = 0;
  for (const pcg::Node& node : g.nodes()) n += !node.is_graph_input();
  return n;
}

// What makes a rule the same rule whatever its id: its equation, category, side conditions and the
// shapes it declares.
std::string content(const pcg::Rule& r) {
  std::string out = equation(r) + " | " + pcg::category_name(r.category);
  for (const std::string& c : r.constraints) out += " | " + c;
  for (const auto& [variable, shape] : r.declared.variables) out += " | " + variable + ": " + pcg::to_string(shape);
  for (const auto& [symbol, value] : r.declared.fixed) out += " | " + symbol + " = " + std::to_string(value);
  return out;
}

// The bundled library `file` (in specs/rules/) against a fresh generation with `o` at 2 operators:
// the same rules of that size, each with its proof record; more than `min_bundled` rules bundled and
// `min_fresh` found, and at least the share `min_proved` of the bundled ones proved.
void expect_bundled_equals_generation(const std::string& file, GeneratorOptions o, std::size_t min_bundled, std::size_t min_fresh,
                                      double min_proved) {
  const std::string path = spec::Library::default_specs_dir() + "/rules/" + file;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const pcg::RuleLibrary bundled_rules = pcg::rule_library_from_json(nlohmann::json::parse(in), bundled());
  ASSERT_GT(bundled_rules.rules.size(), min_bundled);
  std::set<std::string> shipped;
  std::size_t proved = 0;
  for (const pcg::Rule& r : bundled_rules.rules) {
    // A rule Z3 did not prove stays with its record, which searches leave out.
    ASSERT_TRUE(r.verification) << r.text;
    proved += r.verification->status == pcg::VerificationStatus::Proved;
    if (r.verification->status == pcg::VerificationStatus::Refuted) {
      EXPECT_FALSE(r.verification->counterexample.empty()) << r.text;
    }
    EXPECT_EQ(r.declared.variables.size(), r.variables().size()) << "a variable without a declared shape: " << r.text;
    if (operators(r.lhs) <= 2 && operators(r.rhs) <= 2) shipped.insert(content(r));
  }
  EXPECT_EQ(proved, bundled_rules.summary["verification"]["proved"].get<std::size_t>());
  EXPECT_GE(static_cast<double>(proved), min_proved * static_cast<double>(bundled_rules.rules.size()));

  o.max_ops = 2;
  o.prune_implied = true;
  o.check_instances = 16;  // as scripts/bundle_rules.sh generates
  o.jobs = 2;
  const GenerateResult fresh = generate(bundled(), o);
  std::set<std::string> found;
  for (const pcg::Rule& r : fresh.rules.rules) {
    found.insert(content(r));
    EXPECT_EQ(r.id.substr(0, o.id_prefix.size()), o.id_prefix) << r.id;
  }
  EXPECT_GT(found.size(), min_fresh);

  std::string missing, extra;
  for (const std::string& c : found)
    if (!shipped.count(c)) missing += "\n  " + c;
  for (const std::string& c : shipped)
    if (!found.count(c)) extra += "\n  " + c;
  EXPECT_TRUE(missing.empty()) << "generated now but not bundled (run scripts/bundle_rules.sh):" << missing;
  EXPECT_TRUE(extra.empty()) << "bundled but no longer generated (run scripts/bundle_rules.sh):" << extra;
}

TEST(BundledRules, AFreshGenerationAtTwoOperatorsEqualsTheBundledRulesOfThatSize) {
  GeneratorOptions o;
  o.ops = unity_ops();
  o.parallel = unity_parallel_forms();
  expect_bundled_equals_generation("generated.verified.json", o, 1000, 100, 0.9);
}

// The feature-map library: ReLU, addition and concatenation over rank-4 inputs, every rule proved.
TEST(BundledRules, TheFeatureMapLibraryIsWhatTheGeneratorFindsAndAllProved) {
  GeneratorOptions o;
  o.ops = {"relu", "ewadd", "concat"};
  o.parallel = {};
  o.inputs = parse_inputs("x: [2, 4, 3, 5], y: [2, 4, 3, 5], u: [2, 4, 3, 5]");  // as scripts/bundle_rules.sh
  o.id_prefix = "f";
  expect_bundled_equals_generation("feature_maps.verified.json", o, 400, 20, 1.0);
}

TEST(BundledRules, TheDefaultInputsGiveTheLawsOfThreeVariablesAndTwoWeights) {
  // Distributivity, associativity, the merge of two products of one input and the merge of two
  // products into one over concatenations: each needs three activations or two weights.
  GeneratorOptions o;
  o.ops = {"matmul", "ewadd", "ewmul", "concat"};
  o.parallel = {};
  o.max_ops = 3;
  o.attr_domains["axis"] = {0, 1};
  o.jobs = 2;
  const GenerateResult r = generate(bundled(), o);
  auto has = [&](const std::string& a, const std::string& b) { return find_rule(r.rules, a, b) != nullptr; };
  EXPECT_TRUE(has("ewmul(x, ewadd(y, u))", "ewadd(ewmul(x, y), ewmul(x, u))") ||
              has("ewmul(x, ewadd(y, u))", "ewadd(ewmul(x, u), ewmul(y, x))") ||
              has("ewmul(x, ewadd(y, u))", "ewadd(ewmul(y, x), ewmul(x, u))"))
      << list_rules(r.rules, 4000);
  EXPECT_TRUE(has("ewadd(ewadd(x, y), u)", "ewadd(x, ewadd(y, u))"));
  EXPECT_TRUE(has("matmul(x, ewadd(w, v))", "ewadd(matmul(x, w), matmul(x, v))"));
  EXPECT_TRUE(has("ewadd(matmul(x, w), matmul(y, v))", "matmul(concat<1>(x, y), concat<0>(w, v))"));
}

// The example inputs share sizes (x, y and u are all [4, 6]); a rule states a dimension with the
// symbol of another only where its operators need the two equal.
TEST(BundledRules, ExampleSizesNarrowARuleOnlyWhereItsOperatorsNeedIt) {
  GeneratorOptions o = small_run({"matmul", "ewadd", "concat"}, {}, 3, "x: [4, 6], y: [4, 6], u: [4, 6], w: [6, 10]");
  o.attr_domains["axis"] = {0, 1};
  const GenerateResult r = generate(bundled(), o);
  auto declared = [&](const std::string& a, const std::string& b) {
    const pcg::Rule* rule = find_rule(r.rules, a, b);
    if (!rule) ADD_FAILURE() << a << " => " << b << " not found among\n" << list_rules(r.rules, 400);
    std::string out;
    for (const auto& [variable, shape] : rule ? rule->declared.variables : std::map<std::string, pcg::DeclaredShape>{})
      out += (out.empty() ? "" : ", ") + variable + ": " + pcg::to_string(shape);
    return out;
  };
  // Concatenated columns may have any widths, rows not.
  EXPECT_EQ(declared("concat<1>(concat<1>(x, y), u)", "concat<1>(x, concat<1>(y, u))"), "u: [m, j], x: [m, n], y: [m, k]");
  // Operands of an elementwise sum have one shape; a product's inner dimensions are one size.
  EXPECT_EQ(declared("ewadd(x, y)", "ewadd(y, x)"), "x: [m, n], y: [m, n]");
  EXPECT_EQ(declared("matmul(ewadd(x, y), w)", "ewadd(matmul(x, w), matmul(y, w))"), "w: [n, k], x: [m, n], y: [m, n]");
}

}  // namespace
}  // namespace loom::superopt::test
