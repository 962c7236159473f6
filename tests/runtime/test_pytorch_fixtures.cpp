// `loom run` reproduces PyTorch's outputs on real exports with their weights: an MLP, a small CNN
// with batch norm and pooling, and a transformer encoder layer (GELU, exported at opset 13, so its
// layer norms come as the nine nodes the import rules fuse). tests/data/pytorch/export_fixtures.py
// wrote the files with Debian's python3-torch; the tests need no PyTorch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../interpreter/test_support.hpp"
#include "../models/support.hpp"
#include "cli_runner.hpp"
#include "loom/models/load.hpp"
#include "loom/runtime/npy_file.hpp"

namespace loom::runtime {
namespace {

std::string fixture(const std::string& file) { return std::string(LOOM_SOURCE_DIR) + "/tests/data/pytorch/" + file; }

class PyTorchFixtures : public ::testing::TestWithParam<const char*> {
 protected:
  spec::test::TempDir dir_;
};

TEST_P(PyTorchFixtures, LoomRunGivesPyTorchsOutputs) {
  const std::string name = GetParam();
  const std::string out = (dir_.path() / "y.npy").string();
  testing::CliRunner loom((dir_.path() / "out.txt").string());
  ASSERT_EQ(loom("run --model " + fixture(name + ".onnx") + " " + fixture(name + ".input.npy") + " -o " + out), 0) << loom.output();
  const Tensor<double> got = read_npy(out), want = read_npy(fixture(name + ".output.npy"));
  ASSERT_EQ(got.dims, want.dims);
  double largest = 0, worst = 0;
  for (std::size_t i = 0; i < want.data.size(); ++i) {
    largest = std::max(largest, std::abs(want.data[i]));
    worst = std::max(worst, std::abs(got.data[i] - want.data[i]));
  }
  EXPECT_LE(worst, 1e-5 * largest) << "largest difference " << worst << " for outputs up to " << largest;
}

INSTANTIATE_TEST_SUITE_P(Exports, PyTorchFixtures, ::testing::Values("mlp", "small_cnn", "encoder_layer"));

// The encoder layer's exported GELU and layer norms become one operator each, by the proved rules.
TEST(PyTorchFixtures, TheEncoderLayersExportedPatternsAreFused) {
  models::ModelRequest request;
  request.model = fixture("encoder_layer.onnx");
  request.onnx.fusion_rules = models::test::bundled_import_rules();
  const models::LoadedModel model = models::load_model(models::test::library(), request);
  EXPECT_EQ(models::test::count_ops(model.graph, "layer_norm"), 2u);
  EXPECT_EQ(models::test::count_ops(model.graph, "gelu"), 1u);
  EXPECT_EQ(models::test::count_ops(model.graph, "reduce_mean_keep") + models::test::count_ops(model.graph, "erf"), 0u);
}

}  // namespace
}  // namespace loom::runtime
