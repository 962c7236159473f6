#pragma once
// Which graph inputs of an ONNX model are weights: exporters run without parameters list the
// weights as graph inputs, so a graph input is a weight when it feeds a weight position of an
// operator (a Conv's kernel or bias, a Gemm's matrix or bias, a MatMul's matrix operand, a
// normalization's scale, bias or statistics, the table of a Gather by integer ids).
#include <set>
#include <string>

#include <onnx/onnx_pb.h>

namespace loom::models::onnx_import {

std::set<std::string> weight_inputs(const onnx::GraphProto& graph);

}  // namespace loom::models::onnx_import
