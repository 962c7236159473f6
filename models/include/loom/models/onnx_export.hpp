#pragma once
// Writing trained weights back into the ONNX file a model was imported from: each initializer a
// weight comes from (ImportedModel::sources) gets the weight's values, transposed and scaled back
// as the import took them; everything else in the file stays as it was.
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/models/onnx_import.hpp"
#include "loom/models/values.hpp"

namespace loom::models {

struct OnnxExport {
  std::string bytes;                  // the serialized model
  std::vector<std::string> written;   // initializers set from the weights
  std::vector<std::string> left_out;  // weights whose values no initializer holds as they are, and why
};

// `path` is imported again with `options` (as the weights' model was) to learn where each weight
// comes from; `weights` are by graph node name, as the import names them. Throws LoomError naming
// the file: it does not import, a weight an initializer gives has no value or another shape, or
// an initializer holds an element type other than float or double.
OnnxExport export_onnx_weights(const std::string& path, const spec::Library& library, const OnnxImportOptions& options,
                               const NamedValues& weights);

}  // namespace loom::models
