// Inception-v3 (Szegedy et al. 2016; Unity's and FlexFlow's evaluations) as torchvision builds it,
// without the auxiliary classifier: every convolution is conv -> batch norm -> relu, modules
// A (x3), B, C (x4), D, E (x2), concatenating their branches along the channels.
#include "zoo/cnn_common.hpp"
#include "zoo/layers.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

class InceptionBuilder {
 public:
  InceptionBuilder(GraphBuilder& b, const Channels& ch) : b_(b), ch_(ch) {}

  // A conv -> bn -> relu with a kh x kw kernel, `stride`, padding (ph, pw).
  PortRef conv(PortRef x, std::int64_t out, std::int64_t kh, std::int64_t kw, const std::string& name, std::int64_t stride = 1,
               std::int64_t ph = 0, std::int64_t pw = 0) {
    return layers::conv_bn(b_, x, layers::ConvSpec{ch_(out), kh, kw, stride, ph, pw}, name);
  }

  PortRef module_a(PortRef x, std::int64_t pool_features, const std::string& name) {
    GraphBuilder::Scope scope(b_, name);
    PortRef b1 = conv(x, 64, 1, 1, "branch1x1");
    PortRef b5 = conv(conv(x, 48, 1, 1, "branch5x5_1"), 64, 5, 5, "branch5x5_2", 1, 2, 2);
    PortRef b3 = conv(x, 64, 1, 1, "branch3x3dbl_1");
    b3 = conv(b3, 96, 3, 3, "branch3x3dbl_2", 1, 1, 1);
    b3 = conv(b3, 96, 3, 3, "branch3x3dbl_3", 1, 1, 1);
    PortRef bp = conv(avg_pool(b_, x, 3, 1, 1), pool_features, 1, 1, "branch_pool");
    return layers::concat_all(b_, {b1, b5, b3, bp}, 1);
  }

  PortRef module_b(PortRef x, const std::string& name) {
    GraphBuilder::Scope scope(b_, name);
    PortRef b3 = conv(x, 384, 3, 3, "branch3x3", 2);
    PortRef bd = conv(x, 64, 1, 1, "branch3x3dbl_1");
    bd = conv(bd, 96, 3, 3, "branch3x3dbl_2", 1, 1, 1);
    bd = conv(bd, 96, 3, 3, "branch3x3dbl_3", 2);
    return layers::concat_all(b_, {b3, bd, max_pool(b_, x, 3, 2, 0)}, 1);
  }

  PortRef module_c(PortRef x, std::int64_t c7, const std::string& name) {
    GraphBuilder::Scope scope(b_, name);
    PortRef b1 = conv(x, 192, 1, 1, "branch1x1");
    PortRef b7 = conv(x, c7, 1, 1, "branch7x7_1");
    b7 = conv(b7, c7, 1, 7, "branch7x7_2", 1, 0, 3);
    b7 = conv(b7, 192, 7, 1, "branch7x7_3", 1, 3, 0);
    PortRef bd = conv(x, c7, 1, 1, "branch7x7dbl_1");
    bd = conv(bd, c7, 7, 1, "branch7x7dbl_2", 1, 3, 0);
    bd = conv(bd, c7, 1, 7, "branch7x7dbl_3", 1, 0, 3);
    bd = conv(bd, c7, 7, 1, "branch7x7dbl_4", 1, 3, 0);
    bd = conv(bd, 192, 1, 7, "branch7x7dbl_5", 1, 0, 3);
    PortRef bp = conv(avg_pool(b_, x, 3, 1, 1), 192, 1, 1, "branch_pool");
    return layers::concat_all(b_, {b1, b7, bd, bp}, 1);
  }

  PortRef module_d(PortRef x, const std::string& name) {
    GraphBuilder::Scope scope(b_, name);
    PortRef b3 = conv(conv(x, 192, 1, 1, "branch3x3_1"), 320, 3, 3, "branch3x3_2", 2);
    PortRef b7 = conv(x, 192, 1, 1, "branch7x7x3_1");
    b7 = conv(b7, 192, 1, 7, "branch7x7x3_2", 1, 0, 3);
    b7 = conv(b7, 192, 7, 1, "branch7x7x3_3", 1, 3, 0);
    b7 = conv(b7, 192, 3, 3, "branch7x7x3_4", 2);
    return layers::concat_all(b_, {b3, b7, max_pool(b_, x, 3, 2, 0)}, 1);
  }

  PortRef module_e(PortRef x, const std::string& name) {
    GraphBuilder::Scope scope(b_, name);
    PortRef b1 = conv(x, 320, 1, 1, "branch1x1");
    PortRef b3 = conv(x, 384, 1, 1, "branch3x3_1");
    b3 = layers::concat_all(b_, {conv(b3, 384, 1, 3, "branch3x3_2a", 1, 0, 1), conv(b3, 384, 3, 1, "branch3x3_2b", 1, 1, 0)}, 1);
    PortRef bd = conv(x, 448, 1, 1, "branch3x3dbl_1");
    bd = conv(bd, 384, 3, 3, "branch3x3dbl_2", 1, 1, 1);
    bd = layers::concat_all(b_, {conv(bd, 384, 1, 3, "branch3x3dbl_3a", 1, 0, 1), conv(bd, 384, 3, 1, "branch3x3dbl_3b", 1, 1, 0)}, 1);
    PortRef bp = conv(avg_pool(b_, x, 3, 1, 1), 192, 1, 1, "branch_pool");
    return layers::concat_all(b_, {b1, b3, bd, bp}, 1);
  }

 private:
  GraphBuilder& b_;
  const Channels& ch_;
};

pcg::Graph build_inception(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  Channels ch("inception_v3", p("width_div"));
  InceptionBuilder m(b, ch);
  PortRef x = image_input(b, p);
  x = m.conv(x, 32, 3, 3, "Conv2d_1a_3x3", 2);
  x = m.conv(x, 32, 3, 3, "Conv2d_2a_3x3");
  x = m.conv(x, 64, 3, 3, "Conv2d_2b_3x3", 1, 1, 1);
  x = max_pool(b, x, 3, 2, 0);
  x = m.conv(x, 80, 1, 1, "Conv2d_3b_1x1");
  x = m.conv(x, 192, 3, 3, "Conv2d_4a_3x3");
  x = max_pool(b, x, 3, 2, 0);
  x = m.module_a(x, 32, "Mixed_5b");
  x = m.module_a(x, 64, "Mixed_5c");
  x = m.module_a(x, 64, "Mixed_5d");
  x = m.module_b(x, "Mixed_6a");
  x = m.module_c(x, 128, "Mixed_6b");
  x = m.module_c(x, 160, "Mixed_6c");
  x = m.module_c(x, 160, "Mixed_6d");
  x = m.module_c(x, 192, "Mixed_6e");
  x = m.module_d(x, "Mixed_7a");
  x = m.module_e(x, "Mixed_7b");
  x = m.module_e(x, "Mixed_7c");
  b.output(classifier_head(b, x, p("classes"), true));
  return b.take();
}

}  // namespace

std::vector<ModelInfo> inception_models() {
  return {{"inception_v3", "Inception-v3 (Unity, FlexFlow; Szegedy et al. 2016) without the auxiliary classifier, 299x299 input",
           image_params(64, 299), build_inception}};
}

}  // namespace loom::models::zoo
