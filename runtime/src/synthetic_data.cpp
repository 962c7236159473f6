#include <random>

#include "loom/runtime/data.hpp"
#include "loom/runtime/initializer.hpp"

namespace loom::runtime {

std::vector<std::int64_t> target_dims(const pcg::Graph& graph, LossKind loss) {
  std::vector<std::int64_t> dims = graph.shape_of(graph.outputs().at(0)).dims;
  if (loss == LossKind::CrossEntropy && !dims.empty()) dims.pop_back();
  return dims;
}

namespace {

class SyntheticData final : public DataSource {
 public:
  SyntheticData(const spec::Library& library, const pcg::Graph& graph, LossKind loss, std::uint64_t seed, std::int64_t batches) {
    const std::vector<std::int64_t>& output = graph.shape_of(graph.outputs().at(0)).dims;
    const std::int64_t classes = output.empty() ? 1 : output.back();
    for (std::int64_t b = 0; b < batches; ++b) {
      const std::uint64_t batch_seed = seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(b + 1);
      Batch batch;
      for (const pcg::Node& n : graph.nodes()) {
        if (n.op != pcg::kInputOp) continue;
        const bool ids = input_role(library, graph, n.id) == InputRole::LookupIds;
        batch.inputs.emplace(
            n.name, draw(n.output_shapes.front().dims, named_seed(batch_seed, n.name), ids ? lookup_rows(library, graph, n.id) : 0));
      }
      batch.target = draw(target_dims(graph, loss), named_seed(batch_seed, "target"), loss == LossKind::CrossEntropy ? classes : 0);
      batches_.push_back(std::move(batch));
    }
  }

  const Batch& batch(std::int64_t step) const override { return batches_[static_cast<std::size_t>(step) % batches_.size()]; }

 private:
  // Uniform in [-1, 1], or integers below `integers` when it is positive.
  static Tensor<double> draw(const std::vector<std::int64_t>& dims, std::uint64_t seed, std::int64_t integers) {
    Tensor<double> t(dims);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (double& v : t.data) v = integers > 0 ? static_cast<double>(rng() % static_cast<std::uint64_t>(integers)) : uniform(rng);
    return t;
  }

  std::vector<Batch> batches_;
};

}  // namespace

std::unique_ptr<DataSource> synthetic_data(const spec::Library& library, const pcg::Graph& graph, LossKind loss, std::uint64_t seed,
                                           std::int64_t batches) {
  return std::make_unique<SyntheticData>(library, graph, loss, seed, std::max<std::int64_t>(batches, 1));
}

}  // namespace loom::runtime
