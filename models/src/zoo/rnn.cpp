// FlexFlow's recurrent models, unrolled over 40 steps as in its evaluation: RNNTC (4 LSTM layers of
// 1024, text classification from the last state), RNNLM (2 LSTM layers of 2048, a softmax over the
// vocabulary at every step) and NMT (a 2-layer encoder and a 2-layer decoder of 1024, Luong dot
// attention on the top decoder layer, a softmax at every decoder step). Each step of each layer is
// one lstm_cell reading the layer's shared weights; initial states are graph inputs.
#include "zoo/layers.hpp"
#include "zoo/zoo.hpp"

namespace loom::models::zoo {
namespace {

using layers::Activation;

struct LstmWeights {
  PortRef w, u, bias;
};

// A stack of LSTM layers unrolled over time.
class LstmStack {
 public:
  // With `continue_from`, the stack starts from that stack's current states (an encoder handing
  // over to a decoder); otherwise its initial states are graph inputs.
  LstmStack(GraphBuilder& b, const std::string& name, std::int64_t batch, std::int64_t in, std::int64_t hidden, std::int64_t layers,
            const LstmStack* continue_from = nullptr)
      : b_(b), name_(name) {
    GraphBuilder::Scope scope(b, name);
    for (std::int64_t l = 0; l < layers; ++l) {
      GraphBuilder::Scope layer(b, "layer" + std::to_string(l));
      const std::int64_t k = l == 0 ? in : hidden;
      weights_.push_back(
          {b.weight("weight_ih", {k, 4 * hidden}), b.weight("weight_hh", {hidden, 4 * hidden}), b.weight("bias", {4 * hidden})});
      if (!continue_from) {
        h_.push_back(b.input("h0", {batch, hidden}));
        c_.push_back(b.input("c0", {batch, hidden}));
      }
    }
    if (continue_from) {
      h_ = continue_from->h_;
      c_ = continue_from->c_;
    }
  }

  // One time step: feeds x through every layer, returns the top layer's new state.
  PortRef step(PortRef x, std::int64_t t) {
    GraphBuilder::Scope scope(b_, name_);
    for (std::size_t l = 0; l < weights_.size(); ++l) {
      const LstmWeights& w = weights_[l];
      auto out =
          b_.op_outputs("lstm_cell", {x, h_[l], c_[l], w.w, w.u, w.bias}, {}, "layer" + std::to_string(l) + ".step" + std::to_string(t));
      h_[l] = out[0];
      c_[l] = out[1];
      x = h_[l];
    }
    return x;
  }

 private:
  GraphBuilder& b_;
  std::string name_;
  std::vector<LstmWeights> weights_;
  std::vector<PortRef> h_, c_;
};

// Token ids of one step, [batch], looked up in `table`.
PortRef embed_step(GraphBuilder& b, PortRef table, std::int64_t batch, const std::string& side, std::int64_t t) {
  PortRef ids = b.input(side + ".tokens" + std::to_string(t), {batch});
  return b.op("embedding", {ids, table});
}

// A softmax output layer shared by every step: dense with bias, then softmax.
struct SoftmaxLayer {
  PortRef w, bias;
};

SoftmaxLayer softmax_layer(GraphBuilder& b, const std::string& name, std::int64_t in, std::int64_t out) {
  GraphBuilder::Scope scope(b, name);
  return {b.weight("weight", {in, out}), b.weight("bias", {out})};
}

PortRef apply_softmax(GraphBuilder& b, const SoftmaxLayer& s, PortRef x) { return b.op("softmax", {b.op("linear", {x, s.w, s.bias})}); }

pcg::Graph build_rnntc(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  PortRef table = b.weight("embedding", {p("vocab"), p("hidden")});
  LstmStack lstm(b, "lstm", p("batch"), p("hidden"), p("hidden"), p("layers"));
  PortRef top;
  for (std::int64_t t = 0; t < p("steps"); ++t) top = lstm.step(embed_step(b, table, p("batch"), "input", t), t);
  b.output(apply_softmax(b, softmax_layer(b, "classifier", p("hidden"), p("classes")), top));
  return b.take();
}

pcg::Graph build_rnnlm(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  PortRef table = b.weight("embedding", {p("vocab"), p("hidden")});
  LstmStack lstm(b, "lstm", p("batch"), p("hidden"), p("hidden"), p("layers"));
  const SoftmaxLayer out = softmax_layer(b, "decoder", p("hidden"), p("vocab"));
  for (std::int64_t t = 0; t < p("steps"); ++t) {
    b.output(apply_softmax(b, out, lstm.step(embed_step(b, table, p("batch"), "input", t), t)));
  }
  return b.take();
}

pcg::Graph build_nmt(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  const std::int64_t n = p("hidden");
  PortRef source_table = b.weight("encoder.embedding", {p("vocab"), n});
  PortRef target_table = b.weight("decoder.embedding", {p("vocab"), n});
  LstmStack encoder(b, "encoder", p("batch"), n, n, p("layers"));
  std::vector<PortRef> states;
  for (std::int64_t t = 0; t < p("steps"); ++t) {
    PortRef h = encoder.step(embed_step(b, source_table, p("batch"), "source", t), t);
    states.push_back(b.op("unsqueeze_axis", {h}, {{"axis", 1}}));
  }
  PortRef memory = layers::concat_all(b, states, 1);  // [batch, steps, hidden]
  LstmStack decoder(b, "decoder", p("batch"), n, n, p("layers"), &encoder);
  PortRef combine_w = b.weight("attention.combine.weight", {2 * n, n});
  PortRef combine_b = b.weight("attention.combine.bias", {n});
  const SoftmaxLayer out = softmax_layer(b, "generator", n, p("vocab"));
  for (std::int64_t t = 0; t < p("steps"); ++t) {
    PortRef h = decoder.step(embed_step(b, target_table, p("batch"), "target", t), t);
    PortRef context = b.op("dot_attention", {h, memory});
    PortRef attended = b.op("tanh", {b.op("linear", {b.op("concat", {context, h}, {{"axis", 1}}), combine_w, combine_b})});
    b.output(apply_softmax(b, out, attended));
  }
  return b.take();
}

std::vector<ModelParam> rnn_params(std::int64_t layers, std::int64_t hidden, std::int64_t vocab) {
  return {{"batch", 64, "sequences per iteration"},
          {"steps", 40, "unrolled time steps"},
          {"layers", layers, "LSTM layers"},
          {"hidden", hidden, "LSTM hidden size (and embedding size)"},
          {"vocab", vocab, "vocabulary"}};
}

}  // namespace

std::vector<ModelInfo> rnn_models() {
  std::vector<ModelParam> rnntc = rnn_params(4, 1024, 20480);
  rnntc.push_back({"classes", 2, "text classes"});
  return {
      {"rnntc", "RNNTC (FlexFlow): 4 LSTM layers of 1024 unrolled 40 steps, softmax classifier on the last state", rnntc, build_rnntc},
      {"rnnlm", "RNNLM (FlexFlow): 2 LSTM layers of 2048 unrolled 40 steps, a softmax over the vocabulary per step",
       rnn_params(2, 2048, 10000), build_rnnlm},
      {"nmt", "NMT (FlexFlow): 2-layer LSTM encoder and decoder of 1024 unrolled 40 steps, dot attention, softmax per step",
       rnn_params(2, 1024, 20480), build_nmt},
  };
}

}  // namespace loom::models::zoo
