#pragma once
// The epsilon the library's normalizations add to the variance before its square root, read off
// their specs: each is evaluated where its result is x / sqrt(variance + epsilon) with x and the
// variance known, so that the importer keeps a model's epsilon without a copy of the library's.
#include "loom/interpreter/library.hpp"

namespace loom::models::onnx_import {

// Throw LoomError when the library has no such operator or its result does not give a positive
// epsilon.
double batchnorm_epsilon(const spec::Library& library);
double layer_norm_epsilon(const spec::Library& library);

// Whether a model's epsilon is the library's, at float precision.
bool same_epsilon(double model, double library);

}  // namespace loom::models::onnx_import
