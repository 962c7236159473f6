#include "zoo/cnn_common.hpp"

#include "loom/pcg/diagnostic.hpp"
#include "zoo/layers.hpp"

namespace loom::models::zoo {

Channels::Channels(const std::string& model, std::int64_t divisor) : model_(model), divisor_(divisor) {
  if (divisor_ < 1) throw LoomError(model_ + ": width_div must be at least 1, got " + std::to_string(divisor_));
}

std::int64_t Channels::operator()(std::int64_t published) const {
  if (published % divisor_ != 0) {
    throw LoomError(model_ + ": width_div " + std::to_string(divisor_) + " does not divide the channel count " + std::to_string(published));
  }
  return published / divisor_;
}

PortRef max_pool(GraphBuilder& b, PortRef x, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  return b.op("pool2d_max", {x}, {{"kh", kernel}, {"kw", kernel}, {"stride", stride}, {"pad", pad}});
}

PortRef avg_pool(GraphBuilder& b, PortRef x, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  return b.op("pool2d_avg", {x}, {{"kh", kernel}, {"kw", kernel}, {"stride", stride}, {"pad", pad}});
}

PortRef classifier_head(GraphBuilder& b, PortRef features, std::int64_t classes, bool dropout) {
  PortRef x = b.op("flatten", {b.op("global_avg_pool", {features}, {}, "avgpool")});
  if (dropout) x = b.op("dropout", {x});
  x = layers::dense(b, x, classes, "fc", true);
  return b.op("softmax", {x}, {}, "softmax");
}

PortRef image_input(GraphBuilder& b, const Params& p) { return b.input("image", {p("batch"), 3, p("image"), p("image")}); }

std::vector<ModelParam> image_params(std::int64_t batch, std::int64_t image) {
  return {{"batch", batch, "images per iteration"},
          {"image", image, "input height and width in pixels"},
          {"classes", 1000, "output classes"},
          {"width_div", 1, "divide every channel count by this (small test instances)"}};
}

}  // namespace loom::models::zoo
