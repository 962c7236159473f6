// AlexNet (Krizhevsky et al. 2012; FlexFlow's evaluation) as torchvision builds it: five
// convolutions with biases and ReLUs, three max pools, three fully connected layers. At 224x224
// the last feature map is 6x6, so torchvision's adaptive 6x6 average pool is the identity and is
// left out; other image sizes feed the flattened map to the first fully connected layer.
#include "zoo/cnn_common.hpp"
#include "zoo/layers.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

using layers::Activation;
using layers::ConvSpec;

pcg::Graph build_alexnet(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  Channels ch("alexnet", p("width_div"));
  PortRef x = image_input(b, p);
  auto conv_relu = [&](PortRef in, std::int64_t out, std::int64_t k, std::int64_t stride, std::int64_t pad, const std::string& name) {
    return b.op("relu", {layers::conv(b, in, ConvSpec{ch(out), k, k, stride, pad, pad, 1, true}, name)});
  };
  x = max_pool(b, conv_relu(x, 64, 11, 4, 2, "features.0"), 3, 2, 0);
  x = max_pool(b, conv_relu(x, 192, 5, 1, 2, "features.3"), 3, 2, 0);
  x = conv_relu(x, 384, 3, 1, 1, "features.6");
  x = conv_relu(x, 256, 3, 1, 1, "features.8");
  x = max_pool(b, conv_relu(x, 256, 3, 1, 1, "features.10"), 3, 2, 0);
  x = b.op("dropout", {b.op("flatten", {x})});
  x = b.op("dropout", {layers::dense(b, x, ch(4096), "classifier.1", true, Activation::Relu)});
  x = layers::dense(b, x, ch(4096), "classifier.4", true, Activation::Relu);
  x = layers::dense(b, x, p("classes"), "classifier.6", true);
  b.output(b.op("softmax", {x}, {}, "softmax"));
  return b.take();
}

}  // namespace

std::vector<ModelInfo> alexnet_models() {
  return {{"alexnet", "AlexNet (FlexFlow; Krizhevsky et al. 2012), torchvision's layer sizes, 224x224 input", image_params(256, 224),
           build_alexnet}};
}

}  // namespace loom::models::zoo
