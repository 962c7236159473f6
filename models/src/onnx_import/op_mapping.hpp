#pragma once
// The ONNX operators the importer maps to spec-library operators, one handler per operator type.
#include <string>

#include <onnx/onnx_pb.h>

#include "onnx_import/import_context.hpp"

namespace loom::models::onnx_import {

bool is_mappable(const std::string& op_type);

// Emits the node's operators, reading its inputs from `cx` and recording its outputs there. Throws
// LoomError with a bare message (the caller names the node and the file) when the node uses a
// form of the operator the library cannot express.
void map_node(ImportContext& cx, const onnx::NodeProto& node);

}  // namespace loom::models::onnx_import
