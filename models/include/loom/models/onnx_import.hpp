#pragma once
// Imports an ONNX model (as PyTorch's and TensorFlow's exporters write them) as a PCG over the spec
// library. Initializers, and graph inputs that feed weight positions (a Conv's kernel, a Gemm's
// matrix, a normalization's scale, an embedding table), become weights; shape arithmetic is
// folded to constants; the patterns the fusion rules name (GELU's erf form and the decomposed
// LayerNorm with the bundled specs/rules/onnx.loom) are fused by them.
// An unsupported operator is an error naming its type, the node and the file, for every such
// node at once; nothing is returned then.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/models/values.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::models {

struct OnnxImportOptions {
  std::map<std::string, std::int64_t> dims;  // values of symbolic dimensions, by their names
  std::int64_t default_dim = 1;              // for symbolic dimensions not given
  // The user asked for `default_dim` as the batch (`--batch`): a file whose inputs have no
  // symbolic dimension to take it is refused, naming the inputs whose static shapes pin it.
  bool default_dim_required = false;
  // Graph inputs whose values are fixed at import time (shapes, axes, bounds fed as inputs): they
  // are folded like initializers and do not become graph inputs.
  NamedValues known_inputs;
  // Proved rules applied left to right wherever they match once the graph is imported, until none
  // does (a number in a rule matches a constant of the model; see pcg::matches_literal). Callers
  // pass the proved rules of specs/rules/onnx.verified.json (verifier::import_rules); none:
  // nothing is fused by rules. `fusion_notes` (rules left out, and why) join the import's notes.
  std::vector<pcg::Rule> fusion_rules;
  std::vector<std::string> fusion_notes;
};

// Where a weight's values are in the file: an initializer, as it is, or transposed (a Gemm's transA
// or transB) and scaled (its alpha or beta), so that trained values can be written back.
struct InitializerSource {
  std::string initializer;
  bool transposed = false;
  double scale = 1;
};

struct ImportedModel {
  pcg::Graph graph;
  // Values of the weights (and constant inputs) the file holds, by graph node name. Graph inputs
  // that are weights without an initializer have none.
  NamedValues constants;
  std::vector<std::string> notes;  // defaulted dimensions, fused patterns
  // The weights among them that are the model's constants rather than its parameters: the
  // rank-0 values arithmetic reads (scales, shifts, exponents, epsilons), which training keeps.
  std::set<std::string> fixed;
  // The weights among them that one initializer gives, by graph node name; the others are computed
  // at import from several of the file's values (folded shape arithmetic, shifted variances).
  std::map<std::string, InitializerSource> sources;
};

ImportedModel import_onnx_file(const std::string& path, const spec::Library& library, const OnnxImportOptions& options = {});

// `bytes` is a serialized ModelProto; `source` names it in messages; external data files are read
// relative to `model_dir`.
ImportedModel import_onnx_bytes(const std::string& bytes, const std::string& source, const spec::Library& library,
                                const OnnxImportOptions& options = {}, const std::string& model_dir = ".");

}  // namespace loom::models
