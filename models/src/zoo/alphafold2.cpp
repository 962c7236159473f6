// An AlphaFold2 Evoformer block (Jumper et al. 2021, supplement algorithm 6; SuperScaler's
// evaluation with 128 sequences of 256 residues and table 2's sizes): gated MSA row attention
// with pair bias, MSA column attention, MSA transition, outer product mean, outgoing and incoming
// triangle multiplications, triangle attention around the starting and the ending node, pair
// transition. MSA channels = hidden, pair channels = hidden / 2, pair attention heads = heads / 2.
#include "loom/pcg/diagnostic.hpp"
#include "zoo/layers.hpp"
#include "zoo/table2.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

using layers::Activation;
using layers::AttentionSpec;

struct Evoformer {
  GraphBuilder& b;
  std::int64_t heads;
  std::int64_t opm;  // outer product mean channels

  // LayerNorm, then gated attention (optionally biased by the pair representation).
  PortRef gated_attention(PortRef x, std::int64_t h, const PortRef* pair, const std::string& name) {
    GraphBuilder::Scope scope(b, name);
    PortRef n = layers::layer_norm(b, x, "norm");
    AttentionSpec spec(h);
    spec.qkv_bias = false;
    spec.gated = true;
    spec.dropout = false;
    if (pair) {
      spec.adjust_scores = [&](GraphBuilder& g, PortRef scores) {
        PortRef z = layers::layer_norm(g, *pair, "pair_norm");
        PortRef bias = g.op("linear_nobias", {z, g.weight("pair_bias.weight", {g.dims(z).back(), h})});
        return g.op("add_pair_bias", {scores, bias});
      };
    }
    return layers::attention(b, n, n, spec, "attention");
  }

  PortRef transition(PortRef x, const std::string& name) {
    GraphBuilder::Scope scope(b, name);
    return layers::feed_forward(b, layers::layer_norm(b, x, "norm"), 4 * b.dims(x).back(), Activation::Relu, "mlp");
  }

  PortRef outer_product_mean(PortRef m, std::int64_t pair_channels) {
    GraphBuilder::Scope scope(b, "outer_product_mean");
    PortRef n = layers::layer_norm(b, m, "norm");
    PortRef left = layers::dense(b, n, opm, "linear_1", true);
    PortRef right = layers::dense(b, n, opm, "linear_2", true);
    return layers::dense(b, b.op("outer_product_mean", {left, right}), pair_channels, "linear_out", true);
  }

  PortRef triangle_multiplication(PortRef z, bool outgoing, const std::string& name) {
    GraphBuilder::Scope scope(b, name);
    const std::int64_t c = b.dims(z).back();
    PortRef n = layers::layer_norm(b, z, "norm_in");
    auto gated_projection = [&](const std::string& side) {
      PortRef gate = layers::dense(b, n, c, side + "_gate", true, Activation::Sigmoid);
      return b.op("ewmul", {gate, layers::dense(b, n, c, side + "_proj", true)});
    };
    PortRef left = gated_projection("left");
    PortRef right = gated_projection("right");
    PortRef t = b.op(outgoing ? "triangle_mult_out" : "triangle_mult_in", {left, right});
    t = layers::dense(b, layers::layer_norm(b, t, "norm_out"), c, "linear_out", true);
    return b.op("ewmul", {t, layers::dense(b, n, c, "gate", true, Activation::Sigmoid)});
  }

  // `layers` Evoformer blocks over the MSA and pair representations.
  void blocks(PortRef& m, PortRef& z, std::int64_t layers) {
    for (std::int64_t l = 0; l < layers; ++l) {
      GraphBuilder::Scope scope(b, "evoformer" + std::to_string(l));
      m = b.op("ewadd", {m, gated_attention(m, heads, &z, "msa_row_attention")});
      PortRef columns = b.op("swap_axes", {m}, {{"axis", 1}});
      PortRef col = gated_attention(columns, heads, nullptr, "msa_column_attention");
      m = b.op("ewadd", {m, b.op("swap_axes", {col}, {{"axis", 1}})});
      m = b.op("ewadd", {m, transition(m, "msa_transition")});
      z = b.op("ewadd", {z, outer_product_mean(m, b.dims(z).back())});
      z = b.op("ewadd", {z, triangle_multiplication(z, true, "triangle_multiplication_outgoing")});
      z = b.op("ewadd", {z, triangle_multiplication(z, false, "triangle_multiplication_incoming")});
      z = b.op("ewadd", {z, triangle_attention(z, true, "triangle_attention_starting_node")});
      z = b.op("ewadd", {z, triangle_attention(z, false, "triangle_attention_ending_node")});
      z = b.op("ewadd", {z, transition(z, "pair_transition")});
    }
  }

  // Triangle attention around the starting node: row i of the pair representation attends over its
  // entries (i, k), biased by z (j, k). Around the ending node: the same on the transposed pairs.
  PortRef triangle_attention(PortRef z, bool starting, const std::string& name) {
    GraphBuilder::Scope scope(b, name);
    if (!starting) z = b.op("swap_axes", {z}, {{"axis", 1}});
    PortRef n = layers::layer_norm(b, z, "norm");
    const std::int64_t h = heads / 2;
    AttentionSpec spec(h);
    spec.qkv_bias = false;
    spec.gated = true;
    spec.dropout = false;
    spec.adjust_scores = [&](GraphBuilder& g, PortRef scores) {
      PortRef bias = g.op("linear_nobias", {n, g.weight("triangle_bias.weight", {g.dims(n).back(), h})});
      return g.op("add_pair_bias", {scores, bias});
    };
    PortRef a = layers::attention(b, n, n, spec, "attention");
    return starting ? a : b.op("swap_axes", {a}, {{"axis", 1}});
  }
};

pcg::Graph build_alphafold2(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  const Table2Size size = table2_size("alphafold2", p);
  const std::int64_t c_m = size.hidden;
  const std::int64_t c_z = size.hidden / 2;
  if (size.heads < 2 || size.heads % 2 != 0 || c_z % (size.heads / 2) != 0) {
    throw LoomError("alphafold2: heads must be even and heads / 2 must divide the pair channels " + std::to_string(c_z));
  }
  if (p("recycles") < 0) throw LoomError("alphafold2: recycles must be 0 or more, not " + std::to_string(p("recycles")));
  Evoformer e{b, size.heads, p("opm")};
  const PortRef msa = b.input("msa", {p("batch"), p("sequences"), p("residues"), c_m});
  const PortRef pair = b.input("pair", {p("batch"), p("residues"), p("residues"), c_z});
  PortRef m = msa, z = pair;
  e.blocks(m, z, p("layers"));
  // Recycling (supplement 1.10): each pass after the first starts from the inputs plus the
  // normalized outputs of the pass before, through a stop-gradient, so only the last pass trains.
  for (std::int64_t r = 1; r <= p("recycles"); ++r) {
    GraphBuilder::Pass pass(b, "recycle" + std::to_string(r));
    m = b.op("ewadd", {msa, layers::layer_norm(b, b.op("stop_gradient", {m}, {}, "recycled_msa"), "recycle_norm_msa")});
    z = b.op("ewadd", {pair, layers::layer_norm(b, b.op("stop_gradient", {z}, {}, "recycled_pair"), "recycle_norm_pair")});
    e.blocks(m, z, p("layers"));
  }
  b.output(m);
  b.output(z);
  return b.take();
}

}  // namespace

std::vector<ModelInfo> alphafold_models() {
  std::vector<ModelParam> params = table2_params("alphafold2");
  params.insert(params.begin(), {{"batch", 128, "samples per iteration"},
                                 {"sequences", 128, "MSA sequences"},
                                 {"residues", 256, "residues per sequence"},
                                 {"layers", 1, "Evoformer blocks"},
                                 {"opm", 32, "outer product mean channels"},
                                 {"recycles", 0, "forward-only recycling passes before the one that trains (3F1B: 2)"}});
  return {{"alphafold2", "AlphaFold2 Evoformer block (SuperScaler): MSA and pair stacks with triangle updates", params, build_alphafold2}};
}

}  // namespace loom::models::zoo
