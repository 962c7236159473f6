// Derived parallelism does not depend on how an operator is written: for every bundled operator
// with `let` intermediates, the same operator with each `let` substituted into its readers (its
// reduction variables renamed apart) accepts exactly the same splits and derives the same output
// shapes.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/numeric.hpp"
#include "loom/interpreter/parallel_rules.hpp"
#include "loom/interpreter/program.hpp"
#include "test_support.hpp"

namespace loom::spec::test {
namespace {

using Dims = std::vector<std::int64_t>;

// Substitutes `let` buffers into the expressions that read them.
class LetInliner {
 public:
  explicit LetInliner(const OpDecl& op) : op_(op) {}

  OpDecl inlined() {
    OpDecl out = op_;
    out.stmts.clear();
    for (const OpStmt& st : op_.stmts) {
      if (st.kind == OpStmtKind::Let) {
        lets_[st.name] = {st.indices, expand(st.expr)};
        continue;
      }
      OpStmt copy = st;
      copy.expr = expand(st.expr);
      out.stmts.push_back(std::move(copy));
    }
    return out;
  }

 private:
  struct Let {
    std::vector<IndexVar> indices;
    ExprPtr body;  // with the lets before it already substituted
  };

  static ExprPtr name_expr(const std::string& name, const SourceLocation& loc) {
    auto e = std::make_shared<Expr>();
    e->kind = ExprKind::Name;
    e->name = name;
    e->loc = loc;
    return e;
  }

  // `e` with every read of a let replaced by the let's body at the read's indices.
  ExprPtr expand(const ExprPtr& e) {
    if (!e) return e;
    auto copy = std::make_shared<Expr>(*e);
    for (auto& a : copy->args) a = expand(a);
    for (auto& i : copy->indices) i.expr = expand(i.expr);
    for (auto& v : copy->vars) v.bound = expand(v.bound);
    copy->fallback = expand(copy->fallback);
    if (copy->kind != ExprKind::Read) return copy;
    const auto let = lets_.find(copy->name);
    if (let == lets_.end()) return copy;
    std::map<std::string, ExprPtr> scalars;
    std::map<std::string, std::string> packs;
    for (std::size_t k = 0; k < let->second.indices.size(); ++k) {
      const IndexVar& var = let->second.indices[k];
      const IndexArg& arg = copy->indices.at(k);
      if (var.pack)
        packs[var.name] = arg.pack_name;
      else
        scalars[var.name] = arg.expr;
    }
    return substitute(let->second.body, scalars, packs);
  }

  // `e` with index names replaced, and its reduction variables renamed to fresh names.
  ExprPtr substitute(const ExprPtr& e, std::map<std::string, ExprPtr> scalars, const std::map<std::string, std::string>& packs) {
    if (!e) return e;
    if (e->kind == ExprKind::Name) {
      const auto it = scalars.find(e->name);
      return it == scalars.end() ? e : it->second;
    }
    auto copy = std::make_shared<Expr>(*e);
    for (auto& v : copy->vars) {
      v.bound = substitute(v.bound, scalars, packs);
      const std::string fresh = v.name + "_inlined" + std::to_string(++fresh_);
      scalars[v.name] = name_expr(fresh, e->loc);
      v.name = fresh;
    }
    for (auto& a : copy->args) a = substitute(a, scalars, packs);
    for (auto& i : copy->indices) {
      if (i.is_pack()) {
        if (const auto p = packs.find(i.pack_name); p != packs.end()) i.pack_name = p->second;
      } else {
        i.expr = substitute(i.expr, scalars, packs);
      }
    }
    copy->fallback = substitute(copy->fallback, scalars, packs);
    return copy;
  }

  const OpDecl& op_;
  std::map<std::string, Let> lets_;
  int fresh_ = 0;
};

std::string text_of(const std::optional<std::vector<pcg::ParallelShape>>& shapes) {
  if (!shapes) return "refused";
  std::string out;
  for (const auto& s : *shapes) out += (out.empty() ? "" : ", ") + s.to_string();
  return out;
}

bool has_let(const OpDecl& op) {
  for (const auto& st : op.stmts)
    if (st.kind == OpStmtKind::Let) return true;
  return false;
}

// Input sizes for each bundled operator written with `let`, even wherever a split may fall.
const std::map<std::string, std::vector<Dims>>& instances() {
  static const std::map<std::string, std::vector<Dims>> all = {
      {"layer_norm", {{2, 4, 6}, {6}, {6}}},
      {"layer_norm_eps", {{4, 6}, {6}, {6}, {}}},
      {"softmax", {{2, 4, 6}}},
      {"dot_attention", {{4, 6}, {4, 8, 6}}},
      {"lstm_cell", {{4, 6}, {4, 2}, {4, 2}, {6, 8}, {2, 8}, {8}}},
  };
  return all;
}

std::optional<std::vector<pcg::ParallelShape>> outputs_of(const Program& program, const std::vector<pcg::ParallelShape>& inputs) {
  try {
    return derive_output_degrees(program, inputs);
  } catch (const LoomError&) {
    return std::nullopt;
  }
}

// The bundled operator `name` compiled as written and with its lets inlined. A program refers to
// its declaration, so the inlined one is kept alive with it.
struct BothWays {
  std::shared_ptr<const OpDecl> inlined_decl;
  Program with_lets, inlined;
};

BothWays both_ways(const std::string& name, const std::vector<Dims>& dims) {
  const OpDecl* op = bundled().find_op(name);
  if (!op) throw LoomError("no bundled operator " + name);
  auto decl = std::make_shared<const OpDecl>(LetInliner(*op).inlined());
  return {decl, compile(*op, {}, dims), compile(*decl, {}, dims)};
}

TEST(LetInlining, EveryBundledOperatorWithLetsIsCovered) {
  for (const OpDecl* op : bundled().ops()) {
    if (has_let(*op)) {
      EXPECT_TRUE(instances().count(op->name)) << op->name << " has lets but no instance here";
    }
  }
}

TEST(LetInlining, TheInlinedBodyComputesTheSameValues) {
  for (const auto& [name, dims] : instances()) {
    SCOPED_TRACE(name);
    const BothWays programs = both_ways(name, dims);
    const Program& with_lets = programs.with_lets;
    const Program& inlined = programs.inlined;
    std::vector<Tensor<double>> inputs;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      Tensor<double> t(dims[i]);
      for (std::size_t k = 0; k < t.size(); ++k) t.data[k] = 0.1 * static_cast<double>((k * 7 + i * 3) % 11) - 0.4;
      inputs.push_back(std::move(t));
    }
    std::vector<const Tensor<double>*> in;
    for (const auto& t : inputs) in.push_back(&t);
    const auto want = evaluate<RealDomain>(with_lets, in);
    const auto got = evaluate<RealDomain>(inlined, in);
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(want[o].dims, got[o].dims);
      for (std::size_t k = 0; k < want[o].size(); ++k)
        EXPECT_NEAR(want[o].data[k], got[o].data[k], 1e-12) << "output " << o << " element " << k;
    }
  }
}

TEST(LetInlining, DerivedParallelismIsTheSameWithOrWithoutLets) {
  for (const auto& [name, dims] : instances()) {
    SCOPED_TRACE(name);
    const BothWays programs = both_ways(name, dims);
    const Program& with_lets = programs.with_lets;
    const Program& inlined = programs.inlined;

    const ParallelSummary a = summarize_parallelism(with_lets), b = summarize_parallelism(inlined);
    EXPECT_EQ(a.linear_inputs, b.linear_inputs);
    ASSERT_EQ(a.roles.size(), b.roles.size());
    for (std::size_t r = 0; r < a.roles.size(); ++r)
      EXPECT_EQ(a.roles[r].kind, b.roles[r].kind) << a.roles[r].input << " dim " << a.roles[r].dim;

    std::size_t accepted = 0;
    for (std::size_t input = 0; input < dims.size(); ++input) {
      for (std::size_t dim = 0; dim < dims[input].size(); ++dim) {
        SCOPED_TRACE("input " + std::to_string(input) + " dim " + std::to_string(dim));
        const auto split = split_inputs(with_lets, input, dim, 2);
        EXPECT_EQ(text_of(split), text_of(split_inputs(inlined, input, dim, 2)));
        EXPECT_EQ(text_of(outputs_of(with_lets, split)), text_of(outputs_of(inlined, split)));
        accepted += outputs_of(with_lets, split).has_value();
      }
    }
    EXPECT_GT(accepted, 0u) << "no split accepted: the comparison would say nothing";
  }
}

}  // namespace
}  // namespace loom::spec::test
