// ONNX import against the node tests Debian ships in libonnx-testdata: each model is imported, its
// graph evaluated by the interpreter on the test's inputs, and compared with the test's expected
// outputs. Inputs that exporters would make constants (shapes, axes, pads, bounds, exponents:
// integer inputs and scalars after the first input) are given to the importer as known values.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "loom/models/onnx_import.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeTests = fs::path(LOOM_ONNX_TESTDATA_DIR) / "node";

TensorValue read_tensor(const fs::path& file) {
  onnx::TensorProto t;
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(in && t.ParseFromIstream(&in)) << file;
  TensorValue v(std::vector<std::int64_t>(t.dims().begin(), t.dims().end()));
  const std::string& raw = t.raw_data();
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (t.data_type()) {
      case onnx::TensorProto::FLOAT: {
        float f;
        if (!raw.empty())
          std::memcpy(&f, raw.data() + 4 * i, 4);
        else
          f = t.float_data(static_cast<int>(i));
        v.data[i] = f;
        break;
      }
      case onnx::TensorProto::INT64: {
        std::int64_t x;
        if (!raw.empty())
          std::memcpy(&x, raw.data() + 8 * i, 8);
        else
          x = t.int64_data(static_cast<int>(i));
        v.data[i] = static_cast<double>(x);
        break;
      }
      case onnx::TensorProto::INT32: {
        std::int32_t x;
        if (!raw.empty())
          std::memcpy(&x, raw.data() + 4 * i, 4);
        else
          x = t.int32_data(static_cast<int>(i));
        v.data[i] = x;
        break;
      }
      default: ADD_FAILURE() << file << ": element type " << t.data_type() << " not read by this test";
    }
  }
  return v;
}

onnx::ModelProto read_model(const fs::path& file) {
  onnx::ModelProto m;
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(in && m.ParseFromIstream(&in)) << file;
  return m;
}

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, ImportedGraphReproducesTheExpectedOutputs) {
  const fs::path dir = kNodeTests / GetParam();
  ASSERT_TRUE(fs::exists(dir / "model.onnx")) << dir << " is missing: install libonnx-testdata (scripts/setup.sh)";
  const onnx::ModelProto proto = read_model(dir / "model.onnx");
  const fs::path data = dir / "test_data_set_0";
  OnnxImportOptions options;
  NamedValues feeds;
  int k = 0;
  for (const auto& input : proto.graph().input()) {
    bool initializer = false;
    for (const auto& t : proto.graph().initializer()) initializer |= t.name() == input.name();
    if (initializer) continue;
    TensorValue v = read_tensor(data / ("input_" + std::to_string(k) + ".pb"));
    const int type = input.type().tensor_type().elem_type();
    const bool integer = type == onnx::TensorProto::INT64 || type == onnx::TensorProto::INT32;
    if (k > 0 && (integer || v.dims.empty())) {
      options.known_inputs[input.name()] = v;
    } else {
      feeds[input.name()] = v;
    }
    ++k;
  }
  const ImportedModel imported = import_onnx_file((dir / "model.onnx").string(), library(), options);
  for (const auto& [name, value] : imported.constants) feeds[name] = value;
  const auto outputs = evaluate(imported.graph, feeds);
  ASSERT_EQ(static_cast<int>(outputs.size()), proto.graph().output_size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    // The expected values are float32 results; compare at float precision.
    expect_near_all(outputs[i], read_tensor(data / ("output_" + std::to_string(i) + ".pb")), 2e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Debian, OnnxNodeTest,
    ::testing::Values(
        "test_relu", "test_sigmoid", "test_tanh", "test_erf", "test_sqrt", "test_exp", "test_add", "test_add_bcast", "test_sub",
        "test_sub_bcast", "test_mul", "test_mul_bcast", "test_div", "test_div_bcast", "test_pow_bcast_scalar", "test_clip",
        "test_clip_default_min", "test_clip_default_max", "test_matmul_2d", "test_matmul_3d", "test_matmul_4d",
        "test_gemm_default_vector_bias", "test_gemm_default_matrix_bias", "test_gemm_default_no_bias", "test_gemm_all_attributes",
        "test_gemm_transposeA", "test_gemm_transposeB", "test_gemm_alpha", "test_gemm_beta", "test_basic_conv_with_padding",
        "test_basic_conv_without_padding", "test_conv_with_strides_padding", "test_conv_with_strides_no_padding",
        "test_conv_with_strides_and_asymmetric_padding", "test_conv_with_autopad_same", "test_maxpool_2d_default", "test_maxpool_2d_pads",
        "test_maxpool_2d_precomputed_pads", "test_maxpool_2d_precomputed_strides", "test_averagepool_2d_default",
        "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_precomputed_strides", "test_globalaveragepool",
        "test_globalaveragepool_precomputed", "test_batchnorm_example", "test_batchnorm_epsilon", "test_softmax_axis_0",
        "test_softmax_axis_1", "test_softmax_axis_2", "test_softmax_default_axis", "test_softmax_negative_axis", "test_softmax_example",
        "test_concat_1d_axis_0", "test_concat_2d_axis_0", "test_concat_2d_axis_1", "test_concat_3d_axis_1",
        "test_concat_3d_axis_negative_1", "test_split_equal_parts_1d", "test_split_equal_parts_2d", "test_split_variable_parts_2d",
        "test_slice", "test_slice_default_axes", "test_slice_neg", "test_slice_end_out_of_bounds", "test_reshape_reordered_all_dims",
        "test_reshape_extended_dims", "test_reshape_negative_dim", "test_reshape_reduced_dims", "test_reshape_one_dim",
        "test_reshape_zero_dim", "test_flatten_axis0", "test_flatten_axis2", "test_flatten_default_axis", "test_flatten_negative_axis1",
        "test_transpose_default", "test_transpose_all_permutations_0", "test_transpose_all_permutations_3",
        "test_transpose_all_permutations_5", "test_unsqueeze_axis_1", "test_unsqueeze_two_axes", "test_unsqueeze_negative_axes",
        "test_squeeze", "test_squeeze_negative_axes", "test_expand_dim_changed", "test_reduce_mean_keepdims_random",
        "test_reduce_mean_do_not_keepdims_random", "test_reduce_mean_default_axes_keepdims_random",
        "test_reduce_mean_negative_axes_keepdims_random", "test_gather_0", "test_gather_1", "test_gather_2d_indices",
        "test_layer_normalization_default_axis", "test_layer_normalization_2d_axis1", "test_layer_normalization_3d_axis_negative_1_epsilon",
        "test_layer_normalization_4d_axis1", "test_dropout_default", "test_identity", "test_constant", "test_shape", "test_neg",
        "test_reciprocal"));

// Every unsupported node is named in one error, with the file, and no graph comes back.
TEST(OnnxNodeData, UnsupportedOperatorIsAnErrorNamingTheNodeAndFile) {
  const fs::path file = kNodeTests / "test_lstm_defaults" / "model.onnx";
  try {
    import_onnx_file(file.string(), library());
    FAIL() << "an LSTM model was imported";
  } catch (const LoomError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file.string()), std::string::npos) << message;
    EXPECT_NE(message.find("LSTM"), std::string::npos) << message;
    EXPECT_NE(message.find("unsupported operator"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace loom::models::test
