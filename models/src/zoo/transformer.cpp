// Transformers: BERT-Large (Devlin et al. 2019; Unity's evaluation), and SuperScaler's GPT-3 block
// (Brown et al. 2020) and mBART (Liu et al. 2020) with table 2's sizes. Attention is per-head
// projections (head_proj), scaled scores, softmax, a batched matmul and the merged output
// projection (head_merge), so that attention-head parallelism is visible in the graph.
#include "loom/pcg/diagnostic.hpp"
#include "zoo/layers.hpp"
#include "zoo/table2.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

using layers::Activation;
using layers::AttentionSpec;

// Token (and optional position and segment) embeddings summed: [batch, seq, hidden].
PortRef embed(GraphBuilder& b, PortRef ids, PortRef table, std::vector<std::pair<PortRef, PortRef>> extra) {
  PortRef x = b.op("gather_rows", {ids, table});
  for (const auto& [other_ids, other_table] : extra) x = b.op("ewadd", {x, b.op("gather_rows", {other_ids, other_table})});
  return x;
}

PortRef ids_input(GraphBuilder& b, const std::string& name, std::int64_t batch, std::int64_t seq) { return b.input(name, {batch, seq}); }

// Post-LN encoder layer (BERT): x = LN(x + attn(x)); x = LN(x + ffn(x)).
PortRef post_ln_layer(GraphBuilder& b, PortRef x, std::int64_t heads, std::int64_t inner, const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  PortRef a = b.op("dropout", {layers::attention(b, x, x, AttentionSpec(heads), "attention")});
  x = layers::layer_norm(b, b.op("ewadd", {x, a}), "attention_norm");
  PortRef f = b.op("dropout", {layers::feed_forward(b, x, inner, Activation::Gelu, "ffn")});
  return layers::layer_norm(b, b.op("ewadd", {x, f}), "output_norm");
}

// Pre-LN layer (GPT-3, mBART): x = x + attn(LN(x)) [+ x = x + cross(LN(x), memory)]; x = x + ffn(LN(x)).
PortRef pre_ln_layer(GraphBuilder& b, PortRef x, std::int64_t heads, bool causal, const PortRef* memory, const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  const std::int64_t hidden = b.dims(x).back();
  PortRef n = layers::layer_norm(b, x, "attention_norm");
  x = b.op("ewadd", {x, b.op("dropout", {layers::attention(b, n, n, AttentionSpec(heads, causal), "attention")})});
  if (memory) {
    n = layers::layer_norm(b, x, "cross_attention_norm");
    x = b.op("ewadd", {x, b.op("dropout", {layers::attention(b, n, *memory, AttentionSpec(heads), "cross_attention")})});
  }
  n = layers::layer_norm(b, x, "ffn_norm");
  return b.op("ewadd", {x, b.op("dropout", {layers::feed_forward(b, n, 4 * hidden, Activation::Gelu, "ffn")})});
}

// Logits over the vocabulary with the (tied) embedding table: x [.., hidden] times table^T.
PortRef tied_lm_head(GraphBuilder& b, PortRef x, PortRef table) {
  return b.op("linear_nobias", {x, b.op("transpose", {table})}, {}, "lm_head");
}

pcg::Graph build_bert(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  const std::int64_t hidden = p("hidden");
  if (p("seq") > p("max_positions")) {
    throw LoomError("bert_large: seq " + std::to_string(p("seq")) + " exceeds max_positions " + std::to_string(p("max_positions")));
  }
  PortRef x;
  {
    GraphBuilder::Scope scope(b, "embeddings");
    PortRef ids = ids_input(b, "input_ids", p("batch"), p("seq"));
    PortRef positions = ids_input(b, "position_ids", p("batch"), p("seq"));
    PortRef segments = ids_input(b, "token_type_ids", p("batch"), p("seq"));
    x = embed(b, ids, b.weight("word_embeddings", {p("vocab"), hidden}),
              {{positions, b.weight("position_embeddings", {p("max_positions"), hidden})},
               {segments, b.weight("token_type_embeddings", {2, hidden})}});
    x = b.op("dropout", {layers::layer_norm(b, x, "norm")});
  }
  for (std::int64_t l = 0; l < p("layers"); ++l) {
    x = post_ln_layer(b, x, p("heads"), 4 * hidden, "layer" + std::to_string(l));
  }
  b.output(x);
  // The pooler: the first token's state through a tanh dense layer.
  PortRef first = b.op("squeeze_axis", {b.op("slice_axis", {x}, {{"axis", 1}, {"start", 0}, {"size", 1}})}, {{"axis", 1}});
  b.output(layers::dense(b, first, hidden, "pooler", true, Activation::Tanh));
  return b.take();
}

pcg::Graph build_gpt3(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  const Table2Size size = table2_size("gpt3", p);
  PortRef x;
  PortRef table;
  if (p("embeddings")) {
    table = b.weight("wte", {p("vocab"), size.hidden});
    x = embed(b, ids_input(b, "input_ids", p("batch"), p("seq")), table,
              {{ids_input(b, "position_ids", p("batch"), p("seq")), b.weight("wpe", {p("seq"), size.hidden})}});
    x = b.op("dropout", {x});
  } else {
    x = b.input("hidden_states", {p("batch"), p("seq"), size.hidden});
  }
  for (std::int64_t l = 0; l < p("layers"); ++l) x = pre_ln_layer(b, x, size.heads, true, nullptr, "h" + std::to_string(l));
  if (p("embeddings")) x = tied_lm_head(b, layers::layer_norm(b, x, "ln_f"), table);
  b.output(x);
  return b.take();
}

pcg::Graph build_mbart(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  const Table2Size size = table2_size("mbart", p);
  if (p("layers") < 2 || p("layers") % 2 != 0) {
    throw LoomError("mbart: layers must be even and at least 2 (half encoder, half decoder), got " + std::to_string(p("layers")));
  }
  const std::int64_t positions = p("seq") + 2;  // mBART's learned positions are offset by 2
  PortRef table = b.weight("shared", {p("vocab"), size.hidden});
  auto embed_side = [&](const std::string& side) {
    GraphBuilder::Scope scope(b, side);
    PortRef x = embed(b, ids_input(b, "input_ids", p("batch"), p("seq")), table,
                      {{ids_input(b, "position_ids", p("batch"), p("seq")), b.weight("embed_positions", {positions, size.hidden})}});
    return b.op("dropout", {layers::layer_norm(b, x, "layernorm_embedding")});
  };
  PortRef memory = embed_side("encoder");
  for (std::int64_t l = 0; l < p("layers") / 2; ++l) {
    memory = pre_ln_layer(b, memory, size.heads, false, nullptr, "encoder.layers" + std::to_string(l));
  }
  memory = layers::layer_norm(b, memory, "encoder.layer_norm");
  PortRef x = embed_side("decoder");
  for (std::int64_t l = 0; l < p("layers") / 2; ++l) {
    x = pre_ln_layer(b, x, size.heads, true, &memory, "decoder.layers" + std::to_string(l));
  }
  x = layers::layer_norm(b, x, "decoder.layer_norm");
  b.output(b.op("softmax", {tied_lm_head(b, x, table)}, {}, "softmax"));
  return b.take();
}

}  // namespace

std::vector<ModelInfo> transformer_models() {
  std::vector<ModelParam> gpt3 = table2_params("gpt3");
  gpt3.insert(gpt3.begin(), {{"batch", 512, "sequences per iteration"},
                             {"seq", 16384, "sequence length (SuperScaler's long-document setting)"},
                             {"layers", 1, "transformer blocks"},
                             {"embeddings", 0, "1: add token and position embeddings, final norm and tied LM head"},
                             {"vocab", 50257, "vocabulary (with embeddings)"}});
  std::vector<ModelParam> mbart = table2_params("mbart");
  mbart.insert(mbart.begin(), {{"batch", 512, "sequence pairs per iteration"},
                               {"seq", 1024, "sequence length of source and target"},
                               {"layers", 2, "transformer layers, half encoder and half decoder"},
                               {"vocab", 500000, "shared vocabulary (SuperScaler's 500k)"}});
  return {
      {"bert_large",
       "BERT-Large (Unity; Devlin et al. 2019): 24 post-norm layers, hidden 1024, 16 heads, embeddings and pooler",
       {{"batch", 4, "sequences per iteration (Unity's per-GPU batch)"},
        {"seq", 512, "sequence length"},
        {"layers", 24, "encoder layers"},
        {"hidden", 1024, "hidden size (feed-forward 4x)"},
        {"heads", 16, "attention heads"},
        {"vocab", 30522, "WordPiece vocabulary"},
        {"max_positions", 512, "learned position embeddings"}},
       build_bert},
      {"gpt3", "GPT-3 blocks (SuperScaler; Brown et al. 2020): pre-norm causal self-attention and 4x GELU MLP", gpt3, build_gpt3},
      {"mbart", "mBART (SuperScaler; Liu et al. 2020): shared 500k embedding, pre-norm encoder and decoder layers, tied LM head", mbart,
       build_mbart},
  };
}

}  // namespace loom::models::zoo
