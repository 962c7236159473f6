#pragma once
// Pieces the image classifiers share: channel scaling for small test instances, pooling and the
// classifier head.
#include <cstdint>
#include <string>
#include <vector>

#include "graph_builder.hpp"
#include "loom/models/registry.hpp"

namespace loom::models::zoo {

// Channel counts divided by the model's `width_div` parameter (1 = the published widths); the
// division must be exact so that the architecture keeps its proportions.
class Channels {
 public:
  Channels(const std::string& model, std::int64_t divisor);
  std::int64_t operator()(std::int64_t published) const;

 private:
  std::string model_;
  std::int64_t divisor_;
};

PortRef max_pool(GraphBuilder& b, PortRef x, std::int64_t kernel, std::int64_t stride, std::int64_t pad);
PortRef avg_pool(GraphBuilder& b, PortRef x, std::int64_t kernel, std::int64_t stride, std::int64_t pad);

// Global average pool, flatten, (dropout), fully connected layer with bias, softmax.
PortRef classifier_head(GraphBuilder& b, PortRef features, std::int64_t classes, bool dropout);

// The image input [batch, 3, image, image] of an image classifier.
PortRef image_input(GraphBuilder& b, const Params& p);

// The common parameters of the image classifiers.
std::vector<ModelParam> image_params(std::int64_t batch, std::int64_t image);

}  // namespace loom::models::zoo
