#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "error_text.hpp"
#include "fake_catalog.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph_json.hpp"

namespace loom::pcg {
namespace {

using nlohmann::json;
using test_support::contains;
using test_support::error_of;
using test_support::FakeCatalog;

// A graph touching every feature of the format: weights, attributes, several outputs per node,
// parallel degrees, machine views, unnamed nodes and several graph outputs.
Graph sample_graph(const OpCatalog& catalog) {
  Graph g;
  ParallelShape rows = ParallelShape::unpartitioned({8, 4});
  rows.D = {2, 1};
  ParallelShape copied = ParallelShape::unpartitioned({4, 6});
  copied.R = 2;
  const int x = g.add_input("x", rows);
  const int w = g.add_input("w", copied, /*is_weight=*/true);
  const int mm = g.add_node(catalog, "matmul", {}, {{x, 0}, {w, 0}}, "fc");
  g.set_view(mm, MachineView{{3, 1}});
  const int y = g.add_input("y", ParallelShape::unpartitioned({4, 6}));
  const int halves = g.add_node(catalog, "split", {{"axis", 1}}, {{y, 0}});
  const int r = g.add_node(catalog, "relu", {}, {{halves, 1}}, "tail \"quoted\"");
  g.mark_output({mm, 0});
  g.mark_output({r, 0});
  g.mark_output({halves, 0});
  return g;
}

// The complaint about loading `j`, or "" when it loads.
std::string load_error(const json& j) {
  const FakeCatalog catalog;
  return error_of([&] { graph_from_json(j, catalog); });
}

TEST(GraphJson, RoundTripIsExact) {
  const FakeCatalog catalog;
  const Graph original = sample_graph(catalog);
  const json j = graph_to_json(original);
  const Graph loaded = graph_from_json(j, catalog);
  EXPECT_EQ(loaded, original);
  EXPECT_EQ(graph_to_json(loaded), j);
  EXPECT_EQ(graph_from_json(json::parse(j.dump(2)), catalog), original);
}

TEST(GraphJson, EmptyGraphRoundTrips) {
  const FakeCatalog catalog;
  const json j = graph_to_json(Graph{});
  EXPECT_EQ(j, json::parse(R"({"format":"loom-pcg","version":1,"nodes":[],"outputs":[]})"));
  EXPECT_EQ(graph_from_json(j, catalog), Graph{});
}

TEST(GraphJson, WritesTheDocumentedLayout) {
  const FakeCatalog catalog;
  const json j = graph_to_json(sample_graph(catalog));
  EXPECT_EQ(j.at("format"), "loom-pcg");
  EXPECT_EQ(j.at("version"), 1);
  const json& fc = j.at("nodes").at(2);
  EXPECT_EQ(fc.at("id"), 2);
  EXPECT_EQ(fc.at("op"), "matmul");
  EXPECT_EQ(fc.at("name"), "fc");
  EXPECT_EQ(fc.at("inputs"), json::parse(R"([{"node":0,"port":0},{"node":1,"port":0}])"));
  EXPECT_EQ(fc.at("view"), json::parse(R"({"devices":[3,1]})"));
  EXPECT_EQ(fc.at("output_shapes").at(0).at("D"), json::parse("[2,1]"));
  EXPECT_EQ(j.at("nodes").at(4).at("attrs"), json::parse(R"({"axis":1})"));
  EXPECT_FALSE(j.at("nodes").at(0).contains("view"));
  EXPECT_EQ(j.at("outputs").at(1), json::parse(R"({"node":5,"port":0})"));
}

TEST(GraphJson, ReadsAHandWrittenGraphWithOptionalFieldsLeftOut) {
  const FakeCatalog catalog;
  const Graph g = graph_from_json(json::parse(R"({
    "format": "loom-pcg", "version": 1,
    "nodes": [
      {"op": "input", "name": "x", "output_shapes": [{"dims": [8, 4]}]},
      {"op": "relu", "inputs": [{"node": 0, "port": 0}]}
    ],
    "outputs": [{"node": 1, "port": 0}]
  })"),
                                  catalog);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g.node(1).op, "relu");
  EXPECT_EQ(g.shape_of({1, 0}), ParallelShape::unpartitioned({8, 4}));
  EXPECT_EQ(g.outputs(), (std::vector<PortRef>{{1, 0}}));
}

class GraphJsonErrors : public ::testing::Test {
 protected:
  void SetUp() override { j = graph_to_json(sample_graph(catalog)); }

  FakeCatalog catalog;
  json j;
};

TEST_F(GraphJsonErrors, SampleLoadsBeforeAnyDamage) { EXPECT_EQ(load_error(j), ""); }

TEST_F(GraphJsonErrors, MissingVersion) {
  j.erase("version");
  EXPECT_TRUE(contains(load_error(j), "missing \"version\""));
}

TEST_F(GraphJsonErrors, UnsupportedVersion) {
  j["version"] = 2;
  EXPECT_TRUE(contains(load_error(j), "version: unsupported version 2 (this build reads version 1)"));
  j["version"] = "1";
  EXPECT_TRUE(contains(load_error(j), "unsupported version \"1\""));
}

TEST_F(GraphJsonErrors, WrongOrMissingFormat) {
  j["format"] = "onnx";
  EXPECT_TRUE(contains(load_error(j), "format: expected \"loom-pcg\", got \"onnx\""));
  j.erase("format");
  EXPECT_TRUE(contains(load_error(j), "format: expected \"loom-pcg\", got nothing"));
  EXPECT_TRUE(contains(load_error(json::array()), "must be a JSON object"));
}

TEST_F(GraphJsonErrors, UnknownOp) {
  j["nodes"][5]["op"] = "gelu";
  EXPECT_TRUE(contains(load_error(j), "nodes[5].op: unknown operator \"gelu\""));
}

TEST_F(GraphJsonErrors, DanglingNode) {
  j["nodes"][2]["inputs"][1]["node"] = 17;
  EXPECT_TRUE(contains(load_error(j), "nodes[2].inputs[1]: node 17 does not exist (there are 6 nodes)"));
  j["outputs"][0]["node"] = 17;
  j["nodes"][2]["inputs"][1]["node"] = 1;
  EXPECT_TRUE(contains(load_error(j), "outputs[0]: node 17 does not exist (there are 6 nodes)"));
}

TEST_F(GraphJsonErrors, ForwardReference) {
  j["nodes"][2]["inputs"][0]["node"] = 4;
  EXPECT_TRUE(contains(load_error(j), "nodes[2].inputs[0]: node 4 is not listed before node 2"));
}

TEST_F(GraphJsonErrors, DanglingPort) {
  j["nodes"][5]["inputs"][0]["port"] = 2;
  EXPECT_TRUE(contains(load_error(j), "nodes[5].inputs[0]: node 4 (op split) has 2 output(s)"));
  j["nodes"][5]["inputs"][0] = json::parse(R"({"node": 4})");
  EXPECT_TRUE(contains(load_error(j), "nodes[5].inputs[0]: missing \"port\""));
  j["nodes"][5]["inputs"][0] = json::parse(R"({"node": 4, "port": 1.5})");
  EXPECT_TRUE(contains(load_error(j), "nodes[5].inputs[0].port: expected an integer"));
}

TEST_F(GraphJsonErrors, WrongInputCount) {
  j["nodes"][5]["inputs"].push_back(json::parse(R"({"node": 0, "port": 0})"));
  EXPECT_TRUE(contains(load_error(j),
                       "nodes[5]: node 5 \"tail \"quoted\"\" (op relu): relu takes "
                       "1 input(s), got 2"));
}

TEST_F(GraphJsonErrors, CatalogRejection) {
  j["nodes"][1]["output_shapes"][0]["dims"] = json::parse("[5, 6]");
  EXPECT_TRUE(contains(load_error(j),
                       "nodes[2]: node 2 \"fc\" (op matmul): matmul: inner sizes "
                       "differ (4 vs 5)"));
}

TEST_F(GraphJsonErrors, StoredShapesMustMatchInference) {
  j["nodes"][2]["output_shapes"][0]["dims"] = json::parse("[8, 7]");
  EXPECT_TRUE(contains(load_error(j),
                       "nodes[2].output_shapes: stored shapes ([8/2, 7]) differ "
                       "from the inferred ([8/2, 6])"));
}

TEST_F(GraphJsonErrors, BadShape) {
  j["nodes"][0]["output_shapes"][0]["D"] = json::parse("[3, 1]");
  EXPECT_TRUE(contains(load_error(j), "nodes[0].output_shapes[0]: dimension 0 of size 8"));
}

TEST_F(GraphJsonErrors, GraphInputNeedsItsShape) {
  j["nodes"][0].erase("output_shapes");
  EXPECT_TRUE(contains(load_error(j), "nodes[0]: missing \"output_shapes\""));
  j["nodes"][0]["output_shapes"] = json::array();
  EXPECT_TRUE(contains(load_error(j), "nodes[0].output_shapes: a graph input has exactly one"));
}

TEST_F(GraphJsonErrors, GraphInputCannotReadNodes) {
  j["nodes"][3]["inputs"] = json::parse(R"([{"node": 0, "port": 0}])");
  EXPECT_TRUE(contains(load_error(j), "nodes[3].inputs: a graph input cannot read other nodes"));
}

TEST_F(GraphJsonErrors, IdMustMatchPosition) {
  j["nodes"][3]["id"] = 7;
  EXPECT_TRUE(contains(load_error(j), "nodes[3].id: node ids must equal their position"));
}

TEST_F(GraphJsonErrors, UnknownKeysAreReported) {
  j["nodes"][2]["atrs"] = json::object();
  EXPECT_TRUE(contains(load_error(j), "nodes[2].atrs: unknown key"));
  j["nodes"][2].erase("atrs");
  j["extra"] = 1;
  EXPECT_TRUE(contains(load_error(j), "extra: unknown key"));
}

TEST_F(GraphJsonErrors, AttributesAreIntegers) {
  j["nodes"][4]["attrs"]["axis"] = "one";
  EXPECT_TRUE(contains(load_error(j), "nodes[4].attrs.axis: attribute values are integers"));
}

TEST_F(GraphJsonErrors, ViewMustFitTheTasks) {
  j["nodes"][2]["view"] = json::parse(R"({"devices": [0, 1, 2]})");
  EXPECT_TRUE(contains(load_error(j),
                       "nodes[2].view: node 2 \"fc\" (op matmul): the machine view "
                       "places 3 task(s), but the node runs as 2"));
  j["nodes"][2]["view"] = json::parse(R"({"devices": [0, -1]})");
  EXPECT_TRUE(contains(load_error(j), "nodes[2].view: 'devices[1]' must be a non-negative"));
}

TEST_F(GraphJsonErrors, DuplicateNamesAndOutputs) {
  j["nodes"][3]["name"] = "x";
  EXPECT_TRUE(contains(load_error(j),
                       "nodes[3]: node 3 \"x\" (op input): the name \"x\" is "
                       "already used by node 0"));
  j["nodes"][3]["name"] = "y";
  j["outputs"].push_back(j["outputs"][0]);
  EXPECT_TRUE(contains(load_error(j), "outputs[3]: {\"node\": 2, \"port\": 0} is listed twice"));
}

TEST_F(GraphJsonErrors, NodesMustBeAnArray) {
  j.erase("nodes");
  EXPECT_TRUE(contains(load_error(j), "missing \"nodes\""));
  j["nodes"] = json::object();
  EXPECT_TRUE(contains(load_error(j), "nodes: expected an array"));
}

}  // namespace
}  // namespace loom::pcg
