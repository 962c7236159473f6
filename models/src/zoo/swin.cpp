// Swin-Transformer blocks (Liu et al.; SuperScaler's evaluation at 1536x1536 images, table 2
// sizes): the first stage's tokens [batch, h, w, hidden] after 4x4 patch embedding; each block is
// window attention with a learned relative position bias (shifted by half a window, with the
// shift mask, in every second block) and a 4x GELU MLP, both pre-norm with residuals.
#include "loom/pcg/diagnostic.hpp"
#include "zoo/layers.hpp"
#include "zoo/table2.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

using layers::Activation;

pcg::Graph build_swin(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  const Table2Size size = table2_size("swin", p);
  const std::int64_t ws = p("window");
  if (p("patch") < 1 || p("resolution") % p("patch") != 0) throw LoomError("swin: patch must divide resolution");
  const std::int64_t side = p("resolution") / p("patch");
  if (ws < 2 || side % ws != 0) {
    throw LoomError("swin: window " + std::to_string(ws) + " must be at least 2 and divide the " + std::to_string(side) +
                    " tokens per side");
  }
  const std::int64_t tokens = ws * ws;
  const std::int64_t windows = (side / ws) * (side / ws);
  PortRef x = b.input("tokens", {p("batch"), side, side, size.hidden});
  // Constant index tables: the relative position of every token pair in a window, and the mask that
  // keeps shifted windows from attending across the wrapped-around border.
  PortRef relative_index = b.input("relative_position_index", {tokens, tokens});
  PortRef shift_mask = p("layers") > 1 ? b.input("attn_mask", {windows, tokens, tokens}) : PortRef{};
  for (std::int64_t l = 0; l < p("layers"); ++l) {
    GraphBuilder::Scope scope(b, "blocks" + std::to_string(l));
    const bool shifted = l % 2 == 1;
    const std::int64_t shift = ws / 2;
    PortRef n = layers::layer_norm(b, x, "norm1");
    if (shifted) n = b.op("cyclic_shift", {n}, {{"sh", shift}, {"sw", shift}});
    n = b.op("window_partition", {n}, {{"ws", ws}});
    PortRef table = b.weight("relative_position_bias_table", {(2 * ws - 1) * (2 * ws - 1), size.heads});
    layers::AttentionSpec spec(size.heads);
    spec.adjust_scores = [&](GraphBuilder& g, PortRef scores) {
      scores = g.op("add_relative_bias", {scores, g.op("gather_rows", {relative_index, table})});
      return shifted ? g.op("add_window_mask", {scores, shift_mask}) : scores;
    };
    PortRef a = layers::attention(b, n, n, spec, "attn");
    a = b.op("window_reverse", {a}, {{"ws", ws}, {"height", side}, {"width", side}});
    if (shifted) a = b.op("cyclic_shift", {a}, {{"sh", side - shift}, {"sw", side - shift}});
    x = b.op("ewadd", {x, a});
    PortRef f = layers::feed_forward(b, layers::layer_norm(b, x, "norm2"), 4 * size.hidden, Activation::Gelu, "mlp");
    x = b.op("ewadd", {x, f});
  }
  b.output(x);
  return b.take();
}

}  // namespace

std::vector<ModelInfo> swin_models() {
  std::vector<ModelParam> params = table2_params("swin");
  params.insert(params.begin(), {{"batch", 512, "images per iteration"},
                                 {"resolution", 1536, "image height and width"},
                                 {"patch", 4, "patch size: tokens per side are resolution / patch"},
                                 {"window", 24, "attention window side"},
                                 {"layers", 2, "blocks (every second one shifted)"}});
  return {{"swin", "Swin-Transformer blocks (SuperScaler): windowed attention with relative position bias, shifted", params, build_swin}};
}

}  // namespace loom::models::zoo
