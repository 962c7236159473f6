#include "loom/runtime/folded_weights.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "loom/interpreter/element_sources.hpp"
#include "loom/interpreter/program.hpp"
#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {

namespace {

// A recipe without its weights' names: the layers of a model fold alike, and share their sources.
std::string recipe_form(const pcg::Graph& recipe) {
  std::string form;
  for (const pcg::Node& n : recipe.nodes()) {
    form += n.op + spec::dims_to_string(n.output_shapes.front().dims) + "<";
    for (const auto& [name, value] : n.attrs) form += name + "=" + std::to_string(value) + ",";
    form += ">(";
    for (pcg::PortRef in : n.inputs) form += pcg::to_string(in.node) + "." + std::to_string(in.port) + ",";
    form += ");";
  }
  return form;
}

}  // namespace

FoldedWeights::FoldedWeights(const spec::Library& library, const pcg::Graph& graph) {
  std::map<std::string, std::shared_ptr<const std::vector<std::int64_t>>> by_form;
  for (const pcg::Node& n : graph.nodes()) {
    if (!n.folded_from) continue;
    Fold fold{n.name, n.output_shapes.front().dims, {}, {}, {}};
    for (const pcg::Node& part : n.folded_from.parts->nodes())
      if (part.is_graph_input()) {
        fold.parts.push_back(part.name);
        fold.part_dims.push_back(part.output_shapes.front().dims);
      }
    auto& sources = by_form[recipe_form(*n.folded_from.parts)];
    if (!sources) {
      auto found = spec::element_sources(library, *n.folded_from.parts);
      if (!found)
        throw LoomError("folded weight '" + n.name + "': its recipe does not hold each element of the weights it is folded from once");
      sources = std::make_shared<const std::vector<std::int64_t>>(std::move(*found));
    }
    fold.sources = sources;
    folds_.push_back(std::move(fold));
  }
}

template <class T>
NamedTensors<T> FoldedWeights::folded(NamedTensors<T> by_parts) const {
  for (const Fold& fold : folds_) {
    std::vector<T> all;
    std::size_t found = 0;
    for (std::size_t i = 0; i < fold.parts.size(); ++i) {
      auto it = by_parts.find(fold.parts[i]);
      if (it == by_parts.end()) continue;
      if (it->second.dims != fold.part_dims[i])
        throw LoomError("weight '" + fold.parts[i] + "' has shape " + spec::dims_to_string(it->second.dims) + ", the folded weight '" +
                        fold.name + "' takes it as " + spec::dims_to_string(fold.part_dims[i]));
      ++found;
    }
    if (found == 0) continue;
    for (std::size_t i = 0; i < fold.parts.size(); ++i) {
      auto it = by_parts.find(fold.parts[i]);
      if (it == by_parts.end())
        throw LoomError("the folded weight '" + fold.name + "' needs weight '" + fold.parts[i] + "', which is not given");
      all.insert(all.end(), it->second.data.begin(), it->second.data.end());
      by_parts.erase(it);
    }
    Tensor<T> made(fold.dims);
    const std::vector<std::int64_t>& sources = *fold.sources;
    for (std::size_t i = 0; i < made.data.size(); ++i) made.data[i] = all[static_cast<std::size_t>(sources[i])];
    by_parts.insert_or_assign(fold.name, std::move(made));
  }
  return by_parts;
}

template <class T>
NamedTensors<T> FoldedWeights::by_parts(NamedTensors<T> weights) const {
  for (const Fold& fold : folds_) {
    auto it = weights.find(fold.name);
    if (it == weights.end()) continue;
    if (it->second.dims != fold.dims)
      throw LoomError("folded weight '" + fold.name + "' has shape " + spec::dims_to_string(it->second.dims) + ", the plan " +
                      spec::dims_to_string(fold.dims));
    const std::vector<std::int64_t>& sources = *fold.sources;
    std::vector<T> all(sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) all[static_cast<std::size_t>(sources[i])] = it->second.data[i];
    weights.erase(it);
    std::size_t at = 0;
    for (std::size_t i = 0; i < fold.parts.size(); ++i) {
      Tensor<T> part(fold.part_dims[i]);
      std::copy(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + part.data.size()),
                part.data.begin());
      at += part.data.size();
      weights.insert_or_assign(fold.parts[i], std::move(part));
    }
  }
  return weights;
}

template NamedTensors<float> FoldedWeights::folded(NamedTensors<float>) const;
template NamedTensors<double> FoldedWeights::folded(NamedTensors<double>) const;
template NamedTensors<float> FoldedWeights::by_parts(NamedTensors<float>) const;
template NamedTensors<double> FoldedWeights::by_parts(NamedTensors<double>) const;

}  // namespace loom::runtime
