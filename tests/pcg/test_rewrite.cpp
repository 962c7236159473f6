#include <gtest/gtest.h>

#include <algorithm>

#include "fake_catalog.hpp"
#include "loom/pcg/graph_hash.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"

namespace loom::pcg {
namespace {

using test_support::FakeCatalog;

ParallelShape square() { return ParallelShape::unpartitioned({4, 4}); }

// Builds one side of a rule or a test graph from a small script of relu/matmul applications.
struct Builder {
  const OpCatalog& catalog;
  Graph g;
  int in(const std::string& name, ParallelShape s = square()) { return g.add_input(name, s); }
  int relu(int x, int port = 0) { return g.add_node(catalog, "relu", {}, {{x, port}}); }
  int matmul(int a, int b) { return g.add_node(catalog, "matmul", {}, {{a, 0}, {b, 0}}); }
  int split(int x, int axis) { return g.add_node(catalog, "split", {{"axis", axis}}, {{x, 0}}); }
  Builder& out(int node, int port = 0) {
    g.mark_output({node, port});
    return *this;
  }
};

Rule make_rule(Graph lhs, Graph rhs) {
  Rule r;
  r.id = "test";
  r.lhs = std::move(lhs);
  r.rhs = std::move(rhs);
  return r;
}

// relu(relu(x)) => relu(x)
Rule relu_relu_rule(const OpCatalog& c) {
  Builder l{c, {}}, r{c, {}};
  l.out(l.relu(l.relu(l.in("x"))));
  r.out(r.relu(r.in("x")));
  return make_rule(l.g, r.g);
}

int count_op(const Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op == op; }));
}

TEST(Rewrite, AppliesAndRedirectsEveryConsumer) {
  FakeCatalog c;
  Builder b{c, {}};
  const int x = b.in("x"), w = b.in("w");
  const int top = b.relu(b.relu(x));
  b.out(b.matmul(top, w)).out(b.matmul(w, top)).out(top);
  const Rule rule = relu_relu_rule(c);
  GraphIndex index(b.g);
  auto matches = find_matches(index, rule);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].bindings.at("x"), (PortRef{x, 0}));
  auto outcome = apply_match(b.g, rule, matches[0], c);
  ASSERT_TRUE(outcome.rewrite) << outcome.declined;
  const Graph& g = outcome.rewrite->graph;
  EXPECT_NO_THROW(g.validate(c));
  EXPECT_EQ(count_op(g, "relu"), 1);
  ASSERT_EQ(g.outputs().size(), 3u);
  const int relu_id = outcome.rewrite->inserted.at(0);
  EXPECT_EQ(g.node(g.outputs()[0].node).inputs[0], (PortRef{relu_id, 0}));
  EXPECT_EQ(g.node(g.outputs()[1].node).inputs[1], (PortRef{relu_id, 0}));
  EXPECT_EQ(g.outputs()[2], (PortRef{relu_id, 0}));
}

TEST(Rewrite, DeclinesWhenAnIntermediateIsReadOutside) {
  FakeCatalog c;
  Builder b{c, {}};
  const int inner = b.relu(b.in("x"));
  b.out(b.relu(inner)).out(b.relu(inner));  // the inner relu feeds two outer ones
  GraphIndex index(b.g);
  EXPECT_TRUE(find_matches(index, relu_relu_rule(c)).empty());
  Builder chain{c, {}};
  chain.out(chain.relu(chain.relu(chain.relu(chain.in("x")))));
  GraphIndex chain_index(chain.g);
  EXPECT_EQ(find_matches(chain_index, relu_relu_rule(c)).size(), 2u);  // overlapping occurrences
}

TEST(Rewrite, AVariableUsedTwiceBindsOnePort) {
  FakeCatalog c;
  Builder l{c, {}}, r{c, {}};
  const int lx = l.in("x");
  l.out(l.matmul(lx, lx));
  const int rx = r.in("x");
  r.out(r.matmul(r.relu(rx), rx));
  const Rule rule = make_rule(l.g, r.g);
  Builder b{c, {}};
  const int x = b.in("x"), y = b.in("y");
  b.out(b.matmul(x, y)).out(b.matmul(y, y));
  GraphIndex index(b.g);
  auto matches = find_matches(index, rule);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].bindings.at("x"), (PortRef{y, 0}));
}

TEST(Rewrite, MultiOutputPatterns) {
  FakeCatalog c;
  // (relu(split.0), relu(split.1)) of split(x) => the same with the relus swapped in order.
  Builder l{c, {}}, r{c, {}};
  const int ls = l.split(l.in("x"), 0);
  const int l0 = l.relu(ls, 0), l1 = l.relu(ls, 1);
  l.out(l0).out(l1);
  const int rs = r.split(r.in("x"), 0);
  const int r1 = r.relu(rs, 1), r0 = r.relu(rs, 0);
  r.out(r0).out(r1);
  const Rule rule = make_rule(l.g, r.g);
  Builder b{c, {}};
  const int s = b.split(b.in("x", ParallelShape::unpartitioned({8, 4})), 0);
  const int a = b.relu(s, 0), d = b.relu(s, 1);
  b.out(b.matmul(a, b.in("w"))).out(d);
  GraphIndex index(b.g);
  auto matches = find_matches(index, rule);
  ASSERT_EQ(matches.size(), 1u);
  auto outcome = apply_match(b.g, rule, matches[0], c);
  ASSERT_TRUE(outcome.rewrite) << outcome.declined;
  EXPECT_NO_THROW(outcome.rewrite->graph.validate(c));
  EXPECT_EQ(count_op(outcome.rewrite->graph, "relu"), 2);
  EXPECT_EQ(graph_hash(outcome.rewrite->graph), graph_hash(b.g));  // same structure, other creation order
}

TEST(Rewrite, DeclinesIllTypedOrReshapedReplacements) {
  FakeCatalog c;
  Builder b{c, {}};
  b.out(b.relu(b.in("x", ParallelShape::unpartitioned({4, 6}))));
  GraphIndex index(b.g);
  // relu(x) => relu(matmul(x, x)): only well-typed on square x.
  Builder l{c, {}}, r{c, {}};
  l.out(l.relu(l.in("x")));
  const int rx = r.in("x");
  r.out(r.relu(r.matmul(rx, rx)));
  auto m = find_matches(index, make_rule(l.g, r.g));
  ASSERT_EQ(m.size(), 1u);
  auto outcome = apply_match(b.g, make_rule(l.g, r.g), m[0], c);
  EXPECT_FALSE(outcome.rewrite);
  EXPECT_NE(outcome.declined.find("does not fit the bound inputs"), std::string::npos) << outcome.declined;
  // relu(x) => split(x).0: a different output shape.
  Builder r2{c, {}};
  r2.out(r2.split(r2.in("x"), 0), 0);
  auto outcome2 = apply_match(b.g, make_rule(l.g, r2.g), m[0], c);
  EXPECT_FALSE(outcome2.rewrite);
  EXPECT_NE(outcome2.declined.find("where the graph has [4, 6]"), std::string::npos) << outcome2.declined;
}

TEST(Rewrite, DeclinesAReplacementThatWouldBeCyclic) {
  FakeCatalog c;
  // LHS: (relu(x), relu(z)); RHS: (matmul(relu(x), relu(z)), relu(z)): the first output now reads z.
  Builder l{c, {}}, r{c, {}};
  l.out(l.relu(l.in("x"))).out(l.relu(l.in("z")));
  const int rx = r.in("x"), rz = r.in("z");
  const int rz_relu = r.relu(rz);
  r.out(r.matmul(r.relu(rx), rz_relu)).out(rz_relu);
  const Rule rule = make_rule(l.g, r.g);
  // In the graph, z is computed from the first output: x -> relu -> E -> relu.
  // The two relus also match the other way round (x := E, z := the input), which is acyclic.
  Builder b{c, {}};
  const int x = b.in("x");
  const int a = b.relu(x);
  const int e = b.matmul(a, b.in("w"));
  b.out(b.relu(e)).out(e);
  GraphIndex index(b.g);
  auto matches = find_matches(index, rule);
  ASSERT_EQ(matches.size(), 2u);
  for (const Match& m : matches) {
    auto outcome = apply_match(b.g, rule, m, c);
    if (m.bindings.at("x") == PortRef{x, 0}) {
      EXPECT_FALSE(outcome.rewrite);
      EXPECT_NE(outcome.declined.find("cyclic"), std::string::npos) << outcome.declined;
    } else {
      ASSERT_TRUE(outcome.rewrite) << outcome.declined;
      EXPECT_NO_THROW(outcome.rewrite->graph.validate(c));
    }
  }
}

TEST(Rewrite, SeededMatchingFindsExactlyTheMatchesNearTheChange) {
  FakeCatalog c;
  Builder b{c, {}};
  int v = b.in("x");
  for (int i = 0; i < 6; ++i) v = b.relu(v);
  const int w = b.in("w");
  int u = b.matmul(v, w);
  for (int i = 0; i < 3; ++i) u = b.relu(u);
  b.out(u);
  const Rule rule = relu_relu_rule(c);
  GraphIndex index(b.g);
  auto first = find_matches(index, rule);
  ASSERT_FALSE(first.empty());
  auto outcome = apply_match(b.g, rule, first[2], c);
  ASSERT_TRUE(outcome.rewrite) << outcome.declined;
  const Rewrite& rw = *outcome.rewrite;
  GraphIndex after(rw.graph);
  auto all = find_matches(after, rule);
  auto near = find_matches(after, rule, &rw.touched);
  // The seeded search returns exactly the full search's matches that contain a touched node.
  std::vector<Match> expected;
  for (const auto& m : all) {
    auto nodes = m.matched_nodes();
    if (std::any_of(nodes.begin(), nodes.end(), [&](int n) { return std::count(rw.touched.begin(), rw.touched.end(), n) > 0; }))
      expected.push_back(m);
  }
  auto sorted = [](std::vector<Match> ms) {
    std::sort(ms.begin(), ms.end(), [](const Match& a, const Match& b) { return a.nodes < b.nodes; });
    return ms;
  };
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(sorted(near), sorted(expected));
}

TEST(GraphHash, TellsStructuresApart) {
  FakeCatalog c;
  Builder a{c, {}}, b{c, {}};
  a.out(a.split(a.in("x", ParallelShape::unpartitioned({8, 8})), 0), 1);
  b.out(b.split(b.in("x", ParallelShape::unpartitioned({8, 8})), 1), 1);
  EXPECT_NE(graph_hash(a.g), graph_hash(b.g));  // another attribute
  Builder p{c, {}};
  p.out(p.split(p.in("x", ParallelShape::unpartitioned({8, 8})), 0), 0);
  EXPECT_NE(graph_hash(a.g), graph_hash(p.g));  // another port
  Builder q{c, {}};
  q.out(q.split(q.in("x", ParallelShape::unpartitioned({8, 8})), 0), 1);
  EXPECT_EQ(graph_hash(a.g), graph_hash(q.g));
}

}  // namespace
}  // namespace loom::pcg
