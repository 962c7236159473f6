#pragma once
// The model zoo: every built-in model by its command-line name, with its integer parameters and
// their defaults. Models are PCGs over the spec library, built at the sizes asked for.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::models {

struct ModelParam {
  std::string name;
  std::int64_t default_value = 0;
  std::string help;
};

using ParamValues = std::map<std::string, std::int64_t>;

// The parameter values one build sees: the given values over the model's defaults.
class Params {
 public:
  Params(const std::vector<ModelParam>& declared, const ParamValues& given);
  // The value of a declared parameter (a programming error throws for an undeclared one).
  std::int64_t operator()(const std::string& name) const;

 private:
  std::map<std::string, std::int64_t> values_;
};

struct ModelInfo {
  std::string name;         // as written on the command line, e.g. "resnext50"
  std::string description;  // one line: the architecture and its source
  std::vector<ModelParam> params;
  std::function<pcg::Graph(const spec::Library&, const Params&)> build;
};

// Every model of the zoo, in the order `loom show --list` prints them.
const std::vector<ModelInfo>& model_zoo();
const ModelInfo* find_model(std::string_view name);

// Builds a zoo model. Throws LoomError naming the model for an unknown name, a parameter the model
// does not have (listing the ones it has), or sizes the architecture cannot take.
pcg::Graph build_model(const spec::Library& library, std::string_view name, const ParamValues& values = {});

}  // namespace loom::models
