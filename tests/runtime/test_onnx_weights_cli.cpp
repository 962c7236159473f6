// An ONNX model's life through the commands, as a user lives it: `loom train` it from the file's
// weights with a checkpoint, `loom export` the checkpoint into a new ONNX file, and `loom run` the
// new file: its outputs are those of `loom run` with the checkpoint, and differ from the untrained
// file's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "../interpreter/test_support.hpp"
#include "../models/support.hpp"
#include "cli_runner.hpp"
#include "loom/runtime/npy_file.hpp"

namespace loom::runtime {
namespace {

using models::test::OnnxModel;

// x [4, 6] -> Gemm (transB, as PyTorch writes a Linear) -> Relu -> MatMul -> y [4, 3].
OnnxModel small_mlp_export() {
  OnnxModel m;
  m.input("x", {4, 6});
  auto values = [](std::vector<std::int64_t> dims, std::uint64_t seed) {
    return models::test::floats(models::test::random_tensor(dims, seed));
  };
  m.initializer("fc1.weight", {5, 6}, values({5, 6}, 1));
  m.initializer("fc1.bias", {5}, values({5}, 2));
  m.initializer("fc2.weight", {5, 3}, values({5, 3}, 3));
  OnnxModel::attr(m.node("Gemm", {"x", "fc1.weight", "fc1.bias"}, {"h"}), "transB", std::int64_t{1});
  m.node("Relu", {"h"}, {"a"});
  m.node("MatMul", {"a", "fc2.weight"}, {"y"});
  m.output("y");
  return m;
}

class OnnxWeightsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(path("mlp.onnx"), std::ios::binary) << small_mlp_export().bytes();
    write_npy<double>(path("x.npy"), models::test::random_tensor({4, 6}, 7));
  }

  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }
  spec::test::TempDir dir_;
  testing::CliRunner loom{path("out.txt")};
};

TEST_F(OnnxWeightsCli, TrainExportAndRunGiveTheCheckpointsOutputs) {
  ASSERT_EQ(loom("train --model " + path("mlp.onnx") + " --steps 5 --loss mse --lr 0.1 -q --checkpoint " + path("run.ckpt")), 0)
      << loom.output();
  ASSERT_EQ(loom("export --model " + path("mlp.onnx") + " --checkpoint " + path("run.ckpt") + " -o " + path("trained.onnx")), 0)
      << loom.output();
  EXPECT_NE(loom.output().find("3 initializers set from"), std::string::npos) << loom.output();
  const std::string x = path("x.npy");
  ASSERT_EQ(loom("run --model " + path("trained.onnx") + " " + x + " --dtype double -o " + path("exported.npy")), 0) << loom.output();
  ASSERT_EQ(loom("run --model " + path("mlp.onnx") + " --checkpoint " + path("run.ckpt") + " " + x + " --dtype double -o " +
                 path("checkpoint.npy")),
            0)
      << loom.output();
  ASSERT_EQ(loom("run --model " + path("mlp.onnx") + " " + x + " --dtype double -o " + path("untrained.npy")), 0) << loom.output();
  const Tensor<double> exported = read_npy(path("exported.npy")), checkpoint = read_npy(path("checkpoint.npy")),
                       untrained = read_npy(path("untrained.npy"));
  ASSERT_EQ(exported.dims, (std::vector<std::int64_t>{4, 3}));
  ASSERT_EQ(checkpoint.dims, exported.dims);
  double moved = 0;
  for (std::size_t i = 0; i < exported.data.size(); ++i) {
    // The checkpoint holds float weights, and the file float initializers: the same values.
    EXPECT_NEAR(exported.data[i], checkpoint.data[i], 1e-6 * (1 + std::abs(checkpoint.data[i]))) << i;
    moved = std::max(moved, std::abs(exported.data[i] - untrained.data[i]));
  }
  EXPECT_GT(moved, 1e-4) << "training changed no output: the test would pass whatever export wrote";
}

TEST_F(OnnxWeightsCli, ExportRefusesAModelThatIsNoOnnxFile) {
  ASSERT_EQ(loom("train --model " + path("mlp.onnx") + " --steps 1 --loss mse -q --checkpoint " + path("run.ckpt")), 0) << loom.output();
  EXPECT_NE(loom("export --model mlp_fig1 --checkpoint " + path("run.ckpt") + " -o " + path("out.onnx")), 0);
  EXPECT_NE(loom.output().find("writes weights back into an ONNX file"), std::string::npos) << loom.output();
  EXPECT_FALSE(std::filesystem::exists(path("out.onnx")));
}

// A model's scalar constants take no gradient: the plan `loom optimize` writes records them, so
// `loom simulate` charges the plan as the search did; a name that is no graph input is refused.
TEST_F(OnnxWeightsCli, APlanRecordsTheModelsFixedWeightsAndSimulateReadsThem) {
  OnnxModel m;
  m.input("x", {8, 6});
  m.initializer("w", {6, 4}, models::test::floats(models::test::random_tensor({6, 4}, 4)));
  m.initializer("scale", {}, {0.5f});
  m.node("MatMul", {"x", "w"}, {"h"});
  m.node("Mul", {"h", "scale"}, {"y"});
  m.output("y");
  std::ofstream(path("scaled.onnx"), std::ios::binary) << m.bytes();
  ASSERT_EQ(loom("optimize --model " + path("scaled.onnx") + " --machine p100 --gpus-per-node 2 -q -o " + path("plan.json")), 0)
      << loom.output();
  nlohmann::json plan = nlohmann::json::parse(std::ifstream(path("plan.json")));
  ASSERT_TRUE(plan.contains("fixed_weights")) << plan.dump();
  // The scale is the only scalar constant: one fixed weight, read by the multiplication.
  ASSERT_EQ(plan.at("fixed_weights").size(), 1u) << plan.at("fixed_weights");
  EXPECT_NE(plan.at("fixed_weights")[0].get<std::string>().find("operand"), std::string::npos) << plan.at("fixed_weights");
  // Without the record, the simulator gives the scale a gradient and optimizer state again.
  const auto memory = [&](const std::string& file) {
    EXPECT_EQ(loom("simulate --plan " + file + " --json -q"), 0) << loom.output();
    const std::string& out = loom.output();
    double bytes = 0;
    const nlohmann::json run = nlohmann::json::parse(out.substr(std::min(out.find('{'), out.size())));
    for (const auto& device : run.at("per_device")) bytes += device.at("memory_bytes").get<double>();
    return bytes;
  };
  nlohmann::json unrecorded = plan;
  unrecorded.erase("fixed_weights");
  std::ofstream(path("unrecorded.json")) << unrecorded.dump();
  const double recorded = memory(path("plan.json"));
  const std::string recorded_output = loom.output();
  EXPECT_LT(recorded, memory(path("unrecorded.json"))) << recorded_output << "\n" << loom.output();

  plan["fixed_weights"] = nlohmann::json::array({"x"});
  std::ofstream(path("bad.json")) << plan.dump();
  EXPECT_NE(loom("simulate --plan " + path("bad.json") + " --json -q"), 0);
  EXPECT_NE(loom.output().find("fixed_weights[0]: 'x' is not a weight of the plan's graph"), std::string::npos) << loom.output();
}

}  // namespace
}  // namespace loom::runtime
