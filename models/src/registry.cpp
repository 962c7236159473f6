#include "loom/models/registry.hpp"

#include "loom/pcg/diagnostic.hpp"
#include "zoo/zoo.hpp"

namespace loom::models {

Params::Params(const std::vector<ModelParam>& declared, const ParamValues& given) {
  for (const ModelParam& p : declared) values_[p.name] = p.default_value;
  for (const auto& [name, value] : given) values_[name] = value;
}

std::int64_t Params::operator()(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("model parameter '" + name + "' is not declared");
  return it->second;
}

const std::vector<ModelInfo>& model_zoo() {
  static const std::vector<ModelInfo> zoo = [] {
    std::vector<ModelInfo> all;
    for (auto family : {zoo::resnet_models, zoo::inception_models, zoo::transformer_models, zoo::recommendation_models, zoo::candle_models,
                        zoo::mlp_models, zoo::alexnet_models, zoo::rnn_models, zoo::swin_models, zoo::alphafold_models}) {
      for (ModelInfo& m : family()) all.push_back(std::move(m));
    }
    // The order of the issue: Unity's models, FlexFlow's, SuperScaler's.
    const std::vector<std::string> order = {"resnext50", "inception_v3", "bert_large", "dlrm",      "xdl",       "candle_uno",
                                            "mlp",       "mlp_fig1",     "alexnet",    "resnet101", "rnntc",     "rnnlm",
                                            "nmt",       "swin",         "gpt3",       "mbart",     "alphafold2"};
    std::vector<ModelInfo> sorted;
    for (const std::string& name : order) {
      for (ModelInfo& m : all) {
        if (m.name == name) sorted.push_back(std::move(m));
      }
    }
    if (sorted.size() != all.size()) throw std::logic_error("model zoo: a model is missing from the listing order");
    return sorted;
  }();
  return zoo;
}

const ModelInfo* find_model(std::string_view name) {
  for (const ModelInfo& m : model_zoo()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

pcg::Graph build_model(const spec::Library& library, std::string_view name, const ParamValues& values) {
  const ModelInfo* model = find_model(name);
  if (!model) {
    std::string known;
    for (const ModelInfo& m : model_zoo()) known += (known.empty() ? "" : ", ") + m.name;
    throw LoomError("unknown model '" + std::string(name) + "'; the zoo has: " + known);
  }
  for (const auto& [param, value] : values) {
    bool declared = false;
    for (const ModelParam& p : model->params) declared |= p.name == param;
    if (!declared) {
      std::string known;
      for (const ModelParam& p : model->params) known += (known.empty() ? "" : ", ") + p.name;
      throw LoomError("model " + model->name + " has no parameter '" + param + "'; its parameters are: " + known);
    }
  }
  try {
    return model->build(library, Params(model->params, values));
  } catch (const LoomError& e) {
    std::vector<Diagnostic> diagnostics = e.diagnostics();
    for (Diagnostic& d : diagnostics) d.message = "model " + model->name + ": " + d.message;
    throw LoomError(std::move(diagnostics));
  }
}

}  // namespace loom::models
