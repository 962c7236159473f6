// Multi-layer perceptrons: the 2-layer MLP of Unity's figure 1 (b = 64, ci = 784, h = 512,
// co = 10, no biases) and Unity's evaluation MLP: 16 dense layers of hidden size 8192, built as
// FlexFlow's MLP benchmark does (two towers of 8 bias-free dense layers over two 1024-wide
// inputs, ReLU between layers, summed, then softmax).
#include "zoo/layers.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

using layers::Activation;

pcg::Graph build_mlp_fig1(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  PortRef x = b.input("x", {p("batch"), p("in")});
  PortRef h = layers::dense(b, x, p("hidden"), "fc1", false, Activation::Relu);
  b.output(layers::dense(b, h, p("out"), "fc2", false));
  return b.take();
}

pcg::Graph build_mlp(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  std::vector<PortRef> towers;
  for (int tower = 0; tower < 2; ++tower) {
    GraphBuilder::Scope scope(b, "tower" + std::to_string(tower));
    PortRef t = b.input("x", {p("batch"), p("in")});
    for (std::int64_t layer = 0; layer < p("layers"); ++layer) {
      const Activation act = layer + 1 == p("layers") ? Activation::None : Activation::Relu;
      t = layers::dense(b, t, p("hidden"), "dense" + std::to_string(layer), false, act);
    }
    towers.push_back(t);
  }
  b.output(b.op("softmax", {b.op("ewadd", {towers[0], towers[1]})}, {}, "softmax"));
  return b.take();
}

}  // namespace

std::vector<ModelInfo> mlp_models() {
  return {
      {"mlp",
       "Unity's MLP: 16 dense layers of hidden size 8192 (two towers of 8, as FlexFlow's MLP benchmark)",
       {{"batch", 256, "samples per iteration"},
        {"in", 1024, "input features of each tower"},
        {"hidden", 8192, "hidden size of every dense layer"},
        {"layers", 8, "dense layers per tower (two towers)"}},
       build_mlp},
      {"mlp_fig1",
       "The 2-layer MLP of Unity's figure 1: matmul, relu, matmul",
       {{"batch", 64, "b: samples per iteration"},
        {"in", 784, "ci: input features (28 x 28)"},
        {"hidden", 512, "h: hidden size"},
        {"out", 10, "co: output classes"}},
       build_mlp_fig1},
  };
}

}  // namespace loom::models::zoo
