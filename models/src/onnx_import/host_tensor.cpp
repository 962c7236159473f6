#include "onnx_import/host_tensor.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "loom/pcg/diagnostic.hpp"

namespace loom::models::onnx_import {
namespace {

using onnx::TensorProto;

double half_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    value = mantissa ? NAN : INFINITY;
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -value : value;
}

double bfloat16_to_double(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::size_t element_bytes(int type) {
  switch (type) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32: return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64: return 8;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::INT16:
    case TensorProto::UINT16: return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL: return 1;
    default: return 0;
  }
}

template <class T>
double read_as(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

double decode_raw(int type, const char* p) {
  switch (type) {
    case TensorProto::FLOAT: return read_as<float>(p);
    case TensorProto::DOUBLE: return read_as<double>(p);
    case TensorProto::INT32: return read_as<std::int32_t>(p);
    case TensorProto::UINT32: return read_as<std::uint32_t>(p);
    case TensorProto::INT64: return read_as<std::int64_t>(p);
    case TensorProto::UINT64: return read_as<std::uint64_t>(p);
    case TensorProto::INT16: return read_as<std::int16_t>(p);
    case TensorProto::UINT16: return read_as<std::uint16_t>(p);
    case TensorProto::INT8: return read_as<std::int8_t>(p);
    case TensorProto::UINT8:
    case TensorProto::BOOL: return read_as<std::uint8_t>(p);
    case TensorProto::FLOAT16: return half_to_double(static_cast<std::uint16_t>(read_as<std::uint16_t>(p)));
    case TensorProto::BFLOAT16: return bfloat16_to_double(static_cast<std::uint16_t>(read_as<std::uint16_t>(p)));
    default: return 0;
  }
}

std::int64_t external_data_number(const std::string& text, const std::string& what, const std::string& key) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    throw LoomError(what + ": external data " + key + " '" + text + "' is not a non-negative integer");
  }
  return value;
}

std::string external_bytes(const TensorProto& t, const std::string& model_dir, const std::string& what) {
  std::string location;
  std::int64_t offset = 0, length = -1;
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = external_data_number(entry.value(), what, "offset");
    if (entry.key() == "length") length = external_data_number(entry.value(), what, "length");
  }
  // As ONNX's own checker requires: a file beside the model, never an absolute path or one that
  // climbs out of the model's folder.
  const std::filesystem::path relative(location);
  if (relative.is_absolute() || std::any_of(relative.begin(), relative.end(), [](const auto& part) { return part == ".."; }))
    throw LoomError(what + ": external data location '" + location + "' is not a path inside the model's folder");
  const std::filesystem::path path = std::filesystem::path(model_dir) / location;
  std::ifstream in(path, std::ios::binary);
  if (location.empty() || !in) throw LoomError(what + ": cannot read its external data file '" + path.string() + "'");
  std::error_code size_error;
  const auto file_size = static_cast<std::int64_t>(std::filesystem::file_size(path, size_error));
  if (size_error || offset > file_size || (length >= 0 && length > file_size - offset)) {
    throw LoomError(what + ": external data file '" + path.string() + "' is too short");
  }
  in.seekg(offset);
  std::string bytes;
  if (length >= 0) {
    bytes.resize(static_cast<std::size_t>(length));
    in.read(bytes.data(), length);
    if (in.gcount() != length) throw LoomError(what + ": external data file '" + path.string() + "' is too short");
  } else {
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  return bytes;
}

}  // namespace

HostTensor HostTensor::vector(const std::vector<std::int64_t>& values) {
  HostTensor t{{static_cast<std::int64_t>(values.size())}, {}, true};
  for (auto v : values) t.data.push_back(static_cast<double>(v));
  return t;
}

std::vector<std::int64_t> HostTensor::as_ints() const {
  std::vector<std::int64_t> out;
  for (double v : data) out.push_back(static_cast<std::int64_t>(std::llround(v)));
  return out;
}

TensorValue HostTensor::to_value() const {
  TensorValue t(dims);
  t.data = data;
  return t;
}

std::int64_t element_count(const Dims& dims) { return static_cast<std::int64_t>(TensorValue::element_count(dims)); }

std::string dims_text(const Dims& dims) { return TensorValue::dims_text(dims); }

bool is_integral_type(int type) {
  switch (type) {
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::INT32:
    case TensorProto::UINT32:
    case TensorProto::INT64:
    case TensorProto::UINT64:
    case TensorProto::BOOL: return true;
    default: return false;
  }
}

HostTensor decode_tensor(const TensorProto& t, const std::string& model_dir) {
  const std::string what = "tensor '" + t.name() + "'";
  HostTensor out;
  for (auto d : t.dims()) {
    if (d < 0) throw LoomError(what + ": negative dimension " + std::to_string(d));
    out.dims.push_back(d);
  }
  out.integral = is_integral_type(t.data_type());
  const auto count = static_cast<std::size_t>(element_count(out.dims));
  const std::size_t bytes_each = element_bytes(t.data_type());
  if (bytes_each == 0) {
    throw LoomError(what + ": element type " + onnx::TensorProto_DataType_Name(t.data_type()) + " is not supported");
  }
  const bool external = t.data_location() == TensorProto::EXTERNAL;
  if (external || t.has_raw_data()) {
    const std::string raw = external ? external_bytes(t, model_dir, what) : t.raw_data();
    if (raw.size() < count * bytes_each) {
      throw LoomError(what + ": " + std::to_string(raw.size()) + " bytes of data for " + std::to_string(count) + " elements");
    }
    out.data.resize(count);
    for (std::size_t i = 0; i < count; ++i) out.data[i] = decode_raw(t.data_type(), raw.data() + i * bytes_each);
    return out;
  }
  switch (t.data_type()) {
    case TensorProto::FLOAT: out.data.assign(t.float_data().begin(), t.float_data().end()); break;
    case TensorProto::DOUBLE: out.data.assign(t.double_data().begin(), t.double_data().end()); break;
    case TensorProto::INT64: out.data.assign(t.int64_data().begin(), t.int64_data().end()); break;
    case TensorProto::UINT32:
    case TensorProto::UINT64: out.data.assign(t.uint64_data().begin(), t.uint64_data().end()); break;
    case TensorProto::FLOAT16:
      for (auto v : t.int32_data()) out.data.push_back(half_to_double(static_cast<std::uint16_t>(v)));
      break;
    case TensorProto::BFLOAT16:
      for (auto v : t.int32_data()) out.data.push_back(bfloat16_to_double(static_cast<std::uint16_t>(v)));
      break;
    default: out.data.assign(t.int32_data().begin(), t.int32_data().end()); break;
  }
  if (out.data.size() != count) {
    throw LoomError(what + ": " + std::to_string(out.data.size()) + " values for shape " + dims_text(out.dims));
  }
  return out;
}

}  // namespace loom::models::onnx_import
