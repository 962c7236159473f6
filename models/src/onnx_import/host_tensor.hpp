#pragma once
// A tensor known while importing (an initializer, a Constant, a folded shape computation), with its
// values held as doubles and whether the ONNX type was an integer type.
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "loom/models/values.hpp"

namespace loom::models::onnx_import {

using Dims = std::vector<std::int64_t>;

struct HostTensor {
  Dims dims;
  std::vector<double> data;
  bool integral = false;

  std::size_t size() const { return data.size(); }
  static HostTensor scalar(double value, bool integral = false) { return HostTensor{{}, {value}, integral}; }
  static HostTensor vector(const std::vector<std::int64_t>& values);
  std::vector<std::int64_t> as_ints() const;
  TensorValue to_value() const;
};

std::int64_t element_count(const Dims& dims);
std::string dims_text(const Dims& dims);

// Decodes a TensorProto; data stored outside the model (external data) is read from files next to
// `model_dir`. Throws LoomError naming the tensor for an unsupported element type or short data.
HostTensor decode_tensor(const onnx::TensorProto& tensor, const std::string& model_dir);

bool is_integral_type(int onnx_type);

}  // namespace loom::models::onnx_import
