// CANDLE-Uno (Unity's evaluation; the ECP-CANDLE Pilot1 Uno benchmark) as FlexFlow builds it: seven
// inputs (two doses, cell RNA-seq, two drugs' descriptors and fingerprints); every cell and drug
// input has its own 8-layer feature encoder of width 4192; the encodings and doses are
// concatenated and go through 4 dense layers of 4192 and a 1-wide output. No biases, ReLU.
#include "zoo/layers.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

using layers::Activation;

struct UnoInput {
  std::string name;
  std::int64_t features;
  bool encoded;
};

pcg::Graph build_candle_uno(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  // FlexFlow iterates its feature map in name order; the concatenation follows it.
  const std::vector<UnoInput> inputs = {{"cell.rnaseq", 942, true},
                                        {"dose1", 1, false},
                                        {"dose2", 1, false},
                                        {"drug1.descriptors", 5270, true},
                                        {"drug1.fingerprints", 2048, true},
                                        {"drug2.descriptors", 5270, true},
                                        {"drug2.fingerprints", 2048, true}};
  std::vector<PortRef> parts;
  for (const UnoInput& in : inputs) {
    PortRef x = b.input(in.name, {p("batch"), in.features});
    if (in.encoded) {
      GraphBuilder::Scope scope(b, in.name + ".encoder");
      for (std::int64_t l = 0; l < p("feature_layers"); ++l) {
        x = layers::dense(b, x, p("feature_width"), std::to_string(l), false, Activation::Relu);
      }
    }
    parts.push_back(x);
  }
  PortRef x = layers::concat_all(b, parts, 1);
  for (std::int64_t l = 0; l < p("dense_layers"); ++l) {
    x = layers::dense(b, x, p("dense_width"), "dense" + std::to_string(l), false, Activation::Relu);
  }
  b.output(layers::dense(b, x, 1, "output", false));
  return b.take();
}

}  // namespace

std::vector<ModelInfo> candle_models() {
  return {{"candle_uno",
           "CANDLE-Uno (Unity): per-feature 8x4192 encoders for cell and drug inputs, 4x4192 dense layers",
           {{"batch", 256, "samples per iteration"},
            {"feature_layers", 8, "dense layers of each feature encoder"},
            {"feature_width", 4192, "width of the feature encoders"},
            {"dense_layers", 4, "dense layers after the concatenation"},
            {"dense_width", 4192, "width of those layers"}},
           build_candle_uno}};
}

}  // namespace loom::models::zoo
