#pragma once
// Layers shared by the zoo's builders, each a few operators of the spec library with its weights
// named under the layer's name (PyTorch-style: "fc1.weight", "bn1.running_var").
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph_builder.hpp"

namespace loom::models::layers {

enum class Activation { None, Relu, Sigmoid, Tanh, Gelu };

// Applies an activation as its own operator (none: returns x).
PortRef activate(GraphBuilder& b, PortRef x, Activation act);

// A fully connected layer on the last dimension: matmul for a matrix without bias, linear with a
// bias, linear_nobias for higher ranks; then the activation.
PortRef dense(GraphBuilder& b, PortRef x, std::int64_t out_features, const std::string& name, bool bias, Activation act = Activation::None);

struct ConvSpec {
  std::int64_t out_channels = 0;
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t groups = 1;
  bool bias = false;
};

// A 2-D convolution (NCHW): conv2d, or conv2d_grouped when groups > 1; a bias is added along the
// channel axis.
PortRef conv(GraphBuilder& b, PortRef x, const ConvSpec& spec, const std::string& name);

// Batch normalization with learned scale and bias and running mean and variance.
PortRef batch_norm(GraphBuilder& b, PortRef x, const std::string& name);

// conv -> batch_norm -> relu (relu optional), the basic block of ResNet and Inception.
PortRef conv_bn(GraphBuilder& b, PortRef x, const ConvSpec& spec, const std::string& name, bool relu = true);

// Concatenates along `axis` as a chain of binary concats, left to right.
PortRef concat_all(GraphBuilder& b, const std::vector<PortRef>& parts, std::int64_t axis);

// Layer normalization over the last dimension with learned gain and bias.
PortRef layer_norm(GraphBuilder& b, PortRef x, const std::string& name);

// Multi-head attention of queries from `query_in` ([.., s, hidden]) over keys and values from
// `memory` ([.., t, hidden]): per-head projections, scaled scores, softmax, weighted sum, output
// projection. Returns [.., s, hidden].
struct AttentionSpec {
  explicit AttentionSpec(std::int64_t heads_, bool causal_ = false) : heads(heads_), causal(causal_) {}
  std::int64_t heads = 1;
  bool causal = false;
  bool dropout = true;   // dropout on the probabilities (an identity at inference)
  bool qkv_bias = true;  // biases on the query, key and value projections
  bool gated = false;    // AlphaFold2: the context is gated by sigmoid(projection of the queries' input)
  // Applied to the scores [.., heads, s, t] before the softmax: relative biases, masks.
  std::function<PortRef(GraphBuilder&, PortRef)> adjust_scores;
};
PortRef attention(GraphBuilder& b, PortRef query_in, PortRef memory, const AttentionSpec& spec, const std::string& name);

// Two dense layers with an activation between: hidden -> inner -> hidden.
PortRef feed_forward(GraphBuilder& b, PortRef x, std::int64_t inner, Activation act, const std::string& name);

}  // namespace loom::models::layers
