#include "onnx_import/constant_folding.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "loom/pcg/diagnostic.hpp"
#include "onnx_import/node_attrs.hpp"

namespace loom::models::onnx_import {
namespace {

using Index = std::vector<std::int64_t>;

Index strides_of(const Dims& dims) {
  Index s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

Index unflatten(std::int64_t flat, const Dims& dims) {
  Index idx(dims.size(), 0);
  for (std::size_t i = dims.size(); i-- > 0;) {
    idx[i] = dims[i] == 0 ? 0 : flat % dims[i];
    flat = dims[i] == 0 ? 0 : flat / dims[i];
  }
  return idx;
}

// Offset into `dims` (broadcast to the output's rank) of an output index.
std::int64_t broadcast_offset(const Index& out_index, const Dims& dims) {
  const Index strides = strides_of(dims);
  const std::size_t shift = out_index.size() - dims.size();
  std::int64_t off = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) off += (dims[i] == 1 ? 0 : out_index[i + shift]) * strides[i];
  return off;
}

// The most elements a constant folded at import may hold: shape arithmetic, masks and index
// ranges in real models are far smaller; weights are initializers and are not folded.
constexpr std::int64_t kMaxFoldedElements = std::int64_t{1} << 26;

// The elements of a folded constant of `dims`, refused above kMaxFoldedElements before anything
// is allocated.
std::size_t folded_size(const Dims& dims) {
  const std::int64_t n = element_count(dims);
  if (n > kMaxFoldedElements)
    throw LoomError("folding it would make a constant of dimensions " + dims_text(dims) + " (" + std::to_string(n) +
                    " elements), more than the " + std::to_string(kMaxFoldedElements) + " Loom folds at import");
  return static_cast<std::size_t>(n);
}

// The tensor of `dims` whose element at each index is the element of `source` at the offset
// `offset_of(index)`: a gather, a transposition or a slice of it.
template <class OffsetOf>
HostTensor picked(const HostTensor& source, const Dims& dims, OffsetOf offset_of) {
  HostTensor out{dims, {}, source.integral};
  const auto n = static_cast<std::int64_t>(folded_size(dims));
  out.data.reserve(static_cast<std::size_t>(n));
  for (std::int64_t flat = 0; flat < n; ++flat) out.data.push_back(source.data[static_cast<std::size_t>(offset_of(unflatten(flat, dims)))]);
  return out;
}

const HostTensor& required(const std::vector<const HostTensor*>& inputs, std::size_t i) {
  if (i >= inputs.size() || !inputs[i]) throw LoomError("input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

const HostTensor* optional_input(const std::vector<const HostTensor*>& inputs, std::size_t i) {
  return i < inputs.size() ? inputs[i] : nullptr;
}

HostTensor elementwise(const std::vector<const HostTensor*>& operands, bool integral,
                       const std::function<double(const std::vector<double>&)>& f) {
  Dims out_dims;
  for (const HostTensor* t : operands) out_dims = broadcast_dims(out_dims, t->dims);
  HostTensor out{out_dims, {}, integral};
  const auto n = static_cast<std::int64_t>(folded_size(out_dims));
  out.data.resize(static_cast<std::size_t>(n));
  std::vector<double> args(operands.size());
  for (std::int64_t flat = 0; flat < n; ++flat) {
    const Index idx = unflatten(flat, out_dims);
    for (std::size_t k = 0; k < operands.size(); ++k) {
      args[k] = operands[k]->data[static_cast<std::size_t>(broadcast_offset(idx, operands[k]->dims))];
    }
    out.data[static_cast<std::size_t>(flat)] = f(args);
  }
  return out;
}

double truncate_if(bool integral, double v) { return integral ? std::trunc(v) : v; }

HostTensor binary(const std::string& op, const HostTensor& a, const HostTensor& b) {
  const bool ints = a.integral && b.integral;
  const std::vector<const HostTensor*> operands{&a, &b};
  auto apply = [&](auto f, bool integral_out) {
    return elementwise(operands, integral_out, [&](const std::vector<double>& v) { return f(v[0], v[1]); });
  };
  if (op == "Add") return apply([&](double x, double y) { return x + y; }, ints);
  if (op == "Sub") return apply([&](double x, double y) { return x - y; }, ints);
  if (op == "Mul") return apply([&](double x, double y) { return x * y; }, ints);
  if (op == "Div") return apply([&](double x, double y) { return truncate_if(ints, x / y); }, ints);
  if (op == "Pow") return apply([&](double x, double y) { return std::pow(x, y); }, a.integral);
  if (op == "Mod") return apply([&](double x, double y) { return std::fmod(x, y); }, ints);
  if (op == "Min") return apply([&](double x, double y) { return std::min(x, y); }, ints);
  if (op == "Max") return apply([&](double x, double y) { return std::max(x, y); }, ints);
  if (op == "Equal") return apply([&](double x, double y) { return double(x == y); }, true);
  if (op == "Less") return apply([&](double x, double y) { return double(x < y); }, true);
  if (op == "LessOrEqual") return apply([&](double x, double y) { return double(x <= y); }, true);
  if (op == "Greater") return apply([&](double x, double y) { return double(x > y); }, true);
  if (op == "GreaterOrEqual") return apply([&](double x, double y) { return double(x >= y); }, true);
  if (op == "And") return apply([&](double x, double y) { return double(x != 0 && y != 0); }, true);
  if (op == "Or") return apply([&](double x, double y) { return double(x != 0 || y != 0); }, true);
  throw LoomError("no constant evaluation for " + op);
}

HostTensor unary(const std::string& op, const HostTensor& a) {
  auto apply = [&](auto f, bool integral) { return elementwise({&a}, integral, [&](const std::vector<double>& v) { return f(v[0]); }); };
  if (op == "Identity") return a;
  if (op == "Neg") return apply([](double x) { return -x; }, a.integral);
  if (op == "Abs") return apply([](double x) { return std::abs(x); }, a.integral);
  if (op == "Sqrt") return apply([](double x) { return std::sqrt(x); }, false);
  if (op == "Exp") return apply([](double x) { return std::exp(x); }, false);
  if (op == "Erf") return apply([](double x) { return std::erf(x); }, false);
  if (op == "Floor") return apply([](double x) { return std::floor(x); }, a.integral);
  if (op == "Ceil") return apply([](double x) { return std::ceil(x); }, a.integral);
  if (op == "Reciprocal") return apply([](double x) { return 1 / x; }, false);
  if (op == "Relu") return apply([](double x) { return std::max(x, 0.0); }, a.integral);
  if (op == "Sigmoid") return apply([](double x) { return 1 / (1 + std::exp(-x)); }, false);
  if (op == "Tanh") return apply([](double x) { return std::tanh(x); }, false);
  if (op == "Not") return apply([](double x) { return double(x == 0); }, true);
  throw LoomError("no constant evaluation for " + op);
}

// Axes from the `axes` attribute (older opsets) or the given input (newer ones).
std::vector<std::int64_t> axes_of(const NodeAttrs& attrs, const HostTensor* input) {
  if (input) return input->as_ints();
  return attrs.get_ints("axes");
}

HostTensor gather(const HostTensor& data, const HostTensor& indices, std::int64_t axis_attr) {
  const auto axis = static_cast<std::size_t>(normalize_axis(axis_attr, data.dims.size()));
  Dims out_dims(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  out_dims.insert(out_dims.end(), indices.dims.begin(), indices.dims.end());
  out_dims.insert(out_dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end());
  const Index data_strides = strides_of(data.dims);
  return picked(data, out_dims, [&](const Index& idx) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < axis; ++i) off += idx[i] * data_strides[i];
    Index id_index(idx.begin() + static_cast<std::ptrdiff_t>(axis), idx.begin() + static_cast<std::ptrdiff_t>(axis + indices.dims.size()));
    std::int64_t row = static_cast<std::int64_t>(indices.data[static_cast<std::size_t>(broadcast_offset(id_index, indices.dims))]);
    if (row < 0) row += data.dims[axis];
    if (row < 0 || row >= data.dims[axis]) throw LoomError("Gather index " + std::to_string(row) + " is out of range");
    off += row * data_strides[axis];
    for (std::size_t i = axis + 1; i < data.dims.size(); ++i) off += idx[i - 1 + indices.dims.size()] * data_strides[i];
    return off;
  });
}

HostTensor transpose(const HostTensor& a, std::vector<std::int64_t> perm) {
  if (perm.empty()) {
    for (std::size_t i = a.dims.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  }
  if (perm.size() != a.dims.size()) throw LoomError("Transpose perm has the wrong length");
  std::vector<bool> seen(perm.size(), false);
  for (auto& p : perm) {
    p = normalize_axis(p, a.dims.size());
    if (seen[static_cast<std::size_t>(p)]) throw LoomError("Transpose perm names axis " + std::to_string(p) + " twice");
    seen[static_cast<std::size_t>(p)] = true;
  }
  Dims out_dims;
  for (auto p : perm) out_dims.push_back(a.dims.at(static_cast<std::size_t>(p)));
  const Index strides = strides_of(a.dims);
  return picked(a, out_dims, [&](const Index& idx) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < perm.size(); ++i) off += idx[i] * strides[static_cast<std::size_t>(perm[i])];
    return off;
  });
}

HostTensor slice(const HostTensor& a, const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& ends,
                 std::vector<std::int64_t> axes, std::vector<std::int64_t> steps) {
  const std::size_t rank = a.dims.size();
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    throw LoomError("Slice starts, ends, axes and steps differ in length");
  }
  Index begin(rank, 0), step(rank, 1);
  Dims out_dims = a.dims;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const auto axis = static_cast<std::size_t>(normalize_axis(axes[k], rank));
    const std::int64_t dim = a.dims[axis];
    if (steps[k] == 0) throw LoomError("Slice step is 0");
    auto clamp = [&](std::int64_t v, bool forward) {
      if (v < 0) v += dim;
      return forward ? std::clamp<std::int64_t>(v, 0, dim) : std::clamp<std::int64_t>(v, -1, dim - 1);
    };
    const bool forward = steps[k] > 0;
    const std::int64_t s = clamp(starts[k], forward), e = clamp(ends[k], forward);
    const std::int64_t count = forward ? std::max<std::int64_t>(0, (e - s + steps[k] - 1) / steps[k])
                                       : std::max<std::int64_t>(0, (s - e - steps[k] - 1) / -steps[k]);
    begin[axis] = s;
    step[axis] = steps[k];
    out_dims[axis] = count;
  }
  const Index strides = strides_of(a.dims);
  return picked(a, out_dims, [&](const Index& idx) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < rank; ++i) off += (begin[i] + idx[i] * step[i]) * strides[i];
    return off;
  });
}

HostTensor reduce(const std::string& op, const HostTensor& a, std::vector<std::int64_t> axes, bool keepdims) {
  const std::size_t rank = a.dims.size();
  std::set<std::size_t> reduced;
  if (axes.empty()) {
    for (std::size_t i = 0; i < rank; ++i) reduced.insert(i);
  }
  for (auto ax : axes) reduced.insert(static_cast<std::size_t>(normalize_axis(ax, rank)));
  Dims kept_dims;
  for (std::size_t i = 0; i < rank; ++i) kept_dims.push_back(reduced.count(i) ? 1 : a.dims[i]);
  const auto n_out = static_cast<std::int64_t>(folded_size(kept_dims));
  std::vector<double> acc(static_cast<std::size_t>(n_out), op == "ReduceProd" ? 1.0 : 0.0);
  std::vector<bool> seen(static_cast<std::size_t>(n_out), false);
  const Index out_strides = strides_of(kept_dims);
  for (std::int64_t flat = 0; flat < element_count(a.dims); ++flat) {
    const Index idx = unflatten(flat, a.dims);
    std::int64_t o = 0;
    for (std::size_t i = 0; i < rank; ++i) o += (reduced.count(i) ? 0 : idx[i]) * out_strides[i];
    double& slot = acc[static_cast<std::size_t>(o)];
    const double v = a.data[static_cast<std::size_t>(flat)];
    if (op == "ReduceProd")
      slot *= v;
    else if (op == "ReduceMax")
      slot = seen[static_cast<std::size_t>(o)] ? std::max(slot, v) : v;
    else if (op == "ReduceMin")
      slot = seen[static_cast<std::size_t>(o)] ? std::min(slot, v) : v;
    else
      slot += v;
    seen[static_cast<std::size_t>(o)] = true;
  }
  if (op == "ReduceMean") {
    const double count = static_cast<double>(element_count(a.dims)) / static_cast<double>(std::max<std::int64_t>(n_out, 1));
    for (double& v : acc) v /= count;
  }
  Dims out_dims;
  for (std::size_t i = 0; i < rank; ++i) {
    if (!reduced.count(i) || keepdims) out_dims.push_back(kept_dims[i]);
  }
  return HostTensor{out_dims, acc, a.integral && op != "ReduceMean"};
}

const std::set<std::string>& fold_only_ops() {
  static const std::set<std::string> ops = {
      "Range", "ConstantOfShape", "Equal", "Where", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Not", "Floor",
      "Ceil",  "ReduceProd",      "Size",  "Min",   "Max",  "Mod",         "Abs"};
  return ops;
}

}  // namespace

Dims reshape_target(const Dims& from, const std::vector<std::int64_t>& shape, bool allow_zero) {
  Dims out;
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    std::int64_t d = shape[i];
    if (d == 0 && !allow_zero) {
      if (i >= from.size()) throw LoomError("Reshape copies dimension " + std::to_string(i) + " that the input lacks");
      d = from[i];
    }
    if (d == -1) {
      if (infer >= 0) throw LoomError("Reshape has two -1 dimensions");
      infer = static_cast<int>(i);
      out.push_back(1);
      continue;
    }
    if (d < 0) throw LoomError("Reshape dimension " + std::to_string(d));
    if (d != 0 && known > std::numeric_limits<std::int64_t>::max() / d) throw LoomError("Reshape to " + dims_text(shape) + " overflows");
    known *= d;
    out.push_back(d);
  }
  const std::int64_t total = element_count(from);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) throw LoomError("Reshape cannot infer the -1 dimension");
    out[static_cast<std::size_t>(infer)] = total / known;
  }
  if (element_count(out) != total) {
    throw LoomError("Reshape from " + dims_text(from) + " to " + dims_text(out) + " changes the element count");
  }
  return out;
}

Dims broadcast_dims(const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) {
      throw LoomError("shapes " + dims_text(a) + " and " + dims_text(b) + " do not broadcast");
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::int64_t normalize_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw LoomError("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

bool is_fold_only(const std::string& op_type) { return fold_only_ops().count(op_type) > 0; }

bool is_foldable(const std::string& op_type) {
  static const std::set<std::string> ops = {
      "Constant", "Identity", "Cast",      "Neg",     "Sqrt",      "Exp",        "Erf",       "Relu",      "Sigmoid", "Tanh",
      "Add",      "Sub",      "Mul",       "Div",     "Pow",       "Gather",     "Unsqueeze", "Squeeze",   "Concat",  "Slice",
      "Reshape",  "Expand",   "Transpose", "Flatten", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "Shape",   "Reciprocal"};
  return ops.count(op_type) > 0 || is_fold_only(op_type);
}

std::vector<HostTensor> fold_node(const onnx::NodeProto& node, const std::vector<const HostTensor*>& inputs, int opset,
                                  const std::string& model_dir) {
  const std::string& op = node.op_type();
  const NodeAttrs attrs(node);
  if (op == "Constant") {
    if (const auto* t = attrs.get_tensor("value")) return {decode_tensor(*t, model_dir)};
    if (attrs.has("value_float")) return {HostTensor::scalar(attrs.get_float("value_float", 0))};
    if (attrs.has("value_int")) return {HostTensor::scalar(static_cast<double>(attrs.get_int("value_int", 0)), true)};
    if (attrs.has("value_ints")) return {HostTensor::vector(attrs.get_ints("value_ints"))};
    if (attrs.has("value_floats")) {
      const auto values = attrs.get_floats("value_floats");
      return {HostTensor{{static_cast<std::int64_t>(values.size())}, values, false}};
    }
    throw LoomError("Constant without a supported value attribute");
  }
  if (op == "Shape") {
    const Dims& dims = required(inputs, 0).dims;
    const auto rank = static_cast<std::int64_t>(dims.size());
    auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const std::int64_t start = clamp(attrs.get_int("start", 0)), end = clamp(attrs.get_int("end", rank));
    return {HostTensor::vector(Dims(dims.begin() + start, dims.begin() + std::max(start, end)))};
  }
  if (op == "Size") return {HostTensor::scalar(static_cast<double>(element_count(required(inputs, 0).dims)), true)};
  if (op == "Cast") {
    HostTensor out = required(inputs, 0);
    out.integral = is_integral_type(static_cast<int>(attrs.get_int("to", 1)));
    if (out.integral) {
      for (double& v : out.data) v = std::trunc(v);
    }
    return {out};
  }
  static const std::set<std::string> unary_ops = {"Identity", "Neg",  "Abs",        "Sqrt", "Exp",     "Erf", "Floor",
                                                  "Ceil",     "Relu", "Reciprocal", "Not",  "Sigmoid", "Tanh"};
  if (unary_ops.count(op)) return {unary(op, required(inputs, 0))};
  static const std::set<std::string> binary_ops = {"Add",  "Sub",         "Mul",     "Div", "Pow", "Mod",           "Equal",
                                                   "Less", "LessOrEqual", "Greater", "And", "Or",  "GreaterOrEqual"};
  if (binary_ops.count(op)) return {binary(op, required(inputs, 0), required(inputs, 1))};
  if (op == "Min" || op == "Max") {
    HostTensor acc = required(inputs, 0);
    for (std::size_t i = 1; i < inputs.size(); ++i) acc = binary(op, acc, required(inputs, i));
    return {acc};
  }
  if (op == "Where") {
    const HostTensor &c = required(inputs, 0), &x = required(inputs, 1), &y = required(inputs, 2);
    return {elementwise({&c, &x, &y}, x.integral && y.integral, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; })};
  }
  if (op == "Gather") return {gather(required(inputs, 0), required(inputs, 1), attrs.get_int("axis", 0))};
  if (op == "Unsqueeze") {
    const HostTensor& a = required(inputs, 0);
    auto axes = axes_of(attrs, optional_input(inputs, 1));
    const std::size_t rank = a.dims.size() + axes.size();
    std::set<std::size_t> at;
    for (auto ax : axes) at.insert(static_cast<std::size_t>(normalize_axis(ax, rank)));
    HostTensor out = a;
    out.dims.clear();
    std::size_t k = 0;
    for (std::size_t i = 0; i < rank; ++i) out.dims.push_back(at.count(i) ? 1 : a.dims.at(k++));
    return {out};
  }
  if (op == "Squeeze") {
    const HostTensor& a = required(inputs, 0);
    std::set<std::size_t> at;
    for (auto ax : axes_of(attrs, optional_input(inputs, 1))) at.insert(static_cast<std::size_t>(normalize_axis(ax, a.dims.size())));
    HostTensor out = a;
    out.dims.clear();
    for (std::size_t i = 0; i < a.dims.size(); ++i) {
      const bool drop = at.empty() ? a.dims[i] == 1 : at.count(i) > 0;
      if (drop && a.dims[i] != 1) throw LoomError("Squeeze of a dimension of size " + std::to_string(a.dims[i]));
      if (!drop) out.dims.push_back(a.dims[i]);
    }
    return {out};
  }
  if (op == "Concat") {
    const HostTensor& first = required(inputs, 0);
    const auto axis = static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", 0), first.dims.size()));
    Dims out_dims = first.dims;
    out_dims[axis] = 0;
    bool integral = true;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Dims& d = required(inputs, i).dims;
      if (d.size() != first.dims.size()) throw LoomError("Concat of tensors of different ranks");
      for (std::size_t k = 0; k < d.size(); ++k)
        if (k != axis && d[k] != first.dims[k])
          throw LoomError("Concat of " + dims_text(first.dims) + " and " + dims_text(d) + " along axis " + std::to_string(axis));
      out_dims[axis] += d[axis];
      integral &= inputs[i]->integral;
    }
    const std::int64_t outer = element_count(Dims(first.dims.begin(), first.dims.begin() + static_cast<std::ptrdiff_t>(axis)));
    HostTensor out{out_dims, {}, integral};
    for (std::int64_t o = 0; o < outer; ++o) {
      for (const HostTensor* t : inputs) {
        const std::int64_t block = element_count(Dims(t->dims.begin() + static_cast<std::ptrdiff_t>(axis), t->dims.end()));
        out.data.insert(out.data.end(), t->data.begin() + o * block, t->data.begin() + (o + 1) * block);
      }
    }
    return {out};
  }
  if (op == "Slice") {
    const HostTensor& a = required(inputs, 0);
    if (opset < 10) return {slice(a, attrs.get_ints("starts"), attrs.get_ints("ends"), attrs.get_ints("axes"), {})};
    auto ints = [&](std::size_t i) { return optional_input(inputs, i) ? inputs[i]->as_ints() : std::vector<std::int64_t>{}; };
    return {slice(a, required(inputs, 1).as_ints(), required(inputs, 2).as_ints(), ints(3), ints(4))};
  }
  if (op == "Reshape") {
    HostTensor out = required(inputs, 0);
    const auto shape = opset < 5 ? attrs.get_ints("shape") : required(inputs, 1).as_ints();
    out.dims = reshape_target(out.dims, shape, attrs.get_int("allowzero", 0) != 0);
    return {out};
  }
  if (op == "Flatten") {
    HostTensor out = required(inputs, 0);
    const std::size_t rank = out.dims.size();
    const std::int64_t axis = attrs.get_int("axis", 1);
    const auto at = static_cast<std::size_t>(axis == static_cast<std::int64_t>(rank) ? axis : normalize_axis(axis, rank));
    const std::int64_t outer = element_count(Dims(out.dims.begin(), out.dims.begin() + static_cast<std::ptrdiff_t>(at)));
    out.dims = {outer, element_count(out.dims) / std::max<std::int64_t>(outer, 1)};
    return {out};
  }
  if (op == "Expand") {
    const HostTensor& a = required(inputs, 0);
    HostTensor shape_only{required(inputs, 1).as_ints(), {}, false};
    shape_only.data.assign(folded_size(shape_only.dims), 0);
    return {elementwise({&a, &shape_only}, a.integral, [](const std::vector<double>& v) { return v[0]; })};
  }
  if (op == "Transpose") return {transpose(required(inputs, 0), attrs.get_ints("perm"))};
  if (op == "Range") {
    const double start = required(inputs, 0).data.at(0), limit = required(inputs, 1).data.at(0), delta = required(inputs, 2).data.at(0);
    if (delta == 0) throw LoomError("Range with delta 0");
    const double count = std::max(0.0, std::ceil((limit - start) / delta));
    if (!(count <= static_cast<double>(kMaxFoldedElements)))
      throw LoomError("Range from " + std::to_string(start) + " to " + std::to_string(limit) + " by " + std::to_string(delta) +
                      " would make more than the " + std::to_string(kMaxFoldedElements) + " elements Loom folds at import");
    const auto n = static_cast<std::int64_t>(count);
    HostTensor out{{n}, {}, inputs[0]->integral};
    for (std::int64_t i = 0; i < n; ++i) out.data.push_back(start + static_cast<double>(i) * delta);
    return {out};
  }
  if (op == "ConstantOfShape") {
    HostTensor value = HostTensor::scalar(0);
    if (const auto* t = attrs.get_tensor("value")) value = decode_tensor(*t, model_dir);
    HostTensor out{required(inputs, 0).as_ints(), {}, value.integral};
    out.data.assign(folded_size(out.dims), value.data.at(0));
    return {out};
  }
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd") {
    // ReduceSum takes its axes as an input from opset 13, the others from opset 18.
    const HostTensor* axes_input = optional_input(inputs, 1);
    return {reduce(op, required(inputs, 0), axes_of(attrs, axes_input), attrs.get_int("keepdims", 1) != 0)};
  }
  throw LoomError("no constant evaluation for " + op);
}

}  // namespace loom::models::onnx_import
