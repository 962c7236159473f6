#include "loom/pcg/declared_shape.hpp"

#include "loom/pcg/json_read.hpp"

namespace loom::pcg {

namespace {

using SizeMap = std::map<std::string, std::int64_t>;

bool bind(SizeMap& sizes, const DeclaredDim& dim, std::int64_t size) {
  if (dim.symbol.empty()) return dim.size == size;
  auto [it, fresh] = sizes.emplace(dim.symbol, size);
  return fresh || it->second == size;
}

std::string dim_text(const DeclaredDim& d) { return d.symbol.empty() ? std::to_string(d.size) : d.symbol; }

nlohmann::json dim_json(const DeclaredDim& d) {
  if (d.symbol.empty()) return d.size;
  return d.symbol;
}

DeclaredDim dim_from_json(const nlohmann::json& j, const std::string& path) {
  if (j.is_number_integer()) return DeclaredDim::number(j.get<std::int64_t>());
  const std::string text = json_read::read_string(j, path);
  if (text.empty() || text == "*") json_read::fail(path, "expected a symbol or a number, got \"" + text + "\"");
  return DeclaredDim::named(text);
}

}  // namespace

std::optional<SizeMap> declared_sizes(const DeclaredShapes& declared, const Graph& graph, const std::map<std::string, PortRef>& bindings) {
  SizeMap sizes = declared.fixed;
  for (const auto& [variable, shape] : declared.variables) {
    auto bound = bindings.find(variable);
    if (bound == bindings.end()) continue;
    const std::vector<std::int64_t>& dims = graph.shape_of(bound->second).dims;
    const std::size_t written = shape.front.size() + shape.back.size();
    if (shape.rank_pack ? dims.size() < written : dims.size() != written) return std::nullopt;
    for (std::size_t i = 0; i < shape.front.size(); ++i)
      if (!bind(sizes, shape.front[i], dims[i])) return std::nullopt;
    const std::size_t back_start = dims.size() - shape.back.size();
    for (std::size_t i = 0; i < shape.back.size(); ++i)
      if (!bind(sizes, shape.back[i], dims[back_start + i])) return std::nullopt;
  }
  return sizes;
}

std::string to_string(const DeclaredShape& shape) {
  std::string out = "[";
  auto add = [&](const std::string& text) { out += (out.size() > 1 ? ", " : "") + text; };
  for (const DeclaredDim& d : shape.front) add(dim_text(d));
  if (shape.rank_pack) add("*");
  for (const DeclaredDim& d : shape.back) add(dim_text(d));
  return out + "]";
}

nlohmann::json declared_shapes_to_json(const DeclaredShapes& declared) {
  nlohmann::json variables = nlohmann::json::object();
  for (const auto& [name, shape] : declared.variables) {
    nlohmann::json dims = nlohmann::json::array();
    for (const DeclaredDim& d : shape.front) dims.push_back(dim_json(d));
    if (shape.rank_pack) dims.push_back("*");
    for (const DeclaredDim& d : shape.back) dims.push_back(dim_json(d));
    variables[name] = std::move(dims);
  }
  return {{"variables", std::move(variables)}, {"fixed", declared.fixed}};
}

DeclaredShapes declared_shapes_from_json(const nlohmann::json& j, const std::string& path) {
  using namespace json_read;
  require_object(j, path);
  reject_unknown_keys(j, path, {"variables", "fixed"});
  DeclaredShapes declared;
  if (j.contains("variables")) {
    const std::string at = member(path, "variables");
    require_object(j.at("variables"), at);
    for (const auto& [name, list] : j.at("variables").items()) {
      const std::string item = member(at, name);
      require_array(list, item);
      DeclaredShape shape;
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (list[i] == "*") {
          if (shape.rank_pack) fail(indexed(item, i), "a shape has at most one rank pack");
          shape.rank_pack = true;
          continue;
        }
        (shape.rank_pack ? shape.back : shape.front).push_back(dim_from_json(list[i], indexed(item, i)));
      }
      declared.variables.emplace(name, std::move(shape));
    }
  }
  if (j.contains("fixed")) {
    const std::string at = member(path, "fixed");
    require_object(j.at("fixed"), at);
    for (const auto& [name, value] : j.at("fixed").items()) {
      if (!value.is_number_integer()) fail(member(at, name), "expected an integer, got " + value.dump());
      declared.fixed[name] = value.get<std::int64_t>();
    }
  }
  return declared;
}

}  // namespace loom::pcg
