#include "zoo/layers.hpp"

#include "loom/pcg/diagnostic.hpp"

namespace loom::models::layers {

PortRef activate(GraphBuilder& b, PortRef x, Activation act) {
  switch (act) {
    case Activation::None: return x;
    case Activation::Relu: return b.op("relu", {x});
    case Activation::Sigmoid: return b.op("sigmoid", {x});
    case Activation::Tanh: return b.op("tanh", {x});
    case Activation::Gelu: return b.op("gelu", {x});
  }
  return x;
}

PortRef dense(GraphBuilder& b, PortRef x, std::int64_t out_features, const std::string& name, bool bias, Activation act) {
  GraphBuilder::Scope scope(b, name);
  const std::int64_t in_features = b.dims(x).back();
  PortRef w = b.weight("weight", {in_features, out_features});
  PortRef y;
  if (bias) {
    y = b.op("linear", {x, w, b.weight("bias", {out_features})}, {}, "linear");
  } else if (b.rank(x) == 2) {
    y = b.op("matmul", {x, w}, {}, "matmul");
  } else {
    y = b.op("linear_nobias", {x, w}, {}, "linear");
  }
  return activate(b, y, act);
}

PortRef conv(GraphBuilder& b, PortRef x, const ConvSpec& spec, const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  const std::int64_t in_channels = b.dim(x, 1);
  if (spec.groups < 1 || in_channels % spec.groups != 0 || spec.out_channels % spec.groups != 0) {
    throw LoomError(b.scoped("conv") + ": " + std::to_string(spec.groups) + " groups do not divide " + std::to_string(in_channels) +
                    " input and " + std::to_string(spec.out_channels) + " output channels");
  }
  PortRef w = b.weight("weight", {spec.out_channels, in_channels / spec.groups, spec.kernel_h, spec.kernel_w});
  pcg::AttrMap attrs{{"stride_h", spec.stride}, {"stride_w", spec.stride}, {"pad_h", spec.pad_h}, {"pad_w", spec.pad_w}, {"act", 0}};
  PortRef y;
  if (spec.groups == 1) {
    y = b.op("conv2d", {x, w}, attrs, "conv");
  } else {
    attrs["groups"] = spec.groups;
    y = b.op("conv2d_grouped", {x, w}, attrs, "conv");
  }
  if (spec.bias) y = b.op("bias_add_axis", {y, b.weight("bias", {spec.out_channels})}, {{"axis", 1}});
  return y;
}

PortRef batch_norm(GraphBuilder& b, PortRef x, const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  const std::int64_t c = b.dim(x, 1);
  return b.op("batchnorm", {x, b.weight("weight", {c}), b.weight("bias", {c}), b.weight("running_mean", {c}), b.weight("running_var", {c})},
              {}, "batchnorm");
}

PortRef conv_bn(GraphBuilder& b, PortRef x, const ConvSpec& spec, const std::string& name, bool relu) {
  GraphBuilder::Scope scope(b, name);
  PortRef y = batch_norm(b, conv(b, x, spec, "conv"), "bn");
  return relu ? b.op("relu", {y}) : y;
}

PortRef concat_all(GraphBuilder& b, const std::vector<PortRef>& parts, std::int64_t axis) {
  PortRef out = parts.at(0);
  for (std::size_t i = 1; i < parts.size(); ++i) out = b.op("concat", {out, parts[i]}, {{"axis", axis}});
  return out;
}

PortRef layer_norm(GraphBuilder& b, PortRef x, const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  const std::int64_t n = b.dims(x).back();
  return b.op("layer_norm", {x, b.weight("weight", {n}), b.weight("bias", {n})}, {}, "layer_norm");
}

PortRef attention(GraphBuilder& b, PortRef query_in, PortRef memory, const AttentionSpec& spec, const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  const std::int64_t hidden = b.dims(query_in).back();
  const std::int64_t memory_hidden = b.dims(memory).back();
  if (spec.heads < 1 || hidden % spec.heads != 0) {
    throw LoomError(b.scoped("attention") + ": " + std::to_string(spec.heads) + " heads do not divide the hidden size " +
                    std::to_string(hidden));
  }
  const std::int64_t d = hidden / spec.heads;
  auto project = [&](PortRef in, std::int64_t in_features, const std::string& which, bool bias) {
    GraphBuilder::Scope projection(b, which);
    PortRef w = b.weight("weight", {spec.heads, in_features, d});
    if (!bias) return b.op("head_proj_nobias", {in, w}, {}, "head_proj");
    return b.op("head_proj", {in, w, b.weight("bias", {spec.heads, d})}, {}, "head_proj");
  };
  PortRef q = project(query_in, hidden, "query", spec.qkv_bias);
  PortRef k = project(memory, memory_hidden, "key", spec.qkv_bias);
  PortRef v = project(memory, memory_hidden, "value", spec.qkv_bias);
  PortRef scores = b.op("attention_scores", {q, k}, {}, "scores");
  if (spec.causal) scores = b.op("causal_mask", {scores});
  if (spec.adjust_scores) scores = spec.adjust_scores(b, scores);
  PortRef probs = b.op("softmax", {scores}, {}, "softmax");
  if (spec.dropout) probs = b.op("dropout", {probs});
  PortRef context = b.op("batch_matmul", {probs, v}, {}, "context");
  if (spec.gated) context = b.op("ewmul", {context, b.op("sigmoid", {project(query_in, hidden, "gate", true)})});
  GraphBuilder::Scope out(b, "output");
  return b.op("head_merge", {context, b.weight("weight", {spec.heads, d, hidden}), b.weight("bias", {hidden})}, {}, "head_merge");
}

PortRef feed_forward(GraphBuilder& b, PortRef x, std::int64_t inner, Activation act, const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  const std::int64_t hidden = b.dims(x).back();
  PortRef h = dense(b, x, inner, "fc1", true, act);
  return dense(b, h, hidden, "fc2", true);
}

}  // namespace loom::models::layers
