// Enumeration: counts that can be worked out by hand, well-typedness, no duplicates, fingerprints
// that identify graphs by value and degrees.
#include "support.hpp"

#include <set>

#include "../pcg/error_text.hpp"
#include "loom/superopt/enumerate.hpp"
#include "loom/superopt/fingerprint.hpp"

namespace loom::superopt::test {
namespace {

struct Enumerated {
  GeneratorOptions options;
  std::vector<InputTensor> inputs;
  OpSet ops;
  Enumeration result;
};

Enumerated enumerate(std::vector<std::string> ops, std::vector<std::string> parallel, int max_ops, const std::string& inputs) {
  Enumerated e{small_run(std::move(ops), std::move(parallel), max_ops, inputs), {}, {}, {}};
  e.inputs = e.options.inputs;
  e.ops = OpSet::build(bundled(), e.options, e.inputs);
  e.result = enumerate_graphs(bundled(), e.ops, e.inputs, e.options);
  return e;
}

// The view as a PCG; Graph::add_node asks the library to type every step.
pcg::Graph as_graph(const Enumerated& e, const GraphView& view) {
  pcg::Graph g;
  for (const auto& in : e.inputs) g.add_input(in.name, in.shape);
  std::vector<int> nodes;
  for (const Step& s : view.steps) {
    std::vector<pcg::PortRef> args;
    for (std::size_t i = 0; i < s.argc; ++i) {
      const TensorRef r = s.args[i];
      args.push_back(is_input_ref(r) ? pcg::PortRef{static_cast<int>(input_of(r)), 0}
                                     : pcg::PortRef{nodes[node_of(r)], static_cast<int>(port_of(r))});
    }
    const OpInstance& op = e.ops.at(s.inst);
    nodes.push_back(g.add_node(bundled(), op.name, op.attrs, args));
  }
  return g;
}

TEST(Enumerate, CountsOfAUnaryChain) {
  auto e = enumerate({"relu"}, {}, 3, "x: [4, 6], y: [4, 6]");
  // relu^n(x) and relu^n(y); two separate chains never end in one sink.
  EXPECT_EQ(e.result.graphs_by_size, (std::vector<std::size_t>{0, 2, 2, 2}));
  EXPECT_EQ(e.result.graphs, 6u);
  EXPECT_EQ(e.result.views.size(), 6u + 2u);  // and the inputs themselves
}

TEST(Enumerate, CountsOfABinaryOp) {
  auto e = enumerate({"ewadd"}, {}, 1, "x: [4, 6], y: [4, 6], w: [6, 10]");
  // ewadd of (x, x), (x, y), (y, x), (y, y) and (w, w); w never meets x or y (another shape).
  EXPECT_EQ(e.result.graphs, 5u);
  auto two = enumerate({"ewadd"}, {}, 2, "x: [4, 6]");
  // ewadd(x, x), then ewadd of {a, x} in both orders and ewadd(a, a), where a = ewadd(x, x).
  EXPECT_EQ(two.result.graphs_by_size, (std::vector<std::size_t>{0, 1, 3}));
}

TEST(Enumerate, MultiOutputOpsGiveOneCandidatePerPort) {
  // split<1, 4> is the only position inside [4, 6] among the sizes {4, 6}.
  auto e = enumerate({"split"}, {}, 2, "x: [4, 6]");
  EXPECT_EQ(e.result.graphs, 1u);
  ASSERT_EQ(e.result.views.size(), 3u);
  std::set<std::size_t> ports;
  for (const auto& v : e.result.views)
    if (!is_input_ref(v.output)) ports.insert(port_of(v.output));
  EXPECT_EQ(ports, (std::set<std::size_t>{0, 1}));
}

TEST(Enumerate, EveryGraphIsWellTypedAndDistinct) {
  auto e = enumerate({"matmul", "relu", "ewadd", "concat", "split"}, {"partition", "combine", "replicate", "reduce"}, 2,
                     "x: [4, 6], w: [6, 10], z: [4, 6] {V: 2}, t: [4, 6] {D: [1, 2]}");
  std::set<Key128> keys;
  for (const auto& view : e.result.views) {
    EXPECT_NO_THROW(as_graph(e, view).validate(bundled()));
    EXPECT_TRUE(keys.insert(view_key(view)).second);
  }
  // Degrees restrict what composes: relu never reads z (partial sums), reduce only reads z.
  for (const auto& view : e.result.views)
    for (const Step& s : view.steps) {
      const std::string& op = e.ops.at(s.inst).name;
      if (!is_input_ref(s.args[0])) continue;
      const std::string& arg = e.inputs[input_of(s.args[0])].name;
      if (op == "relu") {
        EXPECT_NE(arg, "z");
      }
      if (op == "reduce") {
        EXPECT_EQ(arg, "z");
      }
    }
}

TEST(Enumerate, FingerprintsSeparateValuesAndDegrees) {
  auto e = enumerate({"relu"}, {"partition", "combine"}, 2, "x: [4, 6]");
  std::map<std::string, std::uint64_t> by_text;
  for (std::size_t i = 0; i < e.result.views.size(); ++i) {
    const auto& v = e.result.views[i];
    std::string text = is_input_ref(v.output) ? "x" : "";
    for (const Step& s : v.steps) text += (text.empty() ? "" : " ") + e.ops.at(s.inst).describe();
    by_text[text] = e.result.fingerprints[i];
  }
  // Same value and degrees: equal. Same value, other degrees: different. Other value: different.
  EXPECT_EQ(by_text.at("x"), by_text.at("partition<0, 2> combine<0, 2>"));
  EXPECT_NE(by_text.at("x"), by_text.at("partition<0, 2>"));
  EXPECT_NE(by_text.at("x"), by_text.at("relu"));
  EXPECT_EQ(by_text.at("partition<0, 2> relu"), by_text.at("relu partition<0, 2>"));
}

TEST(Enumerate, TruncatedFingerprintsKeepTheLowBits) {
  EXPECT_EQ(truncate_fingerprint(0xFFFFu, 4), 0xFu);
  EXPECT_EQ(truncate_fingerprint(0x1234u, 64), 0x1234u);
}

TEST(Inputs, ParsesBindersWithDegrees) {
  auto in = parse_inputs("x: [4, 6], z: [4, 6] {V: 2}, t: [4, 6] {D: [1, 2], R: 2}");
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].shape, pcg::ParallelShape::unpartitioned({4, 6}));
  EXPECT_EQ(in[1].shape.V, 2);
  EXPECT_EQ(in[2].shape.D, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(in[2].shape.R, 2);
}

std::string input_error(const std::string& text) {
  return pcg::test_support::error_of([&] { parse_inputs(text); });
}

TEST(Inputs, BadInputsNameThePlaceAndCause) {
  EXPECT_NE(input_error("x: [4, q]").find("--inputs:1:8: "), std::string::npos) << input_error("x: [4, q]");
  EXPECT_NE(input_error("x: [4, 6] {D: [2]}").find("D lists 1 degrees for rank 2"), std::string::npos);
  EXPECT_NE(input_error("x: [4, 6], x: [4, 6]").find("declared twice"), std::string::npos);
  EXPECT_NE(input_error("x: [3, 6] {D: [2, 1]}").find("--inputs:1:"), std::string::npos);
  EXPECT_NE(input_error("x: [4, 6").find("--inputs:"), std::string::npos);
  EXPECT_NE(input_error("x").find("give input 'x' a shape"), std::string::npos);
}

TEST(OpSetBuild, UnknownOrMisplacedNamesAreRejected) {
  GeneratorOptions o;
  o.ops = {"relu", "nosuchop"};
  EXPECT_THROW(OpSet::build(bundled(), o, default_inputs(2)), LoomError);
  o.ops = {"partition"};
  try {
    OpSet::build(bundled(), o, default_inputs(2));
    FAIL();
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("list it under --parallel"), std::string::npos);
  }
  // Equal values, different gradients: no rule may be found through a stop-gradient.
  o.ops = {"relu", "stop_gradient"};
  try {
    OpSet::build(bundled(), o, default_inputs(2));
    FAIL();
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("'stop_gradient' has a @detached input"), std::string::npos) << e.what();
  }
  o.ops = {};
  o.parallel = {"replicate"};
  o.degrees = {1};
  EXPECT_THROW(OpSet::build(bundled(), o, default_inputs(2)), LoomError);  // declared degrees are 2..1024
}

}  // namespace
}  // namespace loom::superopt::test
