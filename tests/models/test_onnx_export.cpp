// Trained weights written back into the ONNX file a model came from: a round trip keeps every
// value; changed weights come back changed, through a Gemm's transB and alpha too; a weight the
// import computed from the file's values is reported and left; a missing or misshapen weight is
// refused.
#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "../interpreter/test_support.hpp"
#include "../pcg/error_text.hpp"
#include "loom/models/onnx_export.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

// y = (x W^T) * 0.5 + b, then its product with V plus its product with U reshaped: W through a
// Gemm's transB and alpha, V as it is, U folded by a Reshape.
OnnxModel two_layers() {
  OnnxModel m;
  m.input("x", {2, 4});
  m.initializer("W", {3, 4}, floats(random_tensor({3, 4}, 1)));
  m.initializer("b", {3}, floats(random_tensor({3}, 2)));
  m.initializer("V", {3, 2}, floats(random_tensor({3, 2}, 3)));
  m.initializer("U", {6}, floats(random_tensor({6}, 4)));
  m.int_initializer("U.shape", {2}, {3, 2});
  auto& gemm = m.node("Gemm", {"x", "W", "b"}, {"h"});
  OnnxModel::attr(gemm, "transB", std::int64_t{1});
  OnnxModel::attr_float(gemm, "alpha", 0.5f);
  m.node("Reshape", {"U", "U.shape"}, {"U2"});
  m.node("MatMul", {"h", "V"}, {"p"});
  m.node("MatMul", {"h", "U2"}, {"q"});
  m.node("Add", {"p", "q"}, {"y"});
  m.output("y");
  return m;
}

class OnnxExport : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(path("model.onnx"), std::ios::binary) << two_layers().bytes(); }

  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }
  ImportedModel reimported(const models::OnnxExport& exported) const {
    std::ofstream(path("trained.onnx"), std::ios::binary) << exported.bytes;
    return import_onnx_file(path("trained.onnx"), library());
  }

  spec::test::TempDir dir_;
};

TEST_F(OnnxExport, ARoundTripKeepsEveryValue) {
  const ImportedModel imported = import_onnx_file(path("model.onnx"), library());
  EXPECT_EQ(imported.sources.at("W#transposed").initializer, "W");
  EXPECT_TRUE(imported.sources.at("W#transposed").transposed);
  EXPECT_EQ(imported.sources.at("W#transposed").scale, 0.5);
  EXPECT_EQ(imported.sources.count("U2"), 0u) << "a folded weight comes from no one initializer";
  const models::OnnxExport exported = export_onnx_weights(path("model.onnx"), library(), {}, imported.constants);
  const ImportedModel again = reimported(exported);
  ASSERT_EQ(again.constants.size(), imported.constants.size());
  for (const auto& [name, value] : imported.constants) {
    EXPECT_EQ(again.constants.at(name).dims, value.dims) << name;
    for (std::size_t i = 0; i < value.data.size(); ++i) EXPECT_FLOAT_EQ(again.constants.at(name).data[i], value.data[i]) << name;
  }
}

TEST_F(OnnxExport, TrainedWeightsComeBackInTheFilesOwnForm) {
  const ImportedModel imported = import_onnx_file(path("model.onnx"), library());
  NamedValues trained = imported.constants;
  for (auto& [name, value] : trained)
    for (double& v : value.data) v = v * 1.5 + 0.25;
  const models::OnnxExport exported = export_onnx_weights(path("model.onnx"), library(), {}, trained);
  EXPECT_EQ(exported.written, (std::vector<std::string>{"W", "b", "V"}));
  ASSERT_EQ(exported.left_out.size(), 1u);
  EXPECT_NE(exported.left_out.front().find("U2: computed at import"), std::string::npos) << exported.left_out.front();
  const ImportedModel again = reimported(exported);
  for (const char* name : {"W#transposed", "b", "V"}) {
    SCOPED_TRACE(name);
    for (std::size_t i = 0; i < trained.at(name).data.size(); ++i)
      EXPECT_NEAR(again.constants.at(name).data[i], trained.at(name).data[i], 1e-6 * (1 + std::abs(trained.at(name).data[i])));
  }
  EXPECT_EQ(again.constants.at("U2").data, imported.constants.at("U2").data) << "the file keeps what it cannot take";
  // The model computes with the trained weights: the same outputs from the file as from the values.
  NamedValues feeds = again.constants;
  feeds.emplace("x", random_tensor({2, 4}, 9));
  NamedValues with_trained = trained;
  with_trained["U2"] = imported.constants.at("U2");
  with_trained.emplace("x", feeds.at("x"));
  expect_near_all(evaluate(again.graph, feeds).at(0), evaluate(imported.graph, with_trained).at(0), 1e-6);
}

// PyTorch writes equal initializers once and the others as an Identity of it: the copy is a weight
// of its own, and its trained values go back as an initializer of its own in the Identity's place.
TEST(OnnxExportOfCopies, AnIdentityCopyOfAnInitializerIsAWeightOfItsOwn) {
  const spec::test::TempDir dir;
  const std::string file = (dir.path() / "copies.onnx").string();
  OnnxModel m;
  m.input("x", {2, 3});
  m.initializer("ones", {3}, {1, 1, 1});
  m.node("Identity", {"ones"}, {"ones.copy"});
  m.node("Mul", {"x", "ones"}, {"a"});
  m.node("Mul", {"a", "ones.copy"}, {"y"});
  m.output("y");
  std::ofstream(file, std::ios::binary) << m.bytes();
  const ImportedModel imported = import_onnx_file(file, library());
  ASSERT_EQ(imported.constants.count("ones") + imported.constants.count("ones.copy"), 2u) << "two weights, not one and not scalars";
  EXPECT_EQ(imported.sources.at("ones.copy").initializer, "ones.copy");
  NamedValues trained = imported.constants;
  trained.at("ones.copy").data = {2, 3, 4};
  const models::OnnxExport exported = export_onnx_weights(file, library(), {}, trained);
  EXPECT_EQ(exported.written, (std::vector<std::string>{"ones", "ones.copy"}));
  std::ofstream(file, std::ios::binary) << exported.bytes;
  const ImportedModel again = import_onnx_file(file, library());
  EXPECT_EQ(again.constants.at("ones").data, (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(again.constants.at("ones.copy").data, (std::vector<double>{2, 3, 4}));
}

TEST_F(OnnxExport, AMissingOrMisshapenWeightIsRefused) {
  const ImportedModel imported = import_onnx_file(path("model.onnx"), library());
  NamedValues missing = imported.constants;
  missing.erase("V");
  EXPECT_NE(pcg::test_support::error_of([&] {
              export_onnx_weights(path("model.onnx"), library(), {}, missing);
            }).find("no value is given for weight 'V'"),
            std::string::npos);
  NamedValues misshapen = imported.constants;
  misshapen["V"] = TensorValue({2, 3});
  EXPECT_NE(pcg::test_support::error_of([&] {
              export_onnx_weights(path("model.onnx"), library(), {}, misshapen);
            }).find("weight 'V' is [3, 2] in the model, but [2, 3] is given"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::models::test
