#include "onnx_import/op_mapping.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "layout.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "onnx_import/constant_folding.hpp"
#include "onnx_import/library_epsilon.hpp"
#include "onnx_import/node_attrs.hpp"

namespace loom::models::onnx_import {
namespace {

using Handler = std::function<void(ImportContext&, const onnx::NodeProto&)>;

std::string input_name(const onnx::NodeProto& node, int i) { return i < node.input_size() ? node.input(i) : ""; }
bool has_input(const onnx::NodeProto& node, int i) { return !input_name(node, i).empty(); }

// The name of input `i`, which the operator needs.
const std::string& required_input(const onnx::NodeProto& node, int i) {
  if (i >= node.input_size() || node.input(i).empty())
    throw LoomError("input " + std::to_string(i) + " is missing (the node has " + std::to_string(node.input_size()) + ")");
  return node.input(i);
}

std::string int_text(std::int64_t v) { return std::to_string(v); }

const HostTensor& constant_input(ImportContext& cx, const onnx::NodeProto& node, int i, const std::string& what) {
  const std::string name = input_name(node, i);
  if (name.empty()) throw LoomError(what + " is missing");
  if (!cx.is_constant(name)) throw LoomError(what + " ('" + name + "') must be known at import time");
  return cx.constant(name);
}

// A constant whose elements are all equal and that broadcasts into `other` without growing it. An
// initializer of several elements is a weight, whose values training changes, even if they start
// equal (a fresh layer norm's scale of ones).
std::optional<double> uniform_constant(ImportContext& cx, const std::string& value, const Dims& other) {
  if (!cx.is_constant(value)) return std::nullopt;
  const HostTensor& t = cx.constant(value);
  if (cx.is_initializer(value) && t.size() > 1) return std::nullopt;
  if (t.data.empty() || broadcast_dims(t.dims, other) != other) return std::nullopt;
  if (std::any_of(t.data.begin(), t.data.end(), [&](double v) { return v != t.data.front(); })) return std::nullopt;
  return t.data.front();
}

PortRef scalar_port(ImportContext& cx, double v, const std::string& hint) { return cx.constant_port(HostTensor::scalar(v), hint); }

void set_output(ImportContext& cx, const onnx::NodeProto& node, PortRef port, int output = 0) {
  if (output < node.output_size() && !node.output(output).empty()) cx.set_port(node.output(output), port);
}

// ---- elementwise -------------------------------------------------------------------------------

void map_unary(ImportContext& cx, const onnx::NodeProto& node, const std::string& op) {
  set_output(cx, node, cx.builder().op(op, {cx.port(required_input(node, 0))}));
}

// x op y with numpy broadcasting; scalar constants use the scalar operators, a trailing vector
// added to a tensor is a bias_add.
PortRef binary(ImportContext& cx, const std::string& onnx_op, const std::string& a, const std::string& b, const std::string& hint) {
  GraphBuilder& g = cx.builder();
  const Dims out = broadcast_dims(cx.dims(a), cx.dims(b));
  const auto ca = uniform_constant(cx, a, cx.dims(b));
  const auto cb = uniform_constant(cx, b, cx.dims(a));
  if (cb && cx.dims(a) == out) {
    PortRef x = cx.port(a);
    if (onnx_op == "Add") return g.op("scalar_add", {x, scalar_port(cx, *cb, hint)});
    if (onnx_op == "Sub") return g.op("scalar_add", {x, scalar_port(cx, -*cb, hint)});
    if (onnx_op == "Mul") return g.op("scalar_mul", {x, scalar_port(cx, *cb, hint)});
    if (onnx_op == "Div") return g.op("scalar_mul", {x, scalar_port(cx, 1 / *cb, hint)});
  }
  if (ca && cx.dims(b) == out) {
    PortRef y = cx.port(b);
    if (onnx_op == "Add") return g.op("scalar_add", {y, scalar_port(cx, *ca, hint)});
    if (onnx_op == "Mul") return g.op("scalar_mul", {y, scalar_port(cx, *ca, hint)});
    if (onnx_op == "Sub") {
      return g.op("scalar_add", {g.op("scalar_mul", {y, scalar_port(cx, -1, hint)}), scalar_port(cx, *ca, hint)});
    }
  }
  if (onnx_op == "Add" && !out.empty()) {
    // A vector along the last dimension: bias_add.
    for (const auto& [x, v] : {std::pair{a, b}, std::pair{b, a}}) {
      const Dims vd = cx.dims(v);
      if (cx.dims(x) == out && element_count(vd) == out.back() && vd.size() <= out.size() && !vd.empty() && vd.back() == out.back()) {
        return g.op("bias_add", {cx.port(x), reshape_to(g, cx.port(v), {out.back()})});
      }
    }
  }
  static const std::map<std::string, std::string> ops = {{"Add", "ewadd"}, {"Sub", "ewsub"}, {"Mul", "ewmul"}, {"Div", "ewdiv"}};
  return g.op(ops.at(onnx_op), {broadcast_to(g, cx.port(a), out), broadcast_to(g, cx.port(b), out)});
}

void map_binary(ImportContext& cx, const onnx::NodeProto& node) {
  set_output(cx, node, binary(cx, node.op_type(), required_input(node, 0), required_input(node, 1), node.output(0) + "#operand"));
}

void map_pow(ImportContext& cx, const onnx::NodeProto& node) {
  const auto exponent = uniform_constant(cx, required_input(node, 1), cx.dims(required_input(node, 0)));
  if (!exponent) throw LoomError("Pow is supported with a constant scalar exponent only");
  PortRef x = cx.port(required_input(node, 0));
  if (*exponent == 1) return set_output(cx, node, x);
  set_output(cx, node, cx.builder().op("scalar_pow", {x, scalar_port(cx, *exponent, node.output(0) + "#exponent")}));
}

void map_clip(ImportContext& cx, const onnx::NodeProto& node) {
  const NodeAttrs attrs(node);
  double lo = -INFINITY, hi = INFINITY;
  if (cx.opset() < 11) {
    lo = attrs.get_float("min", lo);
    hi = attrs.get_float("max", hi);
  } else {
    if (has_input(node, 1)) lo = constant_input(cx, node, 1, "Clip's min").data.at(0);
    if (has_input(node, 2)) hi = constant_input(cx, node, 2, "Clip's max").data.at(0);
  }
  PortRef x = cx.port(required_input(node, 0));
  if (std::isinf(lo) && std::isinf(hi)) return set_output(cx, node, x);
  if (lo == 0 && std::isinf(hi)) return set_output(cx, node, cx.builder().op("relu", {x}));
  set_output(cx, node,
             cx.builder().op("clip", {x, scalar_port(cx, lo, node.output(0) + "#min"), scalar_port(cx, hi, node.output(0) + "#max")}));
}

void map_gelu(ImportContext& cx, const onnx::NodeProto& node) {
  if (NodeAttrs(node).get_string("approximate", "none") != "none") {
    throw LoomError("Gelu with the tanh approximation is not supported (the library's gelu is the erf form)");
  }
  map_unary(cx, node, "gelu");
}

// ---- matrix products -----------------------------------------------------------------------------

PortRef matmul(ImportContext& cx, PortRef a, PortRef b) {
  GraphBuilder& g = cx.builder();
  if (g.rank(a) == 0 || g.rank(b) == 0) throw LoomError("a matrix product of a rank-0 tensor is not defined");
  const bool vector_a = g.rank(a) == 1, vector_b = g.rank(b) == 1;
  if (vector_a) a = g.op("unsqueeze_axis", {a}, {{"axis", 0}});
  if (vector_b) b = g.op("unsqueeze_axis", {b}, {{"axis", 1}});
  PortRef y;
  if (g.rank(b) == 2) {
    y = g.rank(a) == 2 ? g.op("matmul", {a, b}) : g.op("linear_nobias", {a, b});
  } else {
    const Dims da = g.dims(a), db = g.dims(b);
    const Dims batch = broadcast_dims(Dims(da.begin(), da.end() - 2), Dims(db.begin(), db.end() - 2));
    Dims ta = batch, tb = batch;
    ta.insert(ta.end(), da.end() - 2, da.end());
    tb.insert(tb.end(), db.end() - 2, db.end());
    y = g.op("batch_matmul", {broadcast_to(g, a, ta), broadcast_to(g, b, tb)});
  }
  if (vector_b) y = g.op("squeeze_axis", {y}, {{"axis", static_cast<std::int64_t>(g.rank(y) - 1)}});
  if (vector_a) y = g.op("squeeze_axis", {y}, {{"axis", static_cast<std::int64_t>(g.rank(y) - 2)}});
  return y;
}

void map_matmul(ImportContext& cx, const onnx::NodeProto& node) {
  set_output(cx, node, matmul(cx, cx.port(required_input(node, 0)), cx.port(required_input(node, 1))));
}

// A Gemm operand, transposed and scaled as asked; a constant is transformed at import time.
PortRef gemm_operand(ImportContext& cx, const std::string& value, bool transposed, double scale) {
  GraphBuilder& g = cx.builder();
  if (cx.is_constant(value) && (transposed || scale != 1)) {
    HostTensor t = cx.constant(value);
    if (transposed) {
      onnx::NodeProto node;
      node.set_op_type("Transpose");
      t = fold_node(node, {&t}, cx.opset(), ".").front();
    }
    for (double& v : t.data) v *= scale;
    return cx.constant_port(t, value + (transposed ? "#transposed" : "#scaled"), InitializerSource{value, transposed, scale});
  }
  PortRef p = cx.port(value);
  if (transposed) p = g.op("transpose", {p});
  if (scale != 1) p = g.op("scalar_mul", {p, scalar_port(cx, scale, value + "#scale")});
  return p;
}

void map_gemm(ImportContext& cx, const onnx::NodeProto& node) {
  const NodeAttrs attrs(node);
  GraphBuilder& g = cx.builder();
  const double alpha = attrs.get_float("alpha", 1), beta = attrs.get_float("beta", 1);
  PortRef a = gemm_operand(cx, required_input(node, 0), attrs.get_int("transA", 0) != 0, 1);
  PortRef b = gemm_operand(cx, required_input(node, 1), attrs.get_int("transB", 0) != 0, alpha);
  if (!has_input(node, 2) || beta == 0) return set_output(cx, node, g.op("matmul", {a, b}));
  const std::string c = required_input(node, 2);
  const std::int64_t n = g.dim(b, 1);
  const Dims dc = cx.dims(c);
  if (element_count(dc) == n && !dc.empty() && dc.back() == n) {
    PortRef bias = reshape_to(g, gemm_operand(cx, c, false, beta), {n});
    return set_output(cx, node, g.op("linear", {a, b, bias}));
  }
  PortRef y = g.op("matmul", {a, b});
  PortRef cp = gemm_operand(cx, c, false, beta);
  const Dims out = g.dims(y);
  set_output(cx, node, g.op("ewadd", {y, broadcast_to(g, cp, out)}));
}

// ---- convolution and pooling -----------------------------------------------------------------

struct Window {
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  std::int64_t top = 0, left = 0, bottom = 0, right = 0;
};

// Kernel, strides and padding of a Conv or a pool over an NCHW input, auto_pad resolved.
Window window_of(const NodeAttrs& attrs, const Dims& input, std::int64_t kh, std::int64_t kw) {
  Window w;
  w.kh = kh;
  w.kw = kw;
  const auto strides = attrs.get_ints("strides", {1, 1});
  const auto dilations = attrs.get_ints("dilations", {1, 1});
  if (strides.size() != 2 || dilations.size() != 2) throw LoomError("only 2-D windows are supported");
  if (dilations[0] != 1 || dilations[1] != 1) throw LoomError("dilations other than 1 are not supported");
  w.sh = strides[0];
  w.sw = strides[1];
  const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    auto same = [&](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t& begin, std::int64_t& end) {
      const std::int64_t out = (in + s - 1) / s;
      const std::int64_t total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
      const std::int64_t small = total / 2, large = total - small;
      begin = auto_pad == "SAME_UPPER" ? small : large;
      end = auto_pad == "SAME_UPPER" ? large : small;
    };
    same(input[2], kh, w.sh, w.top, w.bottom);
    same(input[3], kw, w.sw, w.left, w.right);
  } else if (auto_pad == "NOTSET") {
    const auto pads = attrs.get_ints("pads", {0, 0, 0, 0});
    if (pads.size() != 4) throw LoomError("pads must have 4 entries for a 2-D window");
    w.top = pads[0];
    w.left = pads[1];
    w.bottom = pads[2];
    w.right = pads[3];
  } else if (auto_pad != "VALID") {
    throw LoomError("auto_pad " + auto_pad + " is not supported");
  }
  return w;
}

// Explicit zero padding of the spatial dimensions (for padding the operators cannot take).
PortRef zero_pad(GraphBuilder& g, PortRef x, Window& w) {
  if (w.top || w.bottom) x = g.op("pad_axis", {x}, {{"axis", 2}, {"before", w.top}, {"after", w.bottom}});
  if (w.left || w.right) x = g.op("pad_axis", {x}, {{"axis", 3}, {"before", w.left}, {"after", w.right}});
  w.top = w.bottom = w.left = w.right = 0;
  return x;
}

bool symmetric(const Window& w) { return w.top == w.bottom && w.left == w.right; }

void require_stride(const std::string& op, std::int64_t stride, const std::set<std::int64_t>& allowed) {
  if (!allowed.count(stride)) {
    std::string list;
    for (auto s : allowed) list += (list.empty() ? "" : ", ") + int_text(s);
    throw LoomError("stride " + int_text(stride) + " is not supported by " + op + " (strides " + list + ")");
  }
}

void map_conv(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  const NodeAttrs attrs(node);
  PortRef x = cx.port(required_input(node, 0));
  if (g.rank(x) != 4) throw LoomError("only 2-D convolutions (NCHW inputs) are supported");
  PortRef weight = cx.port(required_input(node, 1));
  const Dims wd = g.dims(weight);
  if (wd.size() != 4) throw LoomError("the kernel has dimensions " + dims_text(wd) + "; a 2-D convolution's has rank 4");
  const std::int64_t groups = attrs.get_int("group", 1);
  const std::int64_t channels = g.dim(x, 1);
  Window w = window_of(attrs, g.dims(x), wd.at(2), wd.at(3));
  std::string op = "conv2d";
  std::int64_t max_pad = 3;
  std::set<std::int64_t> strides{1, 2, 4};
  if (groups == channels && groups > 1 && wd[1] == 1 && wd[0] == channels) {
    op = "conv2d_depthwise";
  } else if (groups > 1) {
    op = "conv2d_grouped";
  }
  if (op != "conv2d") {
    max_pad = 2;
    strides = {1, 2};
  }
  if (w.sh != w.sw) {
    require_stride(op, w.sh, strides);
    require_stride(op, w.sw, strides);
  } else {
    require_stride(op, w.sh, strides);
  }
  if (!symmetric(w) || std::max(w.top, w.left) > max_pad) x = zero_pad(g, x, w);
  pcg::AttrMap a{{"stride_h", w.sh}, {"stride_w", w.sw}, {"pad_h", w.top}, {"pad_w", w.left}, {"act", 0}};
  if (op == "conv2d_grouped") a["groups"] = groups;
  PortRef y = g.op(op, {x, weight}, a);
  if (has_input(node, 2)) y = g.op("bias_add_axis", {y, cx.port(required_input(node, 2))}, {{"axis", 1}});
  set_output(cx, node, y);
}

void map_pool(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  const NodeAttrs attrs(node);
  const bool is_max = node.op_type() == "MaxPool";
  if (node.output_size() > 1 && !node.output(1).empty()) throw LoomError("MaxPool's indices output is not supported");
  PortRef x = cx.port(required_input(node, 0));
  if (g.rank(x) != 4) throw LoomError("only 2-D pooling (NCHW inputs) is supported");
  const auto kernel = attrs.get_ints("kernel_shape");
  if (kernel.size() != 2) throw LoomError("only 2-D pooling windows are supported");
  Window w = window_of(attrs, g.dims(x), kernel[0], kernel[1]);
  if (attrs.get_int("ceil_mode", 0) != 0) {
    for (int d = 0; d < 2; ++d) {
      const std::int64_t in = g.dim(x, static_cast<std::size_t>(2 + d)) + (d ? w.left + w.right : w.top + w.bottom);
      const std::int64_t k = d ? w.kw : w.kh, s = d ? w.sw : w.sh;
      if ((in - k) % s != 0) throw LoomError("ceil_mode = 1 changes the output size here; it is not supported");
    }
  }
  if (w.kh < 1 || w.kh > 5 || w.kw < 1 || w.kw > 5) throw LoomError("pooling windows larger than 5 are not supported");
  if (w.sh != w.sw) throw LoomError("different strides for height and width are not supported by pooling");
  require_stride(node.op_type(), w.sh, {1, 2});
  const bool even_pads = symmetric(w) && w.top == w.left;
  if (is_max) {
    if (!even_pads || w.top > 2 || w.top >= std::min(w.kh, w.kw)) {
      throw LoomError("max pooling padding must be equal on all sides, at most 2 and smaller than the window");
    }
  } else {
    const bool include_pad = attrs.get_int("count_include_pad", 0) != 0;
    if ((w.top || w.bottom || w.left || w.right) && !include_pad) {
      throw LoomError("average pooling over padding with count_include_pad = 0 is not supported");
    }
    if (!even_pads || w.top > 2) x = zero_pad(g, x, w);
  }
  set_output(cx, node, g.op(is_max ? "pool2d_max" : "pool2d_avg", {x}, {{"kh", w.kh}, {"kw", w.kw}, {"stride", w.sh}, {"pad", w.top}}));
}

void map_global_average_pool(ImportContext& cx, const onnx::NodeProto& node) {
  PortRef x = cx.port(required_input(node, 0));
  if (cx.builder().rank(x) != 4) throw LoomError("only NCHW inputs are supported");
  set_output(cx, node, cx.builder().op("global_avg_pool", {x}));
}

// ---- normalization -------------------------------------------------------------------------------

void map_batch_norm(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  const NodeAttrs attrs(node);
  if (attrs.get_int("training_mode", 0) != 0) throw LoomError("training_mode = 1 is not supported");
  for (int i = 1; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) throw LoomError("the running statistics outputs are not supported");
  }
  PortRef x = cx.port(required_input(node, 0));
  const std::size_t rank = g.rank(x);
  if (rank < 2 || rank > 4) throw LoomError("batch normalization of rank " + int_text(static_cast<std::int64_t>(rank)));
  for (std::size_t r = rank; r < 4; ++r) x = g.op("unsqueeze_axis", {x}, {{"axis", static_cast<std::int64_t>(r)}});
  // The library's epsilon is fixed; a different one is moved into the variance.
  const double library_epsilon = cx.batchnorm_epsilon(), epsilon = attrs.get_float("epsilon", 1e-5);
  const double shift = epsilon - library_epsilon;
  PortRef var;
  const std::string var_name = required_input(node, 4);
  if (same_epsilon(epsilon, library_epsilon)) {
    var = cx.port(var_name);
  } else if (cx.is_constant(var_name)) {
    HostTensor v = cx.constant(var_name);
    for (double& e : v.data) e += shift;
    var = cx.constant_port(v, var_name + "#epsilon");
  } else {
    var = g.op("scalar_add", {cx.port(var_name), scalar_port(cx, shift, var_name + "#epsilon")});
  }
  PortRef y =
      g.op("batchnorm", {x, cx.port(required_input(node, 1)), cx.port(required_input(node, 2)), cx.port(required_input(node, 3)), var});
  for (std::size_t r = 4; r-- > rank;) y = g.op("squeeze_axis", {y}, {{"axis", static_cast<std::int64_t>(r)}});
  set_output(cx, node, y);
}

void emit_layer_norm(ImportContext& cx, const std::string& x_name, const std::string& gamma, const std::string& beta, double epsilon,
                     const std::string& output) {
  GraphBuilder& g = cx.builder();
  PortRef x = cx.port(x_name);
  const std::int64_t n = g.dims(x).back();
  auto vector_or = [&](const std::string& value, double fill) {
    if (!value.empty()) return reshape_to(g, cx.port(value), {n});
    HostTensor t{{n}, std::vector<double>(static_cast<std::size_t>(n), fill), false};
    return cx.constant_port(t, output + (fill == 0 ? "#beta" : "#gamma"));
  };
  PortRef gp = vector_or(gamma, 1), bp = vector_or(beta, 0);
  PortRef y = same_epsilon(epsilon, cx.layer_norm_epsilon())
                  ? g.op("layer_norm", {x, gp, bp})
                  : g.op("layer_norm_eps", {x, gp, bp, scalar_port(cx, epsilon, output + "#epsilon")});
  cx.set_port(output, y);
}

// LayerNormalization's optional outputs: the mean and 1 / sqrt(variance + eps) over the normalized
// dimensions, kept as dimensions of size 1.
void layer_norm_statistics(ImportContext& cx, const onnx::NodeProto& node, std::size_t axis, double eps) {
  GraphBuilder& g = cx.builder();
  PortRef x = cx.port(required_input(node, 0));
  const Dims dims = g.dims(x);
  auto mean_over = [&](PortRef t) {
    for (std::size_t a = axis; a < dims.size(); ++a) t = g.op("reduce_mean_keep", {t}, {{"axis", static_cast<std::int64_t>(a)}});
    return t;
  };
  PortRef mean = mean_over(x);
  set_output(cx, node, mean, 1);
  if (node.output_size() < 3 || node.output(2).empty()) return;
  PortRef centered = g.op("ewsub", {x, broadcast_to(g, mean, dims)});
  PortRef var = mean_over(g.op("ewmul", {centered, centered}));
  PortRef shifted = g.op("scalar_add", {var, scalar_port(cx, eps, node.output(2) + "#epsilon")});
  set_output(cx, node, g.op("scalar_pow", {shifted, scalar_port(cx, -0.5, node.output(2) + "#exponent")}), 2);
}

void map_layer_norm(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  const NodeAttrs attrs(node);
  const Dims dims = cx.dims(required_input(node, 0));
  const auto axis = static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", -1), dims.size()));
  const double eps = attrs.get_float("epsilon", 1e-5);
  if (node.output_size() > 1 && !node.output(1).empty()) layer_norm_statistics(cx, node, axis, eps);
  if (axis + 1 == dims.size()) {
    emit_layer_norm(cx, required_input(node, 0), required_input(node, 1), input_name(node, 2), eps, node.output(0));
    return;
  }
  // Normalizing over several trailing dimensions: merge them, normalize, split them again.
  const std::int64_t inner = element_count(Dims(dims.begin() + static_cast<std::ptrdiff_t>(axis), dims.end()));
  Dims merged(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(axis));
  merged.push_back(inner);
  const std::string flat = node.output(0) + "#merged";
  cx.set_port(flat, reshape_to(g, cx.port(required_input(node, 0)), merged));
  const std::string out = node.output(0) + "#normalized";
  emit_layer_norm(cx, flat, required_input(node, 1), input_name(node, 2), eps, out);
  set_output(cx, node, reshape_to(g, cx.port(out), dims));
}

void map_softmax(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  PortRef x = cx.port(required_input(node, 0));
  const Dims dims = g.dims(x);
  const std::size_t rank = dims.size();
  const std::int64_t default_axis = cx.opset() < 13 ? 1 : -1;
  const auto axis = static_cast<std::size_t>(normalize_axis(NodeAttrs(node).get_int("axis", default_axis), rank));
  if (axis + 1 == rank) return set_output(cx, node, g.op("softmax", {x}));
  if (cx.opset() < 13) {
    // Older opsets: softmax over everything from `axis` on, as one flattened row.
    const std::int64_t outer = element_count(Dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(axis)));
    PortRef y = g.op("softmax", {reshape_to(g, x, {outer, element_count(dims) / outer})});
    return set_output(cx, node, reshape_to(g, y, dims));
  }
  std::vector<std::int64_t> perm;
  for (std::size_t i = 0; i < rank; ++i) {
    if (i != axis) perm.push_back(static_cast<std::int64_t>(i));
  }
  perm.push_back(static_cast<std::int64_t>(axis));
  std::vector<std::int64_t> inverse(rank);
  for (std::size_t i = 0; i < rank; ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  set_output(cx, node, permute(g, g.op("softmax", {permute(g, x, perm)}), inverse));
}

void map_reduce_mean(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  const NodeAttrs attrs(node);
  PortRef x = cx.port(required_input(node, 0));
  const std::size_t rank = g.rank(x);
  std::vector<std::int64_t> axes = attrs.get_ints("axes");
  if (has_input(node, 1)) axes = constant_input(cx, node, 1, "ReduceMean's axes").as_ints();
  if (axes.empty()) {
    for (std::size_t i = 0; i < rank; ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  std::set<std::int64_t> sorted;
  for (auto a : axes) sorted.insert(normalize_axis(a, rank));
  const bool keep = attrs.get_int("keepdims", 1) != 0;
  if (!keep && sorted.size() == 1 && *sorted.begin() + 1 == static_cast<std::int64_t>(rank)) {
    return set_output(cx, node, g.op("reduce_mean", {x}));
  }
  for (auto a : sorted) x = g.op("reduce_mean_keep", {x}, {{"axis", a}});
  if (!keep) {
    for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) x = g.op("squeeze_axis", {x}, {{"axis", *it}});
  }
  set_output(cx, node, x);
}

// ---- layout ------------------------------------------------------------------------------------

void map_reshape(ImportContext& cx, const onnx::NodeProto& node) {
  const NodeAttrs attrs(node);
  const auto shape = cx.opset() < 5 ? attrs.get_ints("shape") : constant_input(cx, node, 1, "Reshape's shape").as_ints();
  const Dims target = reshape_target(cx.dims(required_input(node, 0)), shape, attrs.get_int("allowzero", 0) != 0);
  set_output(cx, node, reshape_to(cx.builder(), cx.port(required_input(node, 0)), target));
}

void map_flatten(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  PortRef x = cx.port(required_input(node, 0));
  const Dims dims = g.dims(x);
  std::int64_t axis = NodeAttrs(node).get_int("axis", 1);
  if (axis != static_cast<std::int64_t>(dims.size())) axis = normalize_axis(axis, dims.size());
  if (dims.size() == 4 && axis == 1) return set_output(cx, node, g.op("flatten", {x}));
  const std::int64_t outer = element_count(Dims(dims.begin(), dims.begin() + axis));
  set_output(cx, node, reshape_to(g, x, {outer, element_count(dims) / std::max<std::int64_t>(outer, 1)}));
}

void map_transpose(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  PortRef x = cx.port(required_input(node, 0));
  std::vector<std::int64_t> perm = NodeAttrs(node).get_ints("perm");
  if (perm.empty()) {
    for (std::size_t i = g.rank(x); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  }
  for (auto& p : perm) p = normalize_axis(p, g.rank(x));
  set_output(cx, node, permute(g, x, perm));
}

std::vector<std::int64_t> axes_input_or_attr(ImportContext& cx, const onnx::NodeProto& node, const std::string& what) {
  if (has_input(node, 1)) return constant_input(cx, node, 1, what).as_ints();
  return NodeAttrs(node).get_ints("axes");
}

void map_unsqueeze(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  PortRef x = cx.port(required_input(node, 0));
  const auto axes = axes_input_or_attr(cx, node, "Unsqueeze's axes");
  const std::size_t rank = g.rank(x) + axes.size();
  std::set<std::int64_t> sorted;
  for (auto a : axes) sorted.insert(normalize_axis(a, rank));
  for (auto a : sorted) x = g.op("unsqueeze_axis", {x}, {{"axis", a}});
  set_output(cx, node, x);
}

void map_squeeze(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  PortRef x = cx.port(required_input(node, 0));
  const Dims dims = g.dims(x);
  std::set<std::int64_t> sorted;
  for (auto a : axes_input_or_attr(cx, node, "Squeeze's axes")) sorted.insert(normalize_axis(a, dims.size()));
  if (sorted.empty()) {
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 1) sorted.insert(static_cast<std::int64_t>(i));
    }
  }
  for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) {
    if (dims[static_cast<std::size_t>(*it)] != 1) throw LoomError("Squeeze of a dimension that is not 1");
    x = g.op("squeeze_axis", {x}, {{"axis", *it}});
  }
  set_output(cx, node, x);
}

void map_concat(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  std::vector<PortRef> parts;
  for (const auto& in : node.input()) {
    if (!in.empty() && element_count(cx.dims(in)) > 0) parts.push_back(cx.port(in));
  }
  if (parts.empty()) throw LoomError("Concat of nothing");
  const auto axis = normalize_axis(NodeAttrs(node).get_int("axis", 0), g.rank(parts[0]));
  PortRef out = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) out = g.op("concat", {out, parts[i]}, {{"axis", axis}});
  set_output(cx, node, out);
}

void map_split(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  const NodeAttrs attrs(node);
  PortRef x = cx.port(required_input(node, 0));
  const auto axis = normalize_axis(attrs.get_int("axis", 0), g.rank(x));
  const std::int64_t total = g.dim(x, static_cast<std::size_t>(axis));
  std::vector<std::int64_t> sizes = attrs.get_ints("split");
  if (has_input(node, 1)) sizes = constant_input(cx, node, 1, "Split's sizes").as_ints();
  const auto outputs = static_cast<std::int64_t>(node.output_size());
  if (sizes.empty()) {
    const std::int64_t each = (total + outputs - 1) / outputs;
    for (std::int64_t i = 0; i < outputs; ++i) sizes.push_back(std::min(each, total - i * each));
  }
  if (static_cast<std::int64_t>(sizes.size()) != outputs) throw LoomError("Split sizes do not match its outputs");
  std::int64_t start = 0;
  for (std::int64_t i = 0; i < outputs; ++i) {
    const std::int64_t size = sizes[static_cast<std::size_t>(i)];
    PortRef part = size == total ? x : g.op("slice_axis", {x}, {{"axis", axis}, {"start", start}, {"size", size}});
    set_output(cx, node, part, static_cast<int>(i));
    start += size;
  }
}

void map_slice(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  PortRef x = cx.port(required_input(node, 0));
  const Dims dims = g.dims(x);
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (cx.opset() < 10) {
    const NodeAttrs attrs(node);
    starts = attrs.get_ints("starts");
    ends = attrs.get_ints("ends");
    axes = attrs.get_ints("axes");
  } else {
    starts = constant_input(cx, node, 1, "Slice's starts").as_ints();
    ends = constant_input(cx, node, 2, "Slice's ends").as_ints();
    if (has_input(node, 3)) axes = constant_input(cx, node, 3, "Slice's axes").as_ints();
    if (has_input(node, 4)) steps = constant_input(cx, node, 4, "Slice's steps").as_ints();
  }
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  for (std::size_t k = 0; k < starts.size(); ++k) {
    if (!steps.empty() && steps[k] != 1) throw LoomError("Slice with a step other than 1 is not supported");
    const auto axis = normalize_axis(axes.at(k), dims.size());
    const std::int64_t dim = dims[static_cast<std::size_t>(axis)];
    auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + dim : v, 0, dim); };
    const std::int64_t s = clamp(starts[k]), e = clamp(ends.at(k));
    if (e <= s) throw LoomError("an empty Slice is not supported");
    if (s == 0 && e == dim) continue;
    x = g.op("slice_axis", {x}, {{"axis", axis}, {"start", s}, {"size", e - s}});
  }
  set_output(cx, node, x);
}

void map_pad(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  const NodeAttrs attrs(node);
  if (attrs.get_string("mode", "constant") != "constant") throw LoomError("only constant padding is supported");
  PortRef x = cx.port(required_input(node, 0));
  const std::size_t rank = g.rank(x);
  std::vector<std::int64_t> pads = attrs.get_ints("pads");
  double value = attrs.get_float("value", 0);
  if (cx.opset() >= 11) {
    pads = constant_input(cx, node, 1, "Pad's pads").as_ints();
    if (has_input(node, 2)) value = constant_input(cx, node, 2, "Pad's value").data.at(0);
  }
  if (value != 0) throw LoomError("padding with a value other than 0 is not supported");
  std::vector<std::int64_t> axes;
  if (has_input(node, 3)) axes = constant_input(cx, node, 3, "Pad's axes").as_ints();
  if (axes.empty()) {
    for (std::size_t i = 0; i < rank; ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  if (pads.size() != 2 * axes.size()) throw LoomError("Pad's pads must have two entries per axis");
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const auto axis = normalize_axis(axes[k], rank);
    std::int64_t before = pads[k], after = pads[k + axes.size()];
    if (before < 0 || after < 0) {
      const std::int64_t dim = g.dim(x, static_cast<std::size_t>(axis));
      const std::int64_t cut_front = std::max<std::int64_t>(0, -before), cut_back = std::max<std::int64_t>(0, -after);
      x = g.op("slice_axis", {x}, {{"axis", axis}, {"start", cut_front}, {"size", dim - cut_front - cut_back}});
      before = std::max<std::int64_t>(before, 0);
      after = std::max<std::int64_t>(after, 0);
    }
    if (before || after) x = g.op("pad_axis", {x}, {{"axis", axis}, {"before", before}, {"after", after}});
  }
  set_output(cx, node, x);
}

void map_expand(ImportContext& cx, const onnx::NodeProto& node) {
  const Dims target = broadcast_dims(cx.dims(required_input(node, 0)), constant_input(cx, node, 1, "Expand's shape").as_ints());
  set_output(cx, node, broadcast_to(cx.builder(), cx.port(required_input(node, 0)), target));
}

// Gather along axis 0 is a row lookup (an embedding when the data are weights); along another
// axis the data are permuted so that the axis comes first; a constant scalar index is a slice.
void map_gather(ImportContext& cx, const onnx::NodeProto& node) {
  GraphBuilder& g = cx.builder();
  const std::string data = required_input(node, 0), indices = required_input(node, 1);
  const Dims dims = cx.dims(data);
  const auto axis = static_cast<std::size_t>(normalize_axis(NodeAttrs(node).get_int("axis", 0), dims.size()));
  if (cx.is_constant(indices) && cx.constant(indices).dims.empty()) {
    std::int64_t at = cx.constant(indices).as_ints().at(0);
    if (at < 0) at += dims[axis];
    PortRef s = g.op("slice_axis", {cx.port(data)}, {{"axis", static_cast<std::int64_t>(axis)}, {"start", at}, {"size", 1}});
    return set_output(cx, node, g.op("squeeze_axis", {s}, {{"axis", static_cast<std::int64_t>(axis)}}));
  }
  if (cx.is_constant(indices)) {
    for (double v : cx.constant(indices).data) {
      if (v < 0) throw LoomError("negative Gather indices are supported only when known at import time as a scalar");
    }
  }
  PortRef table = cx.port(data);
  std::vector<std::int64_t> front;  // the permutation bringing `axis` first
  if (axis != 0) {
    front.push_back(static_cast<std::int64_t>(axis));
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (i != axis) front.push_back(static_cast<std::int64_t>(i));
    }
    table = permute(g, table, front);
  }
  PortRef y = g.op("gather_rows", {cx.port(indices), table});
  if (axis != 0) {
    // y is [*indices, dims before axis, dims after axis]; move the index dimensions back to `axis`.
    const std::size_t k = cx.dims(indices).size();
    std::vector<std::int64_t> perm;
    for (std::size_t i = 0; i < axis; ++i) perm.push_back(static_cast<std::int64_t>(k + i));
    for (std::size_t i = 0; i < k; ++i) perm.push_back(static_cast<std::int64_t>(i));
    for (std::size_t i = k + axis; i < g.rank(y); ++i) perm.push_back(static_cast<std::int64_t>(i));
    y = permute(g, y, perm);
  }
  set_output(cx, node, y);
}

void map_alias(ImportContext& cx, const onnx::NodeProto& node) {
  const std::string& in = required_input(node, 0);
  set_output(cx, node, cx.port(in));
}

void map_dropout(ImportContext& cx, const onnx::NodeProto& node) {
  if (node.output_size() > 1 && !node.output(1).empty()) throw LoomError("Dropout's mask output is not supported");
  map_unary(cx, node, "dropout");
}

void map_reciprocal(ImportContext& cx, const onnx::NodeProto& node) {
  set_output(cx, node,
             cx.builder().op("scalar_pow", {cx.port(required_input(node, 0)), scalar_port(cx, -1, node.output(0) + "#exponent")}));
}

void map_neg(ImportContext& cx, const onnx::NodeProto& node) {
  set_output(cx, node,
             cx.builder().op("scalar_mul", {cx.port(required_input(node, 0)), scalar_port(cx, -1, node.output(0) + "#minus_one")}));
}

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> table = {
      {"Conv", map_conv},
      {"Gemm", map_gemm},
      {"MatMul", map_matmul},
      {"Relu", [](ImportContext& cx, const onnx::NodeProto& n) { map_unary(cx, n, "relu"); }},
      {"Sigmoid", [](ImportContext& cx, const onnx::NodeProto& n) { map_unary(cx, n, "sigmoid"); }},
      {"Tanh", [](ImportContext& cx, const onnx::NodeProto& n) { map_unary(cx, n, "tanh"); }},
      {"Erf", [](ImportContext& cx, const onnx::NodeProto& n) { map_unary(cx, n, "erf"); }},
      {"Sqrt", [](ImportContext& cx, const onnx::NodeProto& n) { map_unary(cx, n, "sqrt"); }},
      {"Exp", [](ImportContext& cx, const onnx::NodeProto& n) { map_unary(cx, n, "exp"); }},
      {"Gelu", map_gelu},
      {"Clip", map_clip},
      {"Neg", map_neg},
      {"Reciprocal", map_reciprocal},
      {"Add", map_binary},
      {"Sub", map_binary},
      {"Mul", map_binary},
      {"Div", map_binary},
      {"Pow", map_pow},
      {"Concat", map_concat},
      {"Split", map_split},
      {"Slice", map_slice},
      {"Pad", map_pad},
      {"Reshape", map_reshape},
      {"Flatten", map_flatten},
      {"Transpose", map_transpose},
      {"Squeeze", map_squeeze},
      {"Unsqueeze", map_unsqueeze},
      {"Expand", map_expand},
      {"MaxPool", map_pool},
      {"AveragePool", map_pool},
      {"GlobalAveragePool", map_global_average_pool},
      {"ReduceMean", map_reduce_mean},
      {"BatchNormalization", map_batch_norm},
      {"LayerNormalization", map_layer_norm},
      {"Softmax", map_softmax},
      {"Gather", map_gather},
      {"Dropout", map_dropout},
      {"Identity", map_alias},
      {"Cast", map_alias},
  };
  return table;
}

}  // namespace

bool is_mappable(const std::string& op_type) { return handlers().count(op_type) > 0; }

void map_node(ImportContext& cx, const onnx::NodeProto& node) { handlers().at(node.op_type())(cx, node); }

}  // namespace loom::models::onnx_import
