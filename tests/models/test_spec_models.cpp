// Models written in the spec language: the bundled ones build the same graphs as the zoo's C++
// builders at any sizes; a model's names, loops, projections and user operators; and every
// mistake a model can hold is refused at its place.
#include <filesystem>

#include "../pcg/error_text.hpp"
#include "loom/interpreter/model_graph.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/graph_hash.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

using pcg::test_support::contains;
using pcg::test_support::error_of;

const std::string kImports = "import \"" LOOM_SPECS_DIR "/ops/core.loom\";\nimport \"" LOOM_SPECS_DIR
                             "/ops/linalg.loom\";\nimport \"" LOOM_SPECS_DIR "/ops/shape.loom\";\n";

spec::Library library_with(const std::string& text) { return spec::Library::from_text(kImports + text, "models.loom"); }

// The message of what loading `text` throws, or "" when it loads.
std::string load_error(const std::string& text) {
  return error_of([&] { library_with(text); });
}

pcg::Graph spec_model(const std::string& name, const ParamValues& sizes) {
  const spec::ModelDecl* decl = library().find_model(name);
  if (!decl) throw LoomError("the bundled library declares no model " + name);
  return spec::build_model_graph(library(), *decl, sizes);
}

std::size_t weights_of(const pcg::Graph& g) {
  std::size_t n = 0;
  for (const pcg::Node& node : g.nodes()) n += node.op == pcg::kWeightOp;
  return n;
}

struct SameGraph {
  std::string model;
  ParamValues zoo_sizes;
  ParamValues spec_sizes;
};

class SpecZooModel : public ::testing::TestWithParam<SameGraph> {};

TEST_P(SpecZooModel, BuildsTheSameGraphAsTheCppBuilder) {
  const SameGraph& c = GetParam();
  const pcg::Graph zoo = build_model(library(), c.model, c.zoo_sizes);
  const pcg::Graph written = spec_model(c.model, c.spec_sizes);
  EXPECT_EQ(written.size(), zoo.size());
  EXPECT_EQ(written.operator_count(), zoo.operator_count());
  EXPECT_EQ(weights_of(written), weights_of(zoo));
  EXPECT_EQ(pcg::unnamed_graph_hash(written), pcg::unnamed_graph_hash(zoo));
  EXPECT_NO_THROW(written.validate(library()));
}

INSTANTIATE_TEST_SUITE_P(Sizes, SpecZooModel,
                         ::testing::Values(SameGraph{"mlp_fig1", {}, {}},
                                           SameGraph{"mlp_fig1",
                                                     {{"batch", 3}, {"in", 7}, {"hidden", 5}, {"out", 2}},
                                                     {{"batch", 3}, {"in_features", 7}, {"hidden", 5}, {"out", 2}}},
                                           SameGraph{"mlp", {}, {}},
                                           SameGraph{"mlp", {{"layers", 1}, {"in", 6}}, {{"layers", 1}, {"in_features", 6}}},
                                           SameGraph{"mlp", {{"layers", 3}, {"hidden", 12}}, {{"layers", 3}, {"hidden", 12}}},
                                           SameGraph{"candle_uno", {}, {}},
                                           SameGraph{"candle_uno",
                                                     {{"feature_layers", 2}, {"dense_layers", 0}, {"feature_width", 16}},
                                                     {{"feature_layers", 2}, {"dense_layers", 0}, {"feature_width", 16}}}),
                         [](const auto& info) { return info.param.model + "_" + std::to_string(info.index); });

TEST(SpecZooModel, AnotherSizeGivesAnotherGraph) {
  EXPECT_NE(pcg::unnamed_graph_hash(spec_model("mlp", {{"layers", 2}})), pcg::unnamed_graph_hash(build_model(library(), "mlp", {})));
}

TEST(SpecModel, NamesInsideLoopsAreScopedByIteration) {
  const spec::Library lib = library_with(R"(
model stack<batch = 2, width = 4, depth = 3> {
  input x: [batch, width];
  let h = x;
  for layer < depth {
    weight w: [width, width];
    h = relu(matmul(h, w));
  }
  output y = softmax(h);
})");
  const pcg::Graph g = spec::build_model_graph(lib, *lib.find_model("stack"), {{"depth", 4}});
  for (int layer = 0; layer < 4; ++layer) {
    ASSERT_TRUE(g.find("layer" + std::to_string(layer) + ".w")) << layer;
    ASSERT_TRUE(g.find("layer" + std::to_string(layer) + ".h")) << layer;
    EXPECT_EQ(g.node(*g.find("layer" + std::to_string(layer) + ".h")).op, "relu");
  }
  EXPECT_FALSE(g.find("layer4.w"));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.node(g.outputs()[0].node).name, "y");
  EXPECT_EQ(g.shape_of(g.outputs()[0]).dims, (std::vector<std::int64_t>{2, 4}));
}

TEST(SpecModel, NestedLoopsScopeNamesByEveryIteration) {
  const spec::Library lib = library_with(R"(
model grid<b = 2> {
  input x: [b];
  let h = x;
  for i < 2 {
    for j < 3 {
      weight w: [b];
      h = ewadd(h, w);
    }
  }
  output h;
})");
  const pcg::Graph g = spec::build_model_graph(lib, *lib.find_model("grid"));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(g.find("i" + std::to_string(i) + ".j" + std::to_string(j) + ".w")) << i << " " << j;
  EXPECT_EQ(g.operator_count(), 6u);
}

TEST(SpecModel, AttributesTakeSizesAndOutputsArePickedByNameOrPosition) {
  const spec::Library lib = library_with(R"(
op halves(x: [n, m]) -> (low: [n, m / 2], high: [n, m / 2]) {
  require m % 2 == 0;
  low[i, j] = x[i, j];
  high[i, j] = x[i, j + m / 2];
}
model pieces<n = 3, h = 2, axis = 1> {
  input x: [n, 2 * h];
  let parts = halves(x);
  output joined = concat<axis>(parts.high, parts.0);
  output low = ewadd(parts.low, parts.1);
})");
  const pcg::Graph g = spec::build_model_graph(lib, *lib.find_model("pieces"));
  ASSERT_EQ(g.outputs().size(), 2u);
  const pcg::Node& joined = g.node(g.outputs()[0].node);
  EXPECT_EQ(joined.attrs.at("axis"), 1);
  EXPECT_EQ(joined.inputs[0].port, 1);
  EXPECT_EQ(joined.inputs[1].port, 0);
  EXPECT_EQ(g.shape_of(g.outputs()[0]).dims, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(g.node(g.outputs()[1].node).name, "low");
}

// What each mistake is refused with, and where.
struct Mistake {
  std::string label;
  std::string text;
  std::string place;    // file:line of the problem
  std::string message;  // part of the message
};

class SpecModelMistake : public ::testing::TestWithParam<Mistake> {};

TEST_P(SpecModelMistake, IsRefusedAtItsPlace) {
  const std::string error = load_error(GetParam().text);
  EXPECT_NE(error.find(GetParam().place), std::string::npos) << error;
  EXPECT_NE(error.find(GetParam().message), std::string::npos) << error;
}

// Line numbers count the three imports.
INSTANTIATE_TEST_SUITE_P(
    Errors, SpecModelMistake,
    ::testing::Values(
        Mistake{"unknown_name", "model m<b = 2> {\n  input x: [b, 3];\n  output y = relu(z);\n}", "models.loom:6:", "unknown name 'z'"},
        Mistake{"unknown_operator", "model m<b = 2> {\n  input x: [b, 3];\n  output y = frobnicate(x);\n}",
                "models.loom:6:", "unknown operator 'frobnicate'"},
        Mistake{"arity", "model m<b = 2> {\n  input x: [b, 3];\n  output y = matmul(x);\n}", "models.loom:6:", "takes 2 inputs, not 1"},
        Mistake{"shapes", "model m<b = 2> {\n  input x: [b, 3];\n  weight w: [4, 5];\n  output y = matmul(x, w);\n}",
                "models.loom:7:", "dimension k of input 'b' is 4 but k = 3 elsewhere"},
        Mistake{"no_output", "model m<b = 2> {\n  input x: [b, 3];\n}", "models.loom:4:", "has no output"},
        Mistake{"requirement", "model m<b = 2> {\n  require b > 4;\n  input x: [b, 3];\n  output y = relu(x);\n}",
                "models.loom:5:", "does not hold for b = 2"},
        Mistake{"nonpositive_dim", "model m<b = 0> {\n  input x: [b, 3];\n  output y = relu(x);\n}",
                "models.loom:5:", "dimension b is 0 for b = 0"},
        Mistake{"redeclared", "model m<b = 2> {\n  input x: [b, 3];\n  let x = relu(x);\n  output x;\n}",
                "models.loom:6:", "'x' is already declared"},
        Mistake{"assign_undeclared", "model m<b = 2> {\n  input x: [b, 3];\n  h = relu(x);\n  output h;\n}",
                "models.loom:6:", "'h' is not declared"},
        Mistake{"loop_local", "model m<b = 2> {\n  input x: [b, 3];\n  for i < 2 {\n    let h = relu(x);\n  }\n  output h;\n}",
                "models.loom:9:", "unknown name 'h'"},
        Mistake{"size_as_tensor", "model m<b = 2> {\n  input x: [b, 3];\n  output y = ewadd(x, b);\n}",
                "models.loom:6:", "'b' is a size, not a tensor"},
        Mistake{"literal", "model m<b = 2> {\n  input x: [b, 3];\n  output y = ewadd(x, 0.5);\n}",
                "models.loom:6:", "constants are weights or inputs"},
        Mistake{"several_outputs_as_one",
                "op two(x: [n]) -> (a: [n], c: [n]) {\n  a[i] = x[i];\n  c[i] = x[i];\n}\n"
                "model m<b = 2> {\n  input x: [b];\n  output y = relu(two(x));\n}",
                "models.loom:10:", "has 2 outputs, 0 'a', 1 'c'"},
        Mistake{"no_such_field",
                "op two(x: [n]) -> (a: [n], c: [n]) {\n  a[i] = x[i];\n  c[i] = x[i];\n}\n"
                "model m<b = 2> {\n  input x: [b];\n  output y = relu(two(x).d);\n}",
                "models.loom:10:", "no output 'd'"},
        Mistake{"output_alias", "model m<b = 2> {\n  input x: [b, 3];\n  let h = relu(x);\n  output y = h;\n}",
                "models.loom:7:", "write `output h;`"},
        Mistake{"keyword", "model m<b = 2> {\n  inptu x: [b, 3];\n  output x;\n}", "models.loom:5:", "expected 'input' or 'weight'"},
        Mistake{"twice", "model m<b = 2> {\n  input x: [b];\n  output x;\n}\nmodel m<b = 3> {\n  input x: [b];\n  output x;\n}",
                "models.loom:8:", "model 'm' is already declared at"},
        Mistake{"size_twice", "model m<b = 2, b = 3> {\n  input x: [b];\n  output x;\n}", "models.loom:4:", "size 'b' is declared twice"},
        Mistake{"sibling_loops",
                "model m<b = 2> {\n  input x: [b];\n  for l < 2 {\n    weight w: [b];\n  }\n  for l < 2 {\n    weight w: [b];\n  }\n  "
                "output x;\n}",
                "models.loom:9:", "scopes names as 'l0.', as the loop at line 6 does"},
        Mistake{"loops_alike", "model m<b = 2> {\n  input x: [b];\n  for i < 12 {\n  }\n  for i1 < 2 {\n  }\n  output x;\n}",
                "models.loom:8:", "scopes names as 'i10.'"},
        Mistake{"endless_loop", "model m<b = 2, n = 1000000000> {\n  input x: [b];\n  for i < n {\n  }\n  output x;\n}",
                "models.loom:6:", "loops run more than 1000000 times in all for b = 2, n = 1000000000"},
        Mistake{"too_many_nodes",
                "model m<b = 2> {\n  input x: [b];\n  let h = x;\n  for i < 25000 {\n    h = relu(relu(h));\n  }\n  output h;\n}",
                "models.loom:8:", "grows past 20000 nodes"},
        Mistake{"overflow", "model m<b = 4611686018427387904> {\n  input x: [b * 4];\n  output x;\n}",
                "models.loom:5:", "overflows 64-bit integers"},
        Mistake{"output_twice", "model m<b = 2> {\n  input x: [b];\n  output x;\n  output x;\n}", "models.loom:7:", "output"},
        Mistake{"let_after_assign",
                "model m<b = 2> {\n  input x: [b];\n  let h = x;\n  for layer < 2 {\n    h = relu(h);\n    let h = relu(h);\n  }\n  output "
                "h;\n}",
                "models.loom:9:", "'layer0.h' already names a node (an assignment to 'h' here)"},
        Mistake{"negated_minimum", "model m<b = 2, c = -9223372036854775807> {\n  input x: [b, -(c - 1)];\n  output x;\n}",
                "models.loom:5:", "overflows 64-bit integers"},
        Mistake{"divided_minimum", "model m<b = 2, c = -9223372036854775807> {\n  input x: [b, (c - 1) / -1];\n  output x;\n}",
                "models.loom:5:", "overflows 64-bit integers"},
        Mistake{"loop_hides", "model m<b = 2> {\n  input x: [b];\n  for b < 2 {\n  }\n  output x;\n}",
                "models.loom:6:", "'b' hides a name"}),
    [](const auto& info) { return info.param.label; });

// Models are named in a namespace of their own: a model may take the name of an operator, as
// a model of one layer often does.
TEST(SpecModel, AModelMayBeNamedAfterAnOperator) {
  const spec::Library lib = library_with("model relu<b = 2> {\n  input x: [b, 3];\n  output y = relu(x);\n}\n");
  ASSERT_NE(lib.find_model("relu"), nullptr);
  ASSERT_NE(lib.find_op("relu"), nullptr);
  EXPECT_EQ(spec::build_model_graph(lib, *lib.find_model("relu"), {}).operator_count(), 1u);
}

TEST(SpecModel, SizesItDoesNotDeclareAreRefusedWithTheOnesItHas) {
  EXPECT_TRUE(contains(error_of([] {
                         spec_model("mlp_fig1", {{"depth", 3}});
                       }),
                       "no size 'depth' (it has batch, in_features, hidden, out)"));
}

TEST(SpecModelReference, SplitsFileAndNameAndAddsTheFileToTheSpecs) {
  const auto ref = spec_model_ref("dir/my.models.loom:tiny");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->file, "dir/my.models.loom");
  EXPECT_EQ(ref->name, "tiny");
  EXPECT_FALSE(spec_model_ref("mlp_fig1"));
  EXPECT_FALSE(spec_model_ref("model.onnx"));
  EXPECT_EQ(spec_paths_for({"specs"}, "dir/my.models.loom:tiny"), (std::vector<std::string>{"specs", "dir/my.models.loom"}));
  EXPECT_EQ(spec_paths_for({"specs"}, "mlp"), (std::vector<std::string>{"specs"}));
}

TEST(SpecModelReference, LoadsTheNamedModelWithItsSizes) {
  ModelRequest request;
  request.model = std::string(LOOM_SPECS_DIR) + "/models/zoo.loom:mlp_fig1";
  request.params = {{"batch", 5}};
  const LoadedModel loaded = load_model(library(), request);
  EXPECT_EQ(loaded.graph.shape_of(loaded.graph.outputs()[0]).dims, (std::vector<std::int64_t>{5, 10}));

  request.model = std::string(LOOM_SPECS_DIR) + "/models/zoo.loom:mlp_fig2";
  request.params.clear();
  EXPECT_TRUE(
      contains(error_of([&] { load_model(library(), request); }), "declares no model 'mlp_fig2' (it declares mlp_fig1, mlp, candle_uno)"));
}

TEST(SpecModelReference, AModelOfTheSameNameInAnotherFileIsNotTaken) {
  const std::string glu = std::string(LOOM_SPECS_DIR) + "/../docs/examples/glu.loom";
  const spec::Library lib = spec::Library::load(spec_paths_for(spec::Library::paths_or_bundled({}), glu + ":glu_mlp"));
  ModelRequest request;
  request.model = glu + ":mlp";  // the bundled zoo.loom declares mlp; glu.loom does not
  EXPECT_TRUE(contains(error_of([&] { load_model(lib, request); }), "glu.loom declares no model 'mlp' (it declares glu_mlp)"));
  // Given relative to the working directory, the model is named by its absolute path, which a plan
  // made for it records.
  request.model = std::filesystem::relative(glu).string() + ":glu_mlp";
  ASSERT_TRUE(std::filesystem::path(request.model).is_relative());
  const LoadedModel loaded = load_model(lib, request);
  const std::filesystem::path file = loaded.name.substr(0, loaded.name.rfind(':'));
  EXPECT_TRUE(file.is_absolute()) << loaded.name;
  EXPECT_TRUE(std::filesystem::equivalent(file, glu)) << loaded.name;
  EXPECT_EQ(loaded.name.substr(loaded.name.rfind(':')), ":glu_mlp");

  std::filesystem::create_directories(std::filesystem::temp_directory_path() / "loom_models_dir.loom");
  request.model = (std::filesystem::temp_directory_path() / "loom_models_dir.loom").string() + ":m";
  EXPECT_TRUE(contains(error_of([&] { load_model(lib, request); }), "is a directory"));
}

TEST(SpecModelReference, AnUnknownNameListsTheZooAndTheLibrarysModels) {
  ModelRequest request;
  request.model = "nonesuch";
  EXPECT_TRUE(contains(error_of([&] { load_model(library(), request); }), "the spec library declares: mlp_fig1, mlp, candle_uno"));
}

}  // namespace
}  // namespace loom::models::test
