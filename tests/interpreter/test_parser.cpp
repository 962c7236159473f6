// Parsing and static checking of .loom files: every construct of the language reaches the syntax
// tree, and every malformed input is reported at its `file:line:col` with a message naming it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/parser.hpp"
#include "loom/pcg/known_collectives.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

using test::all_text;
using test::diagnostics_of;
using test::locate;
using test::TempDir;

// ---- every construct --------------------------------------------------------------------------

// An op using attributes with every kind of domain, a pack, a rank-0 input, two outputs, require,
// let, a reduction with an inferred and one with an explicit bound, `??`, select and `?:`.
const std::string kMixOp =
    R"(op mix<k: int in {1, 2}, axis: int in 0..3, act: int in {none = 0, relu = 1}, lo: int in -2..1, n: int>(x: [*s, m], w: [m, 3], v: []) -> (y: [*s, 3], z: [*s]) {
  require n > 0 && m >= 1;
  let t[*i, c] = sum(p) (x[*i, p] * w[p, c]);
  y[*i, c] = select(act == 1, max(t[*i, c], 0), t[*i, c]) * k + v[];
  z[*i] = max(q < m + 2) (x[*i, q - 1] ?? -inf) + (m > 2 ? 1 : 0) + n;
}
)";

// A parallel form with every statement kind (require, D/P/V/R updates both ways, values,
// backward, lowers_to), its inverse, a third using `values sum`, and two fused forms.
const std::string kForms = R"(parallel shard<dim: int in 0..3, degree: int in {2, 4}>(x) {
  require dim < rank;
  require shape[dim] % (D[dim] * P[dim] * degree) == 0;
  D[dim] *= degree;
  P[dim] *= 2;
  P[dim] /= 2;
  V *= 3;
  V /= 3;
  R *= degree;
  R /= degree;
  values split;
  backward unshard<dim, degree>;
  lowers_to scatter;
}
parallel unshard<dim: int in 0..3, degree: int in {2, 4}>(x) {
  require D[dim] % degree == 0;
  D[dim] /= degree;
  values concat;
  backward shard<dim, degree>;
  lowers_to gather;
}
parallel psum<degree: int in {2, 4}>(x) {
  require V % degree == 0;
  V /= degree;
  values sum;
  backward shard<0, degree>;
  lowers_to reduce;
}
fused roundtrip<degree: int in {2, 4}>(x) = unshard<0, degree>(shard<0, degree>(x)) lowers_to all_to_all;
fused plain<degree: int in {2, 4}>(x) = psum<degree>(x);
)";

// kForms made to agree with themselves, as a library requires (each form changes the one degree its
// `values` says, and its backward undoes it): shard's extra updates cancel out, and psum's backward
// is a copy.
std::string checked_forms() {
  std::string forms = kForms;
  for (const char* extra : {"  P[dim] *= 2;\n", "  P[dim] /= 2;\n", "  V *= 3;\n", "  V /= 3;\n", "  R *= degree;\n", "  R /= degree;\n"})
    forms.erase(forms.find(extra), std::string(extra).size());
  const std::string psum_backward = "backward shard<0, degree>;";
  forms.replace(forms.find(psum_backward), psum_backward.size(), "backward copies<degree>;");
  return forms +
         "parallel copies<degree: int in {2, 4}>(x) {\n  R *= degree;\n  values copy;\n  backward psum<degree>;\n  lowers_to "
         "broadcast;\n}\n";
}

const std::string kEquations =
    R"(axiom mix_named: forall d: int in {2, 4}, e: int > 0, f: int, x: [a, m] {V: d, R: 2, D: [1, d], P: [1, 1]}, w: [m, 3], v: [] where a % d == 0 && e < 5.
  mix<k = 1, axis = 0, act = relu, lo = -1, n = e>(x, w, v).y == mix<2, 1, none, 0, (e + 1)>(x, w, v).0;
rule roundtrip_rule: roundtrip<2>(x) => x;
rule typed_rule: forall x: [m, n]. unshard<0, 2>(shard<0, 2>(x)) => x;
)";

TEST(ParserConstructs, OpDeclarationBuildsTheFullTree) {
  Module m = parse_module("// line comment\n/* block\n   comment */\nimport \"other.loom\";\n" + kMixOp, "mix.loom");
  EXPECT_EQ(m.file, "mix.loom");
  ASSERT_EQ(m.imports.size(), 1u);
  EXPECT_EQ(m.imports[0].path, "other.loom");
  EXPECT_EQ(m.imports[0].loc.line, 4);
  EXPECT_EQ(m.imports[0].loc.column, 1);

  ASSERT_EQ(m.ops.size(), 1u);
  const OpDecl& op = m.ops[0];
  EXPECT_EQ(op.name, "mix");
  EXPECT_EQ(op.loc.line, 5);
  EXPECT_EQ(op.loc.column, 4);

  ASSERT_EQ(op.attrs.size(), 5u);
  EXPECT_EQ(op.attrs[0].name, "k");
  EXPECT_EQ(op.attrs[0].domain, (std::vector<std::int64_t>{1, 2}));
  EXPECT_TRUE(op.attrs[0].labels.empty());
  EXPECT_EQ(op.attrs[1].domain, (std::vector<std::int64_t>{0, 1, 2, 3}));  // inclusive range
  EXPECT_EQ(op.attrs[2].domain, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(op.attrs[2].labels, (std::map<std::string, std::int64_t>{{"none", 0}, {"relu", 1}}));
  EXPECT_EQ(op.attrs[3].domain, (std::vector<std::int64_t>{-2, -1, 0, 1}));
  EXPECT_FALSE(op.attrs[4].domain.has_value());

  ASSERT_EQ(op.inputs.size(), 3u);
  ASSERT_TRUE(op.inputs[0].shape);
  ASSERT_EQ(op.inputs[0].shape->dims.size(), 2u);
  EXPECT_TRUE(op.inputs[0].shape->dims[0].is_pack());
  EXPECT_EQ(op.inputs[0].shape->dims[0].pack_name, "s");
  EXPECT_EQ(op.inputs[0].shape->dims[1].expr->kind, ExprKind::Name);
  EXPECT_EQ(op.inputs[0].shape->dims[1].expr->name, "m");
  const auto& three = op.inputs[1].shape->dims[1].expr;
  EXPECT_EQ(three->kind, ExprKind::Number);
  EXPECT_TRUE(three->integral);
  EXPECT_EQ(three->number, 3);
  ASSERT_TRUE(op.inputs[2].shape);
  EXPECT_TRUE(op.inputs[2].shape->dims.empty());  // rank 0

  ASSERT_EQ(op.outputs.size(), 2u);
  EXPECT_EQ(op.outputs[0].name, "y");
  EXPECT_EQ(op.outputs[1].name, "z");
  ASSERT_EQ(op.outputs[1].shape.dims.size(), 1u);
  EXPECT_TRUE(op.outputs[1].shape.dims[0].is_pack());

  ASSERT_EQ(op.stmts.size(), 4u);
  EXPECT_EQ(op.stmts[0].kind, OpStmtKind::Require);
  EXPECT_EQ(op.stmts[0].expr->name, "&&");
  EXPECT_EQ(op.stmts[1].kind, OpStmtKind::Let);
  EXPECT_EQ(op.stmts[1].name, "t");
  ASSERT_EQ(op.stmts[1].indices.size(), 2u);
  EXPECT_TRUE(op.stmts[1].indices[0].pack);
  EXPECT_FALSE(op.stmts[1].indices[1].pack);
  EXPECT_EQ(op.stmts[2].kind, OpStmtKind::Define);
  EXPECT_EQ(op.stmts[2].name, "y");
  EXPECT_EQ(op.stmts[3].kind, OpStmtKind::Define);
  EXPECT_EQ(op.stmts[3].loc.line, 9);
  EXPECT_EQ(op.stmts[3].loc.column, 3);

  // let t = sum(p) (x * w): a reduction with an inferred range.
  const Expr& let_body = *op.stmts[1].expr;
  ASSERT_EQ(let_body.kind, ExprKind::Reduce);
  EXPECT_EQ(let_body.name, "sum");
  ASSERT_EQ(let_body.vars.size(), 1u);
  EXPECT_EQ(let_body.vars[0].name, "p");
  EXPECT_EQ(let_body.vars[0].bound, nullptr);
  EXPECT_EQ(let_body.args[0]->kind, ExprKind::Binary);
  EXPECT_EQ(let_body.args[0]->name, "*");

  // y = select(...) * k + v[]
  const Expr& y = *op.stmts[2].expr;
  ASSERT_EQ(y.kind, ExprKind::Binary);
  EXPECT_EQ(y.name, "+");
  EXPECT_EQ(y.args[0]->name, "*");
  const Expr& select = *y.args[0]->args[0];
  EXPECT_EQ(select.kind, ExprKind::Call);
  EXPECT_EQ(select.name, "select");
  EXPECT_EQ(select.args.size(), 3u);
  EXPECT_EQ(select.args[1]->kind, ExprKind::Call);
  EXPECT_EQ(select.args[1]->name, "max");
  EXPECT_EQ(y.args[1]->kind, ExprKind::Read);
  EXPECT_TRUE(y.args[1]->indices.empty());

  // z = (max(q < m + 2) (x[*i, q - 1] ?? -inf) + (m > 2 ? 1 : 0)) + n
  const Expr& z = *op.stmts[3].expr;
  ASSERT_EQ(z.kind, ExprKind::Binary);
  EXPECT_EQ(z.args[1]->kind, ExprKind::Name);
  const Expr& inner = *z.args[0];
  const Expr& reduce = *inner.args[0];
  ASSERT_EQ(reduce.kind, ExprKind::Reduce);
  EXPECT_EQ(reduce.name, "max");
  ASSERT_EQ(reduce.vars.size(), 1u);
  ASSERT_NE(reduce.vars[0].bound, nullptr);
  EXPECT_EQ(expr_to_string(*reduce.vars[0].bound), "(m + 2)");
  const Expr& read = *reduce.args[0];
  ASSERT_EQ(read.kind, ExprKind::Read);
  ASSERT_EQ(read.indices.size(), 2u);
  EXPECT_TRUE(read.indices[0].is_pack());
  EXPECT_EQ(read.indices[0].pack_name, "i");
  EXPECT_EQ(expr_to_string(*read.indices[1].expr), "(q - 1)");
  ASSERT_NE(read.fallback, nullptr);
  EXPECT_EQ(read.fallback->kind, ExprKind::Number);
  EXPECT_TRUE(std::isinf(read.fallback->number));
  EXPECT_LT(read.fallback->number, 0);
  EXPECT_EQ(inner.args[1]->kind, ExprKind::Ternary);
  EXPECT_EQ(inner.args[1]->args.size(), 3u);
}

TEST(ParserConstructs, ParallelAndFusedForms) {
  Module m = parse_module(kForms, "forms.loom");
  ASSERT_EQ(m.parallels.size(), 3u);
  const ParallelDecl& shard = m.parallels[0];
  EXPECT_EQ(shard.name, "shard");
  EXPECT_EQ(shard.attrs.size(), 2u);
  ASSERT_EQ(shard.inputs.size(), 1u);
  EXPECT_FALSE(shard.inputs[0].shape.has_value());
  ASSERT_EQ(shard.stmts.size(), 9u);
  EXPECT_NE(shard.stmts[0].require, nullptr);
  EXPECT_NE(shard.stmts[1].require, nullptr);
  struct Want {
    DegreeKind kind;
    bool multiply;
    bool has_dim;
  };
  const std::vector<Want> want = {{DegreeKind::D, true, true},  {DegreeKind::P, true, true},   {DegreeKind::P, false, true},
                                  {DegreeKind::V, true, false}, {DegreeKind::V, false, false}, {DegreeKind::R, true, false},
                                  {DegreeKind::R, false, false}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("update " + std::to_string(i));
    const ParallelStmt& st = shard.stmts[i + 2];
    ASSERT_TRUE(st.update.has_value());
    EXPECT_EQ(st.require, nullptr);
    EXPECT_EQ(st.update->degree, want[i].kind);
    EXPECT_EQ(st.update->multiply, want[i].multiply);
    EXPECT_EQ(st.update->dim != nullptr, want[i].has_dim);
  }
  EXPECT_EQ(shard.values, "split");
  ASSERT_NE(shard.backward, nullptr);
  EXPECT_EQ(shard.backward->name, "unshard");
  EXPECT_EQ(shard.backward->attrs.size(), 2u);
  EXPECT_EQ(shard.lowers_to, "scatter");
  EXPECT_EQ(m.parallels[1].values, "concat");
  EXPECT_EQ(m.parallels[2].values, "sum");
  EXPECT_EQ(m.parallels[2].lowers_to, "reduce");

  ASSERT_EQ(m.fused.size(), 2u);
  const FusedDecl& rt = m.fused[0];
  EXPECT_EQ(rt.name, "roundtrip");
  EXPECT_EQ(rt.lowers_to, "all_to_all");
  ASSERT_EQ(rt.body->kind, TermKind::Apply);
  EXPECT_EQ(rt.body->name, "unshard");
  ASSERT_EQ(rt.body->args.size(), 1u);
  EXPECT_EQ(rt.body->args[0]->name, "shard");
  EXPECT_EQ(rt.body->args[0]->args[0]->kind, TermKind::Var);
  EXPECT_EQ(rt.body->args[0]->args[0]->name, "x");
  EXPECT_TRUE(m.fused[1].lowers_to.empty());
}

TEST(ParserConstructs, AxiomsAndRules) {
  Module m = parse_module(kEquations, "eq.loom");
  ASSERT_EQ(m.axioms.size(), 1u);
  const EquationDecl& ax = m.axioms[0];
  EXPECT_EQ(ax.name, "mix_named");
  const auto& b = ax.quantifier.binders;
  ASSERT_EQ(b.size(), 6u);
  EXPECT_TRUE(b[0].is_int);
  EXPECT_EQ(b[0].domain, (std::vector<std::int64_t>{2, 4}));
  EXPECT_TRUE(b[1].is_int);
  EXPECT_EQ(b[1].bound_op, ">");
  EXPECT_EQ(b[1].bound, 0);
  EXPECT_TRUE(b[2].is_int);
  EXPECT_FALSE(b[2].domain.has_value());
  EXPECT_TRUE(b[2].bound_op.empty());
  EXPECT_FALSE(b[3].is_int);
  ASSERT_TRUE(b[3].shape);
  EXPECT_EQ(b[3].shape->dims.size(), 2u);
  ASSERT_NE(b[3].degrees.V, nullptr);
  EXPECT_EQ(b[3].degrees.V->name, "d");
  ASSERT_NE(b[3].degrees.R, nullptr);
  EXPECT_EQ(b[3].degrees.R->number, 2);
  ASSERT_EQ(b[3].degrees.D.size(), 2u);
  EXPECT_EQ(b[3].degrees.D[1]->name, "d");
  EXPECT_EQ(b[3].degrees.P.size(), 2u);
  EXPECT_EQ(b[4].degrees.V, nullptr);
  EXPECT_TRUE(b[4].degrees.D.empty());
  ASSERT_TRUE(b[5].shape);
  EXPECT_TRUE(b[5].shape->dims.empty());
  ASSERT_NE(ax.quantifier.where, nullptr);
  EXPECT_EQ(ax.quantifier.where->name, "&&");

  // lhs: mix<k = 1, ...>(x, w, v).y   rhs: mix<2, 1, none, 0, (e + 1)>(x, w, v).0
  ASSERT_EQ(ax.lhs->kind, TermKind::Project);
  EXPECT_EQ(ax.lhs->field, "y");
  EXPECT_EQ(ax.lhs->position, -1);
  const Term& lapp = *ax.lhs->args[0];
  EXPECT_EQ(lapp.name, "mix");
  ASSERT_EQ(lapp.attrs.size(), 5u);
  EXPECT_EQ(lapp.attrs[0].name, "k");
  EXPECT_EQ(lapp.attrs[2].name, "act");
  EXPECT_EQ(lapp.attrs[2].value->kind, ExprKind::Name);
  EXPECT_EQ(lapp.attrs[2].value->name, "relu");
  EXPECT_EQ(lapp.attrs[3].value->number, -1);  // signed attribute value
  EXPECT_EQ(lapp.args.size(), 3u);
  ASSERT_EQ(ax.rhs->kind, TermKind::Project);
  EXPECT_EQ(ax.rhs->position, 0);
  const Term& rapp = *ax.rhs->args[0];
  EXPECT_TRUE(rapp.attrs[0].name.empty());
  EXPECT_EQ(rapp.attrs[4].value->kind, ExprKind::Binary);

  ASSERT_EQ(m.rules.size(), 2u);
  EXPECT_EQ(m.rules[0].name, "roundtrip_rule");
  EXPECT_TRUE(m.rules[0].quantifier.binders.empty());
  EXPECT_EQ(m.rules[0].rhs->kind, TermKind::Var);
  EXPECT_EQ(m.rules[1].quantifier.binders.size(), 1u);
  EXPECT_EQ(m.rules[1].lhs->name, "unshard");
}

// The same constructs, loaded as a library, mean what they say.
TEST(ParserConstructs, LoadedConstructsHaveTheirMeaning) {
  Library lib = Library::from_text(kMixOp + checked_forms() + kEquations, "all.loom");
  EXPECT_EQ(lib.ops().size(), 1u);
  EXPECT_EQ(lib.parallel_forms().size(), 4u);
  EXPECT_EQ(lib.fused_forms().size(), 2u);
  EXPECT_EQ(lib.axioms().size(), 1u);
  EXPECT_EQ(lib.rules().size(), 2u);
  EXPECT_EQ(lib.input_count("mix"), 3u);
  EXPECT_EQ(lib.output_count("mix"), 2u);

  // mix on x [2, 3, 4] (s = [2, 3], m = 4), w [4, 3], v [] with k = 2, act = relu, n = 3.
  Program prog = lib.instantiate("mix", {{"k", 2}, {"axis", 0}, {"act", 1}, {"lo", 0}, {"n", 3}}, {{2, 3, 4}, {4, 3}, {}});
  Tensor<double> x({2, 3, 4}), w({4, 3}), v(std::vector<std::int64_t>{});
  for (std::size_t i = 0; i < x.size(); ++i) x.data[i] = std::sin(1.7 * static_cast<double>(i) + 0.3);
  for (std::size_t i = 0; i < w.size(); ++i) w.data[i] = std::cos(0.9 * static_cast<double>(i));
  v.data[0] = 0.25;
  auto outs = evaluate<RealDomain>(prog, {&x, &w, &v});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].dims, (std::vector<std::int64_t>{2, 3, 3}));
  EXPECT_EQ(outs[1].dims, (std::vector<std::int64_t>{2, 3}));
  for (int r = 0; r < 6; ++r) {
    double row_max = -HUGE_VAL;
    for (int p = 0; p < 4; ++p) row_max = std::max(row_max, x.data[static_cast<std::size_t>(r * 4 + p)]);
    EXPECT_NEAR(outs[1].data[static_cast<std::size_t>(r)], row_max + 1 + 3, 1e-12);
    for (int c = 0; c < 3; ++c) {
      double t = 0;
      for (int p = 0; p < 4; ++p) t += x.data[static_cast<std::size_t>(r * 4 + p)] * w.data[static_cast<std::size_t>(p * 3 + c)];
      EXPECT_NEAR(outs[0].data[static_cast<std::size_t>(r * 3 + c)], std::max(t, 0.0) * 2 + 0.25, 1e-12);
    }
  }
  // act = none takes the other branch of the select; m = 2 takes the other branch of `?:`.
  Program plain = lib.instantiate("mix", {{"k", 1}, {"axis", 3}, {"act", 0}, {"lo", -2}, {"n", 1}}, {{3, 2}, {2, 3}, {}});
  Tensor<double> x2({3, 2}, -1.0), w2({2, 3}, 0.5);
  auto outs2 = evaluate<RealDomain>(plain, {&x2, &w2, &v});
  for (double y : outs2[0].data) EXPECT_NEAR(y, -1.0 + 0.25, 1e-12);  // negative, not clipped
  for (double z : outs2[1].data) EXPECT_NEAR(z, -1.0 + 0 + 1, 1e-12);
  // Attribute values outside their domains are refused when instantiating.
  EXPECT_THROW(lib.instantiate("mix", {{"k", 3}, {"axis", 0}, {"act", 0}, {"lo", 0}, {"n", 1}}, {{3, 2}, {2, 3}, {}}), LoomError);
  EXPECT_THROW(lib.instantiate("mix", {{"k", 1}, {"axis", 4}, {"act", 0}, {"lo", 0}, {"n", 1}}, {{3, 2}, {2, 3}, {}}), LoomError);
  EXPECT_THROW(lib.instantiate("mix", {{"k", 1}, {"axis", 0}, {"act", 0}, {"lo", 0}, {"n", 0}}, {{3, 2}, {2, 3}, {}}), LoomError);

  auto sharded = lib.infer("shard", {{"dim", 1}, {"degree", 4}}, {test::pshape({2, 8})});
  EXPECT_EQ(sharded[0], test::pshape({2, 8}, {1, 4}));
  EXPECT_EQ(lib.infer("roundtrip", {{"degree", 2}}, {test::pshape({4, 6})})[0], test::pshape({4, 6}));
  EXPECT_EQ(lib.infer("plain", {{"degree", 2}}, {test::pshape({4, 6}, {}, 4)})[0], test::pshape({4, 6}, {}, 2));

  // Named attributes and labels resolve to the values of the parameters.
  const EquationDecl& ax = *lib.axioms()[0];
  IntScope scope;
  scope.values["e"] = 3;
  const auto* params = lib.attr_params("mix");
  ASSERT_NE(params, nullptr);
  auto lhs = Library::resolve_attrs("mix", *params, ax.lhs->args[0]->attrs, scope, ax.loc);
  EXPECT_EQ(lhs, (pcg::AttrMap{{"k", 1}, {"axis", 0}, {"act", 1}, {"lo", -1}, {"n", 3}}));
  auto rhs = Library::resolve_attrs("mix", *params, ax.rhs->args[0]->attrs, scope, ax.loc);
  EXPECT_EQ(rhs, (pcg::AttrMap{{"k", 2}, {"axis", 1}, {"act", 0}, {"lo", 0}, {"n", 4}}));
}

TEST(ParserConstructs, ImportsFollowRelativePathsOnce) {
  TempDir dir;
  std::string ops = dir.write("lib/ops.loom", "op twice(x: [*s]) -> [*s] {\n  out[*i] = 2 * x[*i];\n}\n");
  std::string use = dir.write("models/use.loom",
                              "import \"../lib/ops.loom\";\nimport \"../lib/ops.loom\";\n"
                              "axiom twice_commutes: forall x: [m], y: [m]. twice(twice(x)) == twice(twice(x));\n");
  dir.write("models/notes.txt", "this is not a spec {{{");

  Library lib = Library::load({use});
  EXPECT_TRUE(lib.has_op("twice"));
  EXPECT_EQ(lib.ops().size(), 1u);
  EXPECT_EQ(lib.axioms().size(), 1u);
  auto files = lib.files();
  EXPECT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  EXPECT_TRUE(std::any_of(files.begin(), files.end(), [&](const std::string& f) {
    return std::filesystem::weakly_canonical(f) == std::filesystem::weakly_canonical(ops);
  })) << ::testing::PrintToString(files);

  // A directory loads every .loom file below it, each once, and nothing else.
  Library whole = Library::load({dir.path().string()});
  EXPECT_EQ(whole.ops().size(), 1u);
  EXPECT_EQ(whole.axioms().size(), 1u);
  EXPECT_EQ(whole.files().size(), 2u);

  // An in-memory file resolves its imports against the directory it is given.
  Library mem = Library::from_text("import \"lib/ops.loom\";\n", "<mem>", dir.path().string());
  EXPECT_TRUE(mem.has_op("twice"));
}

TEST(ParserConstructs, ImportCyclesLoadEachFileOnce) {
  TempDir dir;
  std::string a = dir.write("a.loom", "import \"b.loom\";\nop fa(x: [m]) -> [m] {\n  out[i] = x[i];\n}\n");
  dir.write("b.loom", "import \"a.loom\";\nimport \"./a.loom\";\nop fb(x: [m]) -> [m] {\n  out[i] = x[i];\n}\n");
  Library lib = Library::load({a});
  EXPECT_TRUE(lib.has_op("fa"));
  EXPECT_TRUE(lib.has_op("fb"));
  EXPECT_EQ(lib.ops().size(), 2u);
  EXPECT_EQ(lib.files().size(), 2u);
}

TEST(ParserConstructs, BundledSpecsParse) {
  const Library& lib = test::bundled();
  for (const char* op : {"matmul", "conv2d", "concat", "split", "relu", "softmax", "embedding_bag"}) EXPECT_TRUE(lib.find_op(op)) << op;
  for (const char* form : {"partition", "combine", "replicate", "reduce", "pipeline", "batch"})
    EXPECT_TRUE(lib.find_parallel(form)) << form;
  EXPECT_TRUE(lib.find_fused("allreduce"));
  EXPECT_FALSE(lib.axioms().empty());
  EXPECT_FALSE(lib.rules().empty());
}

// ---- malformed inputs ---------------------------------------------------------------------------

// Loads `text` as file "bad.loom"; expects exactly one diagnostic, at the start of `needle`
// (its `occurrence`-th match), whose message contains `message`.
void expect_one_error(const std::string& text, const std::string& needle, const std::string& message, int occurrence = 0,
                      int column_offset = 0) {
  auto ds = diagnostics_of([&] { Library::from_text(text, "bad.loom"); });
  ASSERT_EQ(ds.size(), 1u) << all_text(ds);
  auto want = locate(text, needle, occurrence);
  EXPECT_EQ(ds[0].where.file, "bad.loom");
  EXPECT_EQ(ds[0].where.line, want.line) << ds[0].to_string();
  EXPECT_EQ(ds[0].where.column, want.column + column_offset) << ds[0].to_string();
  EXPECT_NE(ds[0].message.find(message), std::string::npos) << ds[0].to_string();
  std::string prefix = "bad.loom:" + std::to_string(want.line) + ":" + std::to_string(want.column + column_offset) + ": ";
  EXPECT_EQ(ds[0].to_string().rfind(prefix, 0), 0u) << ds[0].to_string();
}

std::string core_import() { return "import \"" + Library::default_specs_dir() + "/ops/core.loom\";\n"; }
std::string parallel_import() { return "import \"" + Library::default_specs_dir() + "/ops/parallel.loom\";\n"; }

TEST(ParserErrors, SyntaxErrorAtTheOffendingToken) {
  const std::string text = "op f(x: [m]) -> [m] {\n  out[i] = x[i] +;\n}\n";
  auto ds = diagnostics_of([&] { parse_module(text, "syntax.loom"); });
  ASSERT_FALSE(ds.empty());
  auto want = locate(text, ";\n}");
  EXPECT_EQ(ds[0].where.file, "syntax.loom");
  EXPECT_EQ(ds[0].where.line, want.line);
  EXPECT_EQ(ds[0].where.column, want.column);
  EXPECT_NE(ds[0].message.find("';'"), std::string::npos) << ds[0].message;
  // Library::from_text reports the same.
  auto ds2 = diagnostics_of([&] { Library::from_text(text, "syntax.loom"); });
  ASSERT_FALSE(ds2.empty());
  EXPECT_EQ(ds2[0].to_string(), ds[0].to_string());
}

TEST(ParserErrors, MissingArrowAndBadCharacter) {
  const std::string no_arrow = "op f(x: [m]) [m] {\n  out[i] = x[i];\n}\n";
  auto ds = diagnostics_of([&] { parse_module(no_arrow, "a.loom"); });
  ASSERT_FALSE(ds.empty());
  auto want = locate(no_arrow, "[m] {");
  EXPECT_EQ(ds[0].where.line, want.line);
  EXPECT_EQ(ds[0].where.column, want.column);

  const std::string bad_char = "op f(x: [m]) -> [m] {\n  out[i] = x[i] # 2;\n}\n";
  auto ds2 = diagnostics_of([&] { parse_module(bad_char, "b.loom"); });
  ASSERT_FALSE(ds2.empty());
  auto hash = locate(bad_char, "#");
  EXPECT_EQ(ds2[0].where.line, hash.line);
  EXPECT_EQ(ds2[0].where.column, hash.column);
  EXPECT_NE(ds2[0].message.find("#"), std::string::npos) << ds2[0].message;
}

TEST(ParserErrors, SeveralSyntaxErrorsReportedTogether) {
  const std::string text =
      "op f(x: [m]) -> [m] {\n  out[i] = x[i] +;\n}\n"
      "op g(x: [m]) -> [m] {\n  out[i] = x[i] *;\n}\n";
  auto ds = diagnostics_of([&] { parse_module(text, "two.loom"); });
  ASSERT_GE(ds.size(), 2u) << all_text(ds);
  auto first = locate(text, ";\n}"), second = locate(text, ";\n}", 1);
  auto has = [&](test::Position p) {
    return std::any_of(ds.begin(), ds.end(), [&](const Diagnostic& d) { return d.where.line == p.line && d.where.column == p.column; });
  };
  EXPECT_TRUE(has(first)) << all_text(ds);
  EXPECT_TRUE(has(second)) << all_text(ds);
}

TEST(ParserErrors, InvalidUtf8IsRejected) {
  const std::string text = "op f(x: [m]) -> [m] {\n  out[i] = x[i]; // \xff\n}\n";
  auto ds = diagnostics_of([&] { parse_module(text, "u.loom"); });
  ASSERT_EQ(ds.size(), 1u);
  auto want = locate(text, "\xff");
  EXPECT_EQ(ds[0].where.line, want.line);
  EXPECT_EQ(ds[0].where.column, want.column);
  EXPECT_NE(ds[0].message.find("UTF-8"), std::string::npos);
}

TEST(ParserErrors, UnknownTensor) { expect_one_error("op f(x: [m]) -> [m] {\n  out[i] = x[i] + y[i];\n}\n", "y[i]", "unknown tensor 'y'"); }

TEST(ParserErrors, UnboundIndex) {
  expect_one_error("op f(x: [m]) -> [m] {\n  out[i] = x[j];\n}\n", "j]", "unbound index or unknown name 'j'");
}

TEST(ParserErrors, UnusedReductionIndex) {
  expect_one_error("op f(x: [m]) -> [m] {\n  out[i] = 1 + sum(p) x[i];\n}\n", "sum(p)", "reduction index 'p' is never used in its body");
}

TEST(ParserErrors, ReadRankMismatch) {
  expect_one_error("op f(x: [m, n]) -> [m] {\n  out[i] = x[i];\n}\n", "x[i]", "'x' has rank 2");
  expect_one_error("op f(x: [*s, n]) -> [*s] {\n  out[*i] = x[*i, 0, 0];\n}\n", "x[*i, 0, 0]", "read with 3 indices");
}

TEST(ParserErrors, WrongPackPosition) {
  const std::string text = "op f(x: [*s, n]) -> [*s, n] {\n  out[*i, j] = x[j, *i];\n}\n";
  auto ds = diagnostics_of([&] { Library::from_text(text, "bad.loom"); });
  ASSERT_EQ(ds.size(), 2u) << all_text(ds);
  auto want = locate(text, "x[j, *i]");
  for (const auto& d : ds) {
    EXPECT_EQ(d.where.line, want.line);
    EXPECT_EQ(d.where.column, want.column);
  }
  EXPECT_NE(ds[0].message.find("position 0 of 'x' is a rank pack"), std::string::npos) << ds[0].message;
  EXPECT_NE(ds[1].message.find("position 1 of 'x' is not a pack"), std::string::npos) << ds[1].message;
  // A pack index on the left where the output has a plain dimension.
  expect_one_error("op f(x: [m]) -> [m] {\n  out[*i] = 1;\n}\n", "out[*i]", "do not match its shape");
}

// docs/language.md: "Every index on the left must be used" (README: the checker reports "unbound
// and unused indices"). An output index that the body never mentions is a broadcast the spec forbids.
TEST(ParserErrors, UnusedLeftIndex) {
  for (const std::string& text : {std::string("op f(x: [m], y: [n]) -> [m, n] {\n  out[i, j] = x[i];\n}\n"),
                                  std::string("op f(x: [*s], y: [n]) -> [*s, n] {\n  out[*i, j] = x[*i];\n}\n")}) {
    SCOPED_TRACE(text);
    std::vector<Diagnostic> ds;
    try {
      Library::from_text(text, "bad.loom");
    } catch (const LoomError& e) {
      ds = e.diagnostics();
    }
    EXPECT_EQ(ds.size(), 1u) << "an unused index on the left is not reported:\n" << all_text(ds);
    if (ds.empty()) continue;
    EXPECT_EQ(ds[0].where.line, 2) << ds[0].to_string();
    EXPECT_NE(ds[0].message.find("'j'"), std::string::npos) << ds[0].to_string();
  }
}

// An index position holds integer index arithmetic (docs/language.md: affine index expressions,
// with `/` and `%`; integer functions min, max, abs). Anything else there must be refused with a
// LoomError, at load, at instantiation or at evaluation; where a form has an exact integer meaning
// (pow(i, 2), !i, a constant sum, a gather x[x[i]]) computing that meaning is accepted too.
// Each case runs in a child process: some of them crash the evaluator.
TEST(ParserErrors, NonIntegerIndexExpressionsAreRefused) {
  const std::int64_t m = 5;
  struct Case {
    std::string index;
    std::function<std::int64_t(std::int64_t)> meaning;  // null: must be refused
  };
  const std::vector<Case> cases = {
      {"sqrt(i)", nullptr},
      {"exp(i)", nullptr},
      {"i * 0.5", nullptr},
      {"pow(i, 2)", [](std::int64_t i) { return i * i; }},
      {"!i", [](std::int64_t i) { return std::int64_t{i == 0}; }},
      {"sum(p < 2) p", [](std::int64_t) { return std::int64_t{1}; }},
      {"x[i]", [](std::int64_t i) { return (i * 3 + 1) % 5; }},  // x holds (3i + 1) % 5
  };
  enum { Refused = 0, Correct = 1, Wrong = 2 };
  for (const auto& c : cases) {
    SCOPED_TRACE("out[i] = x[" + c.index + "]");
    const std::string text = "op f(x: [m]) -> [m] {\n  out[i] = x[" + c.index + "];\n}\n";
    int code = test::run_isolated([&]() -> int {
      try {
        Library lib = Library::from_text(text, "index.loom");
        Program p = lib.instantiate("f", {}, {{m}});
        Tensor<double> x({m});
        for (std::int64_t i = 0; i < m; ++i) x.data[static_cast<std::size_t>(i)] = static_cast<double>((i * 3 + 1) % 5);
        auto out = evaluate<RealDomain>(p, {&x});
        if (!c.meaning) return Wrong;
        for (std::int64_t i = 0; i < m; ++i) {
          std::int64_t at = c.meaning(i);
          double want = at >= 0 && at < m ? x.data[static_cast<std::size_t>(at)] : 0.0;
          if (out[0].data[static_cast<std::size_t>(i)] != want) return Wrong;
        }
        return Correct;
      } catch (const LoomError&) {
        return Refused;
      }
    });
    if (c.meaning) {
      EXPECT_TRUE(code == Refused || code == Correct)
          << "x[" << c.index << "]: " << (code == Wrong ? "evaluated to wrong values" : test::isolated_outcome(code));
    } else {
      EXPECT_EQ(code, Refused) << "x[" << c.index << "]: " << (code == Wrong ? "evaluated without an error" : test::isolated_outcome(code));
    }
  }
}

// Attribute and binder domains written as ranges must not hang or exhaust memory on huge bounds
// (refusing them with a LoomError is fine): a range expanded value by value would take seconds
// from 0..10^7 on.
TEST(ParserErrors, HugeDomainRangesFinish) {
  const std::vector<std::string> texts = {
      "op f<a: int in 0..4000000000>(x: [m]) -> [m] {\n  out[i] = x[i];\n}\n",
      "op g(x: [m]) -> [m] {\n  out[i] = x[i];\n}\naxiom a: forall d: int in 0..9223372036854775807, x: [m]. g(x) == g(x);\n"};
  for (const auto& text : texts) {
    int code = test::run_isolated(
        [&]() -> int {
          try {
            Library::from_text(text, "range.loom");
          } catch (const LoomError&) {
          }
          return 0;
        },
        3, rlim_t{1} << 30);
    EXPECT_EQ(code, 0) << test::isolated_outcome(code) << "\n" << text;
  }
}

TEST(ParserErrors, UnknownFunctionAndWrongArity) {
  expect_one_error("op f(x: [m]) -> [m] {\n  out[i] = foo(x[i]);\n}\n", "foo(", "unknown function 'foo'");
  expect_one_error("op f(x: [m]) -> [m] {\n  out[i] = exp(x[i], 1);\n}\n", "exp(", "exp takes 1 argument");
  expect_one_error("op f(x: [m]) -> [m] {\n  out[i] = pow(x[i]);\n}\n", "pow(", "pow takes 2 arguments");
  expect_one_error("op f(x: [m]) -> [m] {\n  out[i] = select(x[i], 1);\n}\n", "select(", "select takes 3 arguments");
}

TEST(ParserErrors, OutputDefinedTwiceOrNever) {
  expect_one_error("op f(x: [m]) -> [m] {\n  out[i] = x[i];\n  out[i] = 2 * x[i];\n}\n", "out[i] = 2", "output 'out' is defined twice");
  expect_one_error("op f(x: [m]) -> (y: [m], z: [m]) {\n  y[i] = x[i];\n}\n", "f(", "output 'z' is never defined");
  // Defining something that is not an output: that error, and the real output is never defined.
  const std::string text = "op f(x: [m]) -> [m] {\n  let t[i] = x[i];\n  res[i] = t[i];\n}\n";
  auto ds = diagnostics_of([&] { Library::from_text(text, "bad.loom"); });
  ASSERT_EQ(ds.size(), 2u) << all_text(ds);
  auto res = locate(text, "res[i]");
  EXPECT_EQ(ds[0].where.line, res.line);
  EXPECT_EQ(ds[0].where.column, res.column);
  EXPECT_NE(ds[0].message.find("'res' is not an output of f"), std::string::npos);
  EXPECT_EQ(ds[1].where.line, 1);
  EXPECT_EQ(ds[1].where.column, locate(text, "f(").column);
  EXPECT_NE(ds[1].message.find("output 'out' is never defined"), std::string::npos);
}

TEST(ParserConstructs, InputNotesAreKeptOnTheirInput) {
  const Library lib = Library::from_text(
      "op f(ids: [b] @index(t), t: [v, d], s: [d] @statistic @init(1) @positive) -> [b, d] {\n"
      "  out[i, j] = (sum(r) select(ids[i] == r, t[r, j], 0)) * s[j];\n}\n",
      "notes.loom");
  const OpDecl& f = *lib.find_op("f");
  ASSERT_EQ(f.inputs.size(), 3u);
  ASSERT_NE(f.inputs[0].note("index"), nullptr);
  EXPECT_EQ(f.inputs[0].note("index")->arg, "t");
  EXPECT_TRUE(f.inputs[1].notes.empty());
  EXPECT_EQ(f.inputs[2].notes.size(), 3u);
  EXPECT_EQ(f.inputs[2].note("init")->arg, "1");
  EXPECT_NE(f.inputs[2].note("positive"), nullptr);
  EXPECT_EQ(f.inputs[2].note("index"), nullptr);
  const Library outputs = Library::from_text(
      "op p(x: [n]) -> [n] @probabilities {\n  out[i] = x[i];\n}\n"
      "op q(x: [n]) -> (y: [n], z: [n] @probabilities) {\n  y[i] = x[i];\n  z[i] = x[i];\n}\n",
      "outputs.loom");
  EXPECT_TRUE(outputs.find_op("p")->outputs[0].noted("probabilities"));
  EXPECT_FALSE(outputs.find_op("q")->outputs[0].noted("probabilities"));
  EXPECT_TRUE(outputs.find_op("q")->outputs[1].noted("probabilities"));
}

TEST(ParserErrors, InputNotesAreChecked) {
  const std::string body = ") -> [m] {\n  out[i] = x[i];\n}\n";
  expect_one_error("op f(x: [m] @index(x)" + body, "@index", "@index on input 'x' of f takes the name of another input");
  expect_one_error("op f(x: [m] @index(y)" + body, "@index", "@index on input 'x' of f: 'y' is not an input of f");
  expect_one_error("op f(x: [m] @index(t), t: []" + body, "@index", "the table 't' needs a first dimension that is not a pack");
  expect_one_error("op f(x: [m] @index(t), t: [*s]" + body, "@index", "the table 't' needs a first dimension that is not a pack");
  expect_one_error("op f(x: [m] @init(one)" + body, "@init", "@init on input 'x' of f takes the integer");
  expect_one_error("op f(x: [m] @init" + body, "@init", "takes the integer its values start at");
  expect_one_error("op f(x: [m] @statistic(2)" + body, "@statistic", "@statistic on input 'x' of f takes no argument");
  expect_one_error("op f(x: [m] @detached(y)" + body, "@detached", "@detached on input 'x' of f takes no argument");
  expect_one_error("op f(x: [m] @weird" + body, "@weird", "unknown note @weird on input 'x' of f");
  expect_one_error("op f(x: [m] @positive @positive" + body, "@positive", "@positive is given twice", 1);
  expect_one_error("op f(x: [m]) -> [m] @init(1) {\n  out[i] = x[i];\n}\n", "@init",
                   "unknown note @init on output 'out' of f (known: @probabilities)");
  expect_one_error("op f(x: [m]) -> [m] @probabilities(2) {\n  out[i] = x[i];\n}\n", "@probabilities", "takes no argument");
  expect_one_error("op g(x: [m]) -> [m] {\n  out[i] = x[i];\n}\nfused h(x @init(0)) = g(x);\n", "@init",
                   "notes describe an operator's inputs, not a fused form's");
}

TEST(ParserErrors, DuplicateOpAcrossFiles) {
  TempDir dir;
  const std::string a_text = "op dup(x: [m]) -> [m] {\n  out[i] = x[i];\n}\n";
  const std::string b_text = "// the same name again\nop dup(x: [m]) -> [m] {\n  out[i] = 2 * x[i];\n}\n";
  std::string a = dir.write("a.loom", a_text);
  std::string b = dir.write("b.loom", b_text);
  auto first = locate(a_text, "dup"), second = locate(b_text, "dup");
  auto ds = diagnostics_of([&] { Library::load({dir.path().string()}); });
  ASSERT_EQ(ds.size(), 1u) << all_text(ds);
  EXPECT_EQ(std::filesystem::path(ds[0].where.file).filename(), "b.loom");
  EXPECT_EQ(ds[0].where.line, second.line);
  EXPECT_EQ(ds[0].where.column, second.column);
  EXPECT_NE(ds[0].message.find("op 'dup' is already declared at"), std::string::npos) << ds[0].message;
  const std::string earlier = "a.loom:" + std::to_string(first.line) + ":" + std::to_string(first.column);
  EXPECT_NE(ds[0].message.find(earlier), std::string::npos) << ds[0].message;
  // Listing both files explicitly gives the same error.
  auto ds2 = diagnostics_of([&] { Library::load({a, b}); });
  ASSERT_EQ(ds2.size(), 1u);
  EXPECT_EQ(ds2[0].where.line, second.line);
  // A parallel form may not reuse an op's name either.
  std::string c = dir.write("c/c.loom", "parallel dup(x) {\n  values identity;\n  backward dup;\n  lowers_to broadcast;\n}\n");
  auto ds3 = diagnostics_of([&] { Library::load({a, c}); });
  ASSERT_EQ(ds3.size(), 1u) << all_text(ds3);
  EXPECT_NE(ds3[0].message.find("'dup' is already declared"), std::string::npos) << ds3[0].message;
}

TEST(ParserErrors, UnknownOpInAxiomTerm) {
  const std::string text = core_import() + "axiom bogus: forall x: [m].\n  relu(x) == frobnicate(x);\n";
  expect_one_error(text, "frobnicate", "unknown operator or parallel form 'frobnicate'");
}

TEST(ParserErrors, AttributeOutsideDomainInRule) {
  const std::string text = core_import() + parallel_import() + "rule bad_degree: relu(x) => combine<0, 2>(relu(partition<0, 1>(x)));\n";
  expect_one_error(text, "1>(x)", "partition: attribute degree = 1 is outside its domain");
  const std::string label = "import \"" + Library::default_specs_dir() +
                            "/ops/conv.loom\";\nrule bad_label: conv2d<1, 1, 0, 0, softplus>(x, w) => conv2d<1, 1, 0, 0, relu>(x, w);\n";
  expect_one_error(label, "softplus", "unknown name 'softplus' for attribute act of conv2d");
}

TEST(ParserErrors, WrongArityInTerm) {
  const std::string text = core_import() + "axiom bad: forall x: [m].\n  ewadd(x) == relu(x);\n";
  expect_one_error(text, "ewadd(x)", "ewadd takes 2 inputs, given 1");
}

// Names in a parallel form's conditions and degree updates are checked like those of an op's
// `require` (README: the checker reports undefined names): a misspelt attribute must not wait
// until the form is first applied.
TEST(ParserErrors, UnknownNamesInParallelForm) {
  const std::string text =
      "parallel shard<dim: int in 0..3, degree: int in {2, 4}>(x) {\n"
      "  require dimm < rank;\n"
      "  D[dimension] *= degre;\n"
      "  values split;\n"
      "  backward shard<dim, degree>;\n"
      "  lowers_to scatter;\n"
      "}\n";
  std::vector<Diagnostic> ds;
  try {
    Library::from_text(text, "bad.loom");
  } catch (const LoomError& e) {
    ds = e.diagnostics();
  }
  ASSERT_FALSE(ds.empty()) << "a parallel form with unknown names loads without errors";
  for (const std::string name : {"dimm", "dimension", "degre"}) {
    auto where = locate(text, name + (name == "dimm" ? " " : name == "dimension" ? "]" : ";"));
    bool found = false;
    for (const auto& d : ds)
      found |= d.where.line == where.line && d.where.column == where.column && d.message.find("'" + name + "'") != std::string::npos;
    EXPECT_TRUE(found) << "no diagnostic for '" << name << "' at " << where.line << ":" << where.column << "\n" << all_text(ds);
  }
}

TEST(ParserErrors, UnboundAndDuplicateVariablesInEquations) {
  expect_one_error(core_import() + "rule r: forall x: [m]. relu(y) => relu(x);\n", "y) =>", "unbound variable 'y'");
  expect_one_error(core_import() + "axiom a: forall x: [m], x: [n]. relu(x) == relu(x);\n", "x: [n]", "'x' is bound twice");
  expect_one_error(core_import() + "axiom a: forall x. relu(x) == relu(x);\n", "x.", "give tensor variable 'x' a shape");
  expect_one_error(core_import() + parallel_import() + "rule r: relu(x) => combine<0>(relu(x));\n", "combine<",
                   "combine takes 2 attributes, given 1");
  expect_one_error(core_import() + parallel_import() + "rule r: relu(x) => combine<dim = 0, deg = 2>(relu(x));\n",
                   "deg =", "combine has no attribute 'deg'");
}

TEST(ParserErrors, SeveralErrorsInOneFileReportedTogether) {
  const std::string text =
      "op a(x: [m]) -> [m] {\n  out[i] = y[i];\n}\n"
      "op b(x: [m]) -> [m] {\n  out[i] = foo(x[i]);\n}\n"
      "op c(x: [m, n]) -> [m] {\n  out[i] = x[i];\n}\n";
  auto ds = diagnostics_of([&] { Library::from_text(text, "many.loom"); });
  ASSERT_EQ(ds.size(), 3u) << all_text(ds);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"y[i]", "unknown tensor 'y'"}, {"foo(", "unknown function 'foo'"}, {"x[i];", "'x' has rank 2"}};
  auto p0 = locate(text, want[0].first), p1 = locate(text, want[1].first), p2 = locate(text, want[2].first);
  EXPECT_EQ(ds[0].where.line, p0.line);
  EXPECT_EQ(ds[0].where.column, p0.column);
  EXPECT_NE(ds[0].message.find(want[0].second), std::string::npos);
  EXPECT_EQ(ds[1].where.line, p1.line);
  EXPECT_EQ(ds[1].where.column, p1.column);
  EXPECT_NE(ds[1].message.find(want[1].second), std::string::npos);
  EXPECT_EQ(ds[2].where.line, p2.line);
  EXPECT_EQ(ds[2].where.column, p2.column);
  EXPECT_NE(ds[2].message.find(want[2].second), std::string::npos);
  for (const auto& d : ds) EXPECT_EQ(d.where.file, "many.loom");
}

TEST(ParserErrors, OneBadFileFailsTheWholeLibrary) {
  TempDir dir;
  std::string good = dir.write("good.loom", "op fine(x: [m]) -> [m] {\n  out[i] = x[i];\n}\n");
  std::string bad = dir.write("bad.loom", "op broken(x: [m]) -> [m] {\n  out[i] = x[i] * zz[i];\n}\n");
  auto ds = diagnostics_of([&] { Library::load({dir.path().string()}); });
  ASSERT_EQ(ds.size(), 1u) << all_text(ds);
  EXPECT_EQ(std::filesystem::path(ds[0].where.file).filename(), "bad.loom");
  EXPECT_EQ(ds[0].where.line, 2);
  EXPECT_NE(ds[0].message.find("unknown tensor 'zz'"), std::string::npos);
  // The good file on its own loads.
  EXPECT_TRUE(Library::load({good}).has_op("fine"));
  // A file importing the bad one fails as well, the error pointing into the imported file.
  std::string user = dir.write("sub/user.loom", "import \"../bad.loom\";\nop other(x: [m]) -> [m] {\n  out[i] = x[i];\n}\n");
  auto ds2 = diagnostics_of([&] { Library::load({user}); });
  ASSERT_EQ(ds2.size(), 1u) << all_text(ds2);
  EXPECT_EQ(std::filesystem::path(ds2[0].where.file).filename(), "bad.loom");
  // A syntax error in one of two files fails the load too, naming that file.
  TempDir dir2;
  dir2.write("ok.loom", "op fine(x: [m]) -> [m] {\n  out[i] = x[i];\n}\n");
  dir2.write("syntax.loom", "op broken(x: [m]) -> [m] {\n  out[i] = ;\n}\n");
  auto ds3 = diagnostics_of([&] { Library::load({dir2.path().string()}); });
  ASSERT_FALSE(ds3.empty());
  for (const auto& d : ds3) EXPECT_EQ(std::filesystem::path(d.where.file).filename(), "syntax.loom") << d.to_string();
}

TEST(ParserErrors, MissingImportNamedAtTheImport) {
  const std::string text = "op f(x: [m]) -> [m] {\n  out[i] = x[i];\n}\nimport \"does/not/exist.loom\";\n";
  TempDir dir;
  auto ds = diagnostics_of([&] { Library::from_text(text, "imp.loom", dir.path().string()); });
  ASSERT_EQ(ds.size(), 1u) << all_text(ds);
  auto want = locate(text, "import");
  EXPECT_EQ(ds[0].where.file, "imp.loom");
  EXPECT_EQ(ds[0].where.line, want.line);
  EXPECT_EQ(ds[0].where.column, want.column);
  EXPECT_NE(ds[0].message.find("cannot open imported file"), std::string::npos);
}

TEST(ParserErrors, AParallelFormMustAgreeWithItself) {
  // Splits a dimension but says it sums, and "undoes" it by copying.
  const std::string text =
      "parallel shard<dim: int in 0..3, degree: int in {2, 4}>(x) {\n"
      "  D[dim] *= degree;\n"
      "  values sum;\n"
      "  backward copies<degree>;\n"
      "  lowers_to scatter;\n"
      "}\n"
      "parallel copies<degree: int in {2, 4}>(x) {\n"
      "  R *= degree;\n"
      "  values copy;\n"
      "  backward copies<2>;\n"
      "  lowers_to broadcast;\n"
      "}\n";
  std::string all;
  try {
    Library::from_text(text, "bad.loom");
    FAIL() << "contradicting parallel forms loaded";
  } catch (const LoomError& e) {
    all = e.what();
  }
  EXPECT_NE(
      all.find("bad.loom:2:3: parallel form 'shard' declares `values sum`, which needs exactly one update V /=, but it changes D[...] *="),
      std::string::npos)
      << all;
  EXPECT_NE(all.find("bad.loom:10:12: parallel form 'copies' (`values copy`) needs a backward form with `values sum`"), std::string::npos)
      << all;
}

TEST(ParserErrors, AFormMustLowerToACollectiveTheRuntimeKnows) {
  const std::string text =
      "parallel shard<dim: int in 0..3, degree: int in {2, 4}>(x) {\n"
      "  D[dim] *= degree;\n"
      "  values split;\n"
      "  backward unshard<dim, degree>;\n"
      "  lowers_to teleport;\n"
      "}\n"
      "parallel unshard<dim: int in 0..3, degree: int in {2, 4}>(x) {\n"
      "  D[dim] /= degree;\n"
      "  values concat;\n"
      "  backward shard<dim, degree>;\n"
      "  lowers_to gather;\n"
      "}\n"
      "fused twice<degree: int in {2, 4}>(x) = unshard<0, degree>(shard<0, degree>(x)) lowers_to nccl_magic;\n";
  std::string all;
  try {
    Library::from_text(text, "bad.loom");
    FAIL() << "forms lowering to unknown collectives loaded";
  } catch (const LoomError& e) {
    all = e.what();
  }
  EXPECT_NE(all.find("bad.loom:1:10: 'shard' lowers to 'teleport', which is not a collective the runtime knows (known: scatter, gather,"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("bad.loom:13:7: 'twice' lowers to 'nccl_magic'"), std::string::npos) << all;
  EXPECT_EQ(all.find("'unshard' lowers to"), std::string::npos) << all;
}

TEST(KnownCollectives, EachCollectiveCallHasTheNameItsFusedFormLowersTo) {
  for (const pcg::Collective call : {pcg::Collective::allreduce, pcg::Collective::reduce_scatter, pcg::Collective::all_gather}) {
    const std::string name(pcg::collective_name(call));
    const auto* fused = test::bundled().find_fused(name);
    ASSERT_NE(fused, nullptr) << name;
    EXPECT_EQ(fused->lowers_to, name);
    ASSERT_NE(pcg::find_known_collective(name), nullptr);
    EXPECT_EQ(pcg::find_known_collective(name)->call, call);
  }
}

TEST(ParserErrors, TheBundledParallelFormsAgreeWithThemselves) {
  EXPECT_NO_THROW(Library::load({Library::default_specs_dir() + "/ops/parallel.loom"}));
}

TEST(ParserErrors, TwoCopiesOfOneFileAreOneFile) {
  // The checkout's specs/ imported next to a copy installed elsewhere declares nothing twice.
  test::TempDir dir;
  std::ifstream in(Library::default_specs_dir() + "/ops/core.loom");
  std::stringstream core;
  core << in.rdbuf();
  dir.write("installed/core.loom", core.str());
  const std::string main = dir.write("model.loom", "import \"installed/core.loom\";\nimport \"" + Library::default_specs_dir() +
                                                       "/ops/core.loom\";\nop twice(x: [n]) -> [n] { out[i] = x[i] + x[i]; }\n");
  const Library lib = Library::load({main});
  EXPECT_TRUE(lib.find_op("relu"));
  EXPECT_TRUE(lib.find_op("twice"));
}

}  // namespace
}  // namespace loom::spec
