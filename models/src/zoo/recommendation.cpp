// Recommendation models. DLRM (Naumov et al. 2019) with its Criteo Kaggle configuration: 13 dense
// features through a 512-256-64-16 bottom MLP, 26 embedding tables of dimension 16 with the Kaggle
// cardinalities, concatenation interaction, a 512-256-1 top MLP. XDL as FlexFlow's benchmark
// builds it (Unity's evaluation): 4 embedding tables of 10^6 x 64, concatenated, a 256-256-2 MLP
// without biases. Lookups are embedding_bag over bags of one id.
#include "zoo/layers.hpp"
#include "zoo/zoo.hpp"

#include "loom/pcg/diagnostic.hpp"

namespace loom::models::zoo {
namespace {

using layers::Activation;

const std::vector<std::int64_t>& criteo_kaggle_rows() {
  static const std::vector<std::int64_t> rows = {1460,  583,  10131227, 2202608, 305, 24,     12517,   633,   3,
                                                 93145, 5683, 8351593,  3194,    27,  14992,  5461306, 10,    5652,
                                                 2173,  4,    7046547,  18,      15,  286181, 105,     142572};
  return rows;
}

PortRef mlp(GraphBuilder& b, PortRef x, const std::vector<std::int64_t>& widths, bool bias, Activation last, const std::string& name) {
  GraphBuilder::Scope scope(b, name);
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const Activation act = i + 1 == widths.size() ? last : Activation::Relu;
    x = layers::dense(b, x, widths[i], std::to_string(i), bias, act);
  }
  return x;
}

// Sparse features: one [batch, 1] id input and one embedding table per feature.
std::vector<PortRef> embeddings(GraphBuilder& b, std::int64_t batch, const std::vector<std::int64_t>& rows, std::int64_t dim) {
  std::vector<PortRef> out;
  for (std::size_t t = 0; t < rows.size(); ++t) {
    GraphBuilder::Scope scope(b, "emb" + std::to_string(t));
    PortRef ids = b.input("ids", {batch, 1});
    out.push_back(b.op("embedding_bag", {ids, b.weight("weight", {rows[t], dim})}, {}, "lookup"));
  }
  return out;
}

std::vector<std::int64_t> table_rows(const std::string& model, const Params& p, const std::vector<std::int64_t>& published) {
  if (p("tables") < 1) throw LoomError(model + ": tables must be at least 1");
  std::vector<std::int64_t> rows;
  for (std::int64_t t = 0; t < p("tables"); ++t) {
    if (p("rows") > 0) {
      rows.push_back(p("rows"));
    } else if (static_cast<std::size_t>(t) < published.size()) {
      rows.push_back(published[static_cast<std::size_t>(t)]);
    } else {
      throw LoomError(model + ": only " + std::to_string(published.size()) + " published table sizes; give rows > 0 for more tables");
    }
  }
  return rows;
}

pcg::Graph build_dlrm(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  PortRef dense = b.input("dense", {p("batch"), p("dense_features")});
  std::vector<PortRef> features{mlp(b, dense, {512, 256, 64, p("dim")}, true, Activation::Relu, "bot_l")};
  for (PortRef e : embeddings(b, p("batch"), table_rows("dlrm", p, criteo_kaggle_rows()), p("dim"))) {
    features.push_back(e);
  }
  PortRef z = layers::concat_all(b, features, 1);
  b.output(mlp(b, z, {512, 256, 1}, true, Activation::Sigmoid, "top_l"));
  return b.take();
}

pcg::Graph build_xdl(const spec::Library& lib, const Params& p) {
  GraphBuilder b(lib);
  PortRef z = layers::concat_all(b, embeddings(b, p("batch"), table_rows("xdl", p, {}), p("dim")), 1);
  b.output(mlp(b, z, {p("hidden"), p("hidden"), 2}, false, Activation::Sigmoid, "mlp"));
  return b.take();
}

}  // namespace

std::vector<ModelInfo> recommendation_models() {
  return {
      {"dlrm",
       "DLRM (Unity; Naumov et al. 2019), Criteo Kaggle configuration: 26 tables, bottom 13-512-256-64-16, top "
       "512-256-1",
       {{"batch", 1024, "samples per iteration"},
        {"dim", 16, "embedding dimension (bottom MLP output)"},
        {"dense_features", 13, "dense input features"},
        {"tables", 26, "embedding tables"},
        {"rows", 0, "rows of every table (0: the Criteo Kaggle cardinalities, 33.8M rows in all)"}},
       build_dlrm},
      {"xdl",
       "XDL as in FlexFlow's benchmark (Unity): 4 embedding tables of 10^6 x 64, concatenated, 256-256-2 MLP",
       {{"batch", 1024, "samples per iteration"},
        {"dim", 64, "embedding dimension"},
        {"tables", 4, "embedding tables"},
        {"rows", 1000000, "rows per table"},
        {"hidden", 256, "MLP width"}},
       build_xdl},
  };
}

}  // namespace loom::models::zoo
