// Operators run piece by piece, above all those whose body reads a dimension's size or an index's
// value: every legal split of every input dimension, each task's pieces through the kernel (native,
// compiled from the spec, and interpreted) with their regions, the pieces assembled (partial sums added) and compared with
// the operator on whole values, forward and backward; then random plans of transformer layers.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/parallel_rules.hpp"
#include "loom/interpreter/piece_program.hpp"
#include "loom/runtime/interpreter_kernel.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "runtime_test_support.hpp"
#include "sharded_check.hpp"

namespace loom::runtime {
namespace {

using testing::bundled_library;
using testing::spec_output_dims;
using testing::uniform_tensor;

struct PieceCase {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<std::vector<std::int64_t>> inputs;
  std::map<std::size_t, std::int64_t> ids;  // input -> table rows (integer ids, one past the table too)
};

std::ostream& operator<<(std::ostream& os, const PieceCase& c) { return os << c.op; }

const std::vector<PieceCase>& cases() {
  static const std::vector<PieceCase> all = {
      {"attention_scores", {}, {{2, 4, 4}, {2, 6, 4}}, {}},
      {"causal_mask", {}, {{2, 4, 4}}, {}},
      {"gather_rows", {}, {{2, 4}, {8, 2, 2}}, {{0, 9}}},
      {"embedding", {}, {{4}, {8, 2}}, {{0, 9}}},
      {"embedding_bag", {}, {{2, 2}, {8, 2}}, {{0, 9}}},
      {"reduce_mean", {}, {{4, 6}}, {}},
      {"head_proj", {}, {{2, 4, 4}, {2, 4, 2}, {2, 2}}, {}},
      {"head_proj_nobias", {}, {{2, 4, 4}, {2, 4, 2}}, {}},
      {"head_merge", {}, {{2, 2, 4, 2}, {2, 2, 4}, {4}}, {}},
      {"add_relative_bias", {}, {{2, 2, 4, 4}, {4, 4, 2}}, {}},
      {"concat", {{"axis", 1}}, {{2, 4, 4}, {2, 2, 4}}, {}},
      {"split_axis", {{"axis", 1}, {"parts", 2}}, {{2, 4, 4}}, {}},
      {"pool2d_avg", {{"kh", 2}, {"kw", 2}, {"stride", 1}, {"pad", 1}}, {{2, 2, 4, 4}}, {}},
      {"global_avg_pool", {}, {{2, 2, 4, 4}}, {}},
      {"conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}}, {{2, 2, 4, 4}, {2, 2, 2, 2}}, {}},
      {"conv2d_depthwise", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 0}, {"act", 0}}, {{2, 2, 4, 4}, {2, 1, 2, 2}}, {}},
  };
  return all;
}

std::vector<Tensor<double>> values_for(const PieceCase& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor<double>> out;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    out.push_back(uniform_tensor(c.inputs[i], rng));
    if (auto rows = c.ids.find(i); rows != c.ids.end())
      for (double& v : out.back().data) v = static_cast<double>(rng() % static_cast<std::uint64_t>(rows->second));
  }
  return out;
}

// Calls `visit(offset in a tensor of dims, offset in the box)` for every element of `box`.
template <class Visit>
void for_each_in(const std::vector<std::int64_t>& dims, const pcg::Region& box, Visit&& visit) {
  if (box.empty()) return;
  std::vector<std::int64_t> at = box.lo;
  for (std::size_t flat = 0;; ++flat) {
    std::size_t offset = 0;
    for (std::size_t d = 0; d < dims.size(); ++d) offset = offset * static_cast<std::size_t>(dims[d]) + static_cast<std::size_t>(at[d]);
    visit(offset, flat);
    std::size_t d = dims.size();
    while (d-- > 0) {
      if (++at[d] < box.hi[d]) break;
      at[d] = box.lo[d];
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

std::vector<std::int64_t> extents(const pcg::Region& box) {
  std::vector<std::int64_t> out;
  for (std::size_t d = 0; d < box.lo.size(); ++d) out.push_back(box.hi[d] - box.lo[d]);
  return out;
}

Tensor<double> cut(const Tensor<double>& whole, const pcg::Region& box) {
  Tensor<double> piece(extents(box));
  for_each_in(whole.dims, box, [&](std::size_t at, std::size_t i) { piece.data[i] = whole.data[at]; });
  return piece;
}

void add_into(Tensor<double>& whole, const pcg::Region& box, const Tensor<double>& piece) {
  for_each_in(whole.dims, box, [&](std::size_t at, std::size_t i) { whole.data[at] += piece.data[i]; });
}

// One legal way to run the op on pieces: input `input`'s dimension `dim` split `degree` ways.
struct Split {
  std::size_t input = 0, dim = 0;
  std::int64_t degree = 1;
  std::vector<pcg::ParallelShape> inputs, outputs;

  std::int64_t tasks() const { return inputs.at(0).tasks(); }
  std::string describe() const {
    return "input " + std::to_string(input) + " dim " + std::to_string(dim) + " split " + std::to_string(degree) + " ways";
  }
};

std::vector<Split> legal_splits(const PieceCase& c) {
  const spec::Program program = bundled_library().instantiate(c.op, c.attrs, c.inputs);
  std::vector<Split> out;
  for (std::size_t i = 0; i < c.inputs.size(); ++i)
    for (std::size_t d = 0; d < c.inputs[i].size(); ++d)
      for (std::int64_t degree : {2, 4}) {
        if (c.inputs[i][d] % degree != 0) continue;
        Split s{i, d, degree, spec::split_inputs(program, i, d, degree), {}};
        try {
          s.outputs = spec::derive_output_degrees(program, s.inputs);
        } catch (const LoomError&) {
          continue;
        }
        out.push_back(std::move(s));
      }
  return out;
}

// The op's outputs and input gradients on whole values.
struct Result {
  std::vector<Tensor<double>> outputs, input_grads;
};

// Runs every task of `split` through `kernel` on its pieces, with the regions filled, and
// assembles the outputs (adding partial sums) and the input gradients (adding the tasks' parts).
Result run_pieces(const Kernel<double>& kernel, const PieceCase& c, const Split& split, const std::vector<Tensor<double>>& inputs,
                  const std::vector<Tensor<double>>& output_grads) {
  Result r;
  for (const Tensor<double>& g : output_grads) r.outputs.emplace_back(g.dims, 0.0);
  for (const Tensor<double>& x : inputs) r.input_grads.emplace_back(x.dims, 0.0);
  for (std::int64_t task = 0; task < split.tasks(); ++task) {
    OpCall<double> call{c.op, c.attrs, {}, {}, {}, {}, {}};
    std::vector<Tensor<double>> pieces, grad_pieces;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      call.regions.push_back(pcg::piece_region(split.inputs[i], task));
      call.logical_dims.push_back(inputs[i].dims);
      pieces.push_back(cut(inputs[i], call.regions.back()));
    }
    for (std::size_t k = 0; k < split.outputs.size(); ++k) {
      EXPECT_EQ(split.outputs[k].R, 1) << "a replicated output would be assembled more than once";
      call.output_regions.push_back(pcg::piece_region(split.outputs[k], task));
      call.output_dims.push_back(call.output_regions.back().extent());
      grad_pieces.push_back(cut(output_grads[k], call.output_regions.back()));
    }
    call.inputs = pointers(pieces);
    const std::vector<Tensor<double>> outs = kernel.forward(call);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      EXPECT_EQ(outs[k].dims, extents(call.output_regions[k]));
      if (outs[k].dims == extents(call.output_regions[k])) add_into(r.outputs[k], call.output_regions[k], outs[k]);
    }
    const std::vector<Tensor<double>> grads =
        kernel.backward({call, pointers(outs), pointers(grad_pieces), std::vector<bool>(inputs.size(), true)});
    for (std::size_t i = 0; i < grads.size(); ++i) add_into(r.input_grads[i], call.regions[i], grads[i]);
  }
  return r;
}

// Same values within 1e-9 (relative above 1), infinities where the other has the same infinity.
void expect_same(const Tensor<double>& got, const Tensor<double>& want, const std::string& what) {
  ASSERT_EQ(got.dims, want.dims) << what;
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (!std::isfinite(want.data[k]) || !std::isfinite(got.data[k]))
      EXPECT_EQ(got.data[k], want.data[k]) << what << " element " << k;
    else
      EXPECT_NEAR(got.data[k], want.data[k], 1e-9 * std::max(1.0, std::abs(want.data[k]))) << what << " element " << k;
  }
}

class PieceOffsets : public ::testing::TestWithParam<PieceCase> {};

TEST_P(PieceOffsets, PiecesAssembleToTheWholeResultNativeCompiledAndInterpreted) {
  const PieceCase& c = GetParam();
  const std::vector<Tensor<double>> inputs = values_for(c, 5);
  const Kernel<double> whole_kernel = interpreter_kernel<double>(bundled_library(), c.op, c.attrs, c.inputs, {}, false);
  const OpCall<double> whole_call{c.op, c.attrs, pointers(inputs), {}, {}, {}, spec_output_dims(c.op, c.attrs, c.inputs)};
  Result want;
  want.outputs = whole_kernel.forward(whole_call);
  std::mt19937_64 rng(9);
  std::vector<Tensor<double>> output_grads;
  for (const Tensor<double>& o : want.outputs) output_grads.push_back(uniform_tensor(o.dims, rng));
  want.input_grads =
      whole_kernel.backward({whole_call, pointers(want.outputs), pointers(output_grads), std::vector<bool>(inputs.size(), true)});

  const std::vector<Split> splits = legal_splits(c);
  ASSERT_GE(splits.size(), 2u) << c.op << " has too few legal splits to test";
  const Kernel<double>* native = builtin_kernels().find<double>(c.op, Backend::Cpu);
  for (const Split& split : splits) {
    std::vector<std::vector<std::int64_t>> piece_dims;
    for (std::size_t i = 0; i < inputs.size(); ++i) piece_dims.push_back(extents(pcg::piece_region(split.inputs[i], 0)));
    std::vector<std::pair<std::string, Kernel<double>>> kernels;
    for (const bool compile : {false, true}) {
      const std::string route = compile ? "compiled" : "interpreter";
      kernels.emplace_back(route, interpreter_kernel<double>(bundled_library(), c.op, c.attrs, piece_dims, c.inputs, compile));
      EXPECT_EQ(kernels.back().second.route, compile ? KernelRoute::Compiled : KernelRoute::Interpreted);
      try {  // without logical dims the pieces' shapes must compile (not so for rows of square scores)
        kernels.emplace_back(route + " given logical dims per call",
                             interpreter_kernel<double>(bundled_library(), c.op, c.attrs, piece_dims, {}, compile));
      } catch (const LoomError&) {
      }
    }
    if (native) kernels.emplace_back("native", *native);
    for (const auto& [name, kernel] : kernels) {
      SCOPED_TRACE(name + " kernel, " + split.describe());
      const Result got = run_pieces(kernel, c, split, inputs, output_grads);
      for (std::size_t k = 0; k < want.outputs.size(); ++k) expect_same(got.outputs[k], want.outputs[k], "output " + std::to_string(k));
      for (std::size_t i = 0; i < want.input_grads.size(); ++i)
        expect_same(got.input_grads[i], want.input_grads[i], "gradient of input " + std::to_string(i));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOperator, PieceOffsets, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PieceCase>& info) { return info.param.op; });

TEST(PieceOffsets, TheAnalysisFlagsBodiesThatReadSizesOrPositions) {
  auto reads = [](const std::string& op, const std::vector<std::vector<std::int64_t>>& dims) {
    return spec::reads_sizes_or_positions(bundled_library().instantiate(op, {}, dims));
  };
  EXPECT_TRUE(reads("attention_scores", {{2, 3, 4}, {2, 5, 4}}));
  EXPECT_TRUE(reads("causal_mask", {{2, 4, 4}}));
  EXPECT_TRUE(reads("gather_rows", {{3}, {7, 4}}));
  EXPECT_TRUE(reads("reduce_mean", {{3, 4}}));
  EXPECT_FALSE(reads("matmul", {{3, 4}, {4, 5}}));
  EXPECT_FALSE(reads("head_proj", {{2, 3, 4}, {2, 4, 5}, {2, 5}}));
  EXPECT_FALSE(reads("relu", {{3, 4}}));
}

TEST(PieceOffsets, APlacedProgramComparesLogicalPositions) {
  // causal_mask on rows 2..3 of 4 x 4 scores, a piece whose shape is not square.
  const spec::Program logical = bundled_library().instantiate("causal_mask", {}, {{4, 4}});
  const pcg::Region rows{{2, 0}, {4, 4}};
  const spec::Program placed = spec::place_piece(logical, {{rows}, {rows}});
  Tensor<double> x({2, 4}, 1.0);
  const std::vector<Tensor<double>> out = spec::evaluate<spec::RealDomain>(placed, {&x});
  const double inf = HUGE_VAL;
  EXPECT_EQ(out.at(0).dims, (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(out.at(0).data, (std::vector<double>{1, 1, 1, -inf, 1, 1, 1, 1}));

  // Rows 2..3 and columns 0..1: every element lies below the diagonal, which the program compiled
  // for the 2 x 2 piece does not see.
  const pcg::Region corner{{2, 0}, {4, 2}};
  Tensor<double> y({2, 2}, 1.0);
  EXPECT_EQ(spec::evaluate<spec::RealDomain>(spec::place_piece(logical, {{corner}, {corner}}), {&y}).at(0).data,
            std::vector<double>(4, 1.0));
  const spec::Program piece_local = bundled_library().instantiate("causal_mask", {}, {{2, 2}});
  EXPECT_EQ(spec::evaluate<spec::RealDomain>(piece_local, {&y}).at(0).data[1], -inf);
}

pcg::Graph small_causal_transformer() {
  return models::build_model(sharded_test::library(), "gpt3",
                             {{"batch", 2}, {"seq", 4}, {"layers", 1}, {"hidden", 8}, {"heads", 2}, {"embeddings", 1}, {"vocab", 16}});
}

// The plan with no hand-written kernel (every operator compiled from its spec) gives the outputs
// and gradients of the model run whole that way.
void expect_interpreted_plan_same_as_logical(const pcg::Graph& model, std::uint64_t seed) {
  const KernelRegistry none;
  const pcg::Graph plan = search::materialize(model, sharded_test::random_placements(model, 4, seed), sharded_test::library());
  const NamedTensors<double> feeds = models::random_values(sharded_test::library(), model, 11);
  const std::set<std::string> weights = sharded_test::weights_of(model);
  LocalTransport one, four;
  ShardedExecutor<double> logical(sharded_test::library(), model, none, one, weights, 1);
  ShardedExecutor<double> sharded(sharded_test::library(), plan, none, four, weights, 4);
  logical.forward(feeds);
  sharded.forward(feeds);
  std::mt19937_64 rng(seed);
  std::vector<Tensor<double>> output_grads;
  for (std::size_t i = 0; i < model.outputs().size(); ++i) {
    expect_same(sharded.output(i), logical.output(i), "output " + std::to_string(i));
    output_grads.push_back(uniform_tensor(logical.output(i).dims, rng));
  }
  const NamedTensors<double> want = logical.backward(output_grads);
  const NamedTensors<double> got = sharded.backward(output_grads);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) expect_same(got.at(name), w, "gradient of " + name);
}

TEST(PieceOffsets, RandomPlansRunThroughTheInterpreterMatchTheWholeModel) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_interpreted_plan_same_as_logical(sharded_test::small_transformer(), seed);
    expect_interpreted_plan_same_as_logical(small_causal_transformer(), seed);
  }
}

TEST(PieceOffsets, RandomPlansOfATransformerLayerMatchTheWholeModel) {
  const pcg::Graph model = sharded_test::small_transformer();
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    LocalTransport transport;
    sharded_test::expect_same_as_logical(model, sharded_test::random_placements(model, 4, seed), 4, transport);
  }
}

TEST(PieceOffsets, RandomPlansOfACausalTransformerLayerMatchTheWholeModel) {
  const pcg::Graph model = small_causal_transformer();
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    LocalTransport transport;
    sharded_test::expect_same_as_logical(model, sharded_test::random_placements(model, 4, seed), 4, transport);
  }
}

}  // namespace
}  // namespace loom::runtime
