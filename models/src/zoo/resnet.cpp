// ResNet-101 (He et al. 2016, FlexFlow's evaluation) and ResNeXt-50 32x4d (Xie et al. 2017, Unity's
// evaluation), as torchvision builds them: bottleneck blocks with the stride on the 3x3
// convolution, batch normalization after every convolution, a 1x1 projection shortcut where the
// shape changes.
#include "zoo/cnn_common.hpp"
#include "zoo/layers.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

using layers::ConvSpec;

struct ResNetShape {
  std::vector<std::int64_t> blocks;  // bottleneck blocks per stage
  std::int64_t groups = 1;           // grouped 3x3 convolution (ResNeXt's cardinality)
  std::int64_t width_per_group = 64;
};

PortRef bottleneck(GraphBuilder& b, PortRef x, std::int64_t width, std::int64_t out_channels, std::int64_t stride, std::int64_t groups,
                   const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  PortRef y = layers::conv_bn(b, x, ConvSpec{width, 1, 1}, "conv1");
  y = layers::conv_bn(b, y, ConvSpec{width, 3, 3, stride, 1, 1, groups}, "conv2");
  y = layers::conv_bn(b, y, ConvSpec{out_channels, 1, 1}, "conv3", false);
  PortRef shortcut = x;
  if (stride != 1 || b.dim(x, 1) != out_channels) {
    shortcut = layers::conv_bn(b, x, ConvSpec{out_channels, 1, 1, stride}, "downsample", false);
  }
  return b.op("relu", {b.op("ewadd", {y, shortcut}, {}, "add")});
}

pcg::Graph build_resnet(const spec::Library& lib, const Params& p, const ResNetShape& shape, const std::string& model) {
  GraphBuilder b(lib);
  Channels ch(model, p("width_div"));
  PortRef x = image_input(b, p);
  x = layers::conv_bn(b, x, ConvSpec{ch(64), 7, 7, 2, 3, 3}, "stem");
  x = max_pool(b, x, 3, 2, 1);
  for (std::size_t stage = 0; stage < shape.blocks.size(); ++stage) {
    const std::int64_t planes = std::int64_t{64} << stage;
    const std::int64_t width = ch(planes * shape.width_per_group / 64 * shape.groups);
    for (std::int64_t block = 0; block < shape.blocks[stage]; ++block) {
      const std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      x = bottleneck(b, x, width, ch(planes * 4), stride, shape.groups, "layer" + std::to_string(stage + 1) + "." + std::to_string(block));
    }
  }
  b.output(classifier_head(b, x, p("classes"), false));
  return b.take();
}

}  // namespace

std::vector<ModelInfo> resnet_models() {
  std::vector<ModelParam> resnext_params = image_params(64, 224);
  resnext_params.push_back({"groups", 32, "cardinality: groups of the 3x3 convolutions"});
  return {
      {"resnext50", "ResNeXt-50 32x4d (Unity; Xie et al. 2017): bottlenecks [3, 4, 6, 3] with grouped 3x3 convolutions", resnext_params,
       [](const spec::Library& lib, const Params& p) {
         return build_resnet(lib, p, {{3, 4, 6, 3}, p("groups"), 128 / p("groups")}, "resnext50");
       }},
      {"resnet101", "ResNet-101 (FlexFlow; He et al. 2016): bottlenecks [3, 4, 23, 3]", image_params(64, 224),
       [](const spec::Library& lib, const Params& p) {
         return build_resnet(lib, p, {{3, 4, 23, 3}, 1, 64}, "resnet101");
       }},
  };
}

}  // namespace loom::models::zoo
