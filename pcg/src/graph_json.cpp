#include "loom/pcg/graph_json.hpp"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/json_read.hpp"

namespace loom::pcg {

namespace {

using nlohmann::json;
using namespace json_read;

std::string port_json_text(PortRef port) {
  return "{\"node\": " + pcg::to_string(port.node) + ", \"port\": " + std::to_string(port.port) + "}";
}

PortRef read_port(const json& j, const std::string& path) {
  require_object(j, path);
  reject_unknown_keys(j, path, {"node", "port"});
  return PortRef{read_int(require(j, "node", path), member(path, "node")), read_int(require(j, "port", path), member(path, "port"))};
}

// Checks that `port` names an output of a node already read; `total` is the number of nodes the
// document lists; the nodes read so far are in `graph`.
void check_port(const Graph& graph, PortRef port, std::size_t total, const std::string& path) {
  const auto read = static_cast<int>(graph.size());
  if (port.node < 0 || port.node.index() >= total) {
    fail(path, "node " + pcg::to_string(port.node) + " does not exist (there are " + std::to_string(total) + " nodes)");
  }
  if (port.node >= read) {
    fail(path, "node " + pcg::to_string(port.node) + " is not listed before node " + std::to_string(read) +
                   " (a node must come after the nodes it reads)");
  }
  const Node& source = graph.node(port.node);
  if (port.port < 0 || static_cast<std::size_t>(port.port) >= source.output_shapes.size()) {
    fail(path, source.describe() + " has " + std::to_string(source.output_shapes.size()) + " output(s), so there is no port " +
                   std::to_string(port.port));
  }
}

AttrMap read_attrs(const json& j, const std::string& path) {
  require_object(j, path);
  AttrMap attrs;
  for (const auto& item : j.items()) {
    const std::string attr_path = member(path, item.key());
    if (!item.value().is_number_integer()) {
      fail(attr_path, "attribute values are integers, got " + item.value().dump());
    }
    if (item.value().is_number_unsigned() &&
        item.value().get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(attr_path, "integer out of range: " + item.value().dump());
    }
    attrs.emplace(item.key(), item.value().get<std::int64_t>());
  }
  return attrs;
}

std::vector<ParallelShape> read_shapes(const json& j, const std::string& path) {
  require_array(j, path);
  std::vector<ParallelShape> shapes;
  for (std::size_t i = 0; i < j.size(); ++i) {
    shapes.push_back(read_value<ParallelShape>(j[i], indexed(path, i)));
  }
  return shapes;
}

std::string shapes_text(const std::vector<ParallelShape>& shapes) {
  std::string out;
  for (const ParallelShape& s : shapes) out += (out.empty() ? "" : ", ") + s.to_string();
  return "(" + out + ")";
}

Graph read_recipe(const json& j, const std::string& path, const ParallelShape& folded, const OpCatalog& catalog) {
  Graph parts;
  try {
    parts = graph_from_json(j, catalog);
  } catch (const LoomError& e) {
    fail(path, e.what());
  }
  for (const Node& n : parts.nodes()) {
    if (n.op == kInputOp) fail(path, n.describe() + " is an input; a weight is folded from weights only");
    if (n.folded_from) fail(path, n.describe() + " is folded itself; a recipe reads the model's own weights");
  }
  if (parts.outputs().size() != 1) fail(path, "a folded weight's recipe has one output, not " + std::to_string(parts.outputs().size()));
  if (parts.shape_of(parts.outputs().front()).dims != folded.dims)
    fail(path, "the recipe makes " + parts.shape_of(parts.outputs().front()).to_string() + ", the weight is " + folded.to_string());
  return parts;
}

void read_node(const json& j, std::size_t index, std::size_t total, const OpCatalog& catalog, Graph& graph) {
  const std::string path = indexed("nodes", index);
  const int id = static_cast<int>(index);
  require_object(j, path);
  reject_unknown_keys(j, path, {"id", "op", "name", "attrs", "inputs", "output_shapes", "view", "folded_from"});
  if (j.contains("id") && read_int(j.at("id"), member(path, "id")) != id) {
    fail(member(path, "id"),
         "node ids must equal their position in \"nodes\", expected " + std::to_string(id) + ", got " + j.at("id").dump());
  }
  const std::string op = read_string(require(j, "op", path), member(path, "op"));
  const std::string name = j.contains("name") ? read_string(j.at("name"), member(path, "name")) : std::string();
  const AttrMap attrs = j.contains("attrs") ? read_attrs(j.at("attrs"), member(path, "attrs")) : AttrMap{};

  std::vector<PortRef> inputs;
  if (j.contains("inputs")) {
    const std::string inputs_path = member(path, "inputs");
    const json& list = require_array(j.at("inputs"), inputs_path);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string input_path = indexed(inputs_path, i);
      inputs.push_back(read_port(list[i], input_path));
      check_port(graph, inputs.back(), total, input_path);
    }
  }

  const std::string shapes_path = member(path, "output_shapes");
  const bool is_graph_input = op == kInputOp || op == kWeightOp;
  std::vector<ParallelShape> shapes;
  if (j.contains("output_shapes")) {
    shapes = read_shapes(j.at("output_shapes"), shapes_path);
  } else if (is_graph_input) {
    fail(path, "missing \"output_shapes\" (a graph input must give its shape)");
  }

  if (is_graph_input) {
    if (!inputs.empty()) fail(member(path, "inputs"), "a graph input cannot read other nodes");
    if (!attrs.empty()) fail(member(path, "attrs"), "a graph input has no attributes");
    if (shapes.size() != 1) fail(shapes_path, "a graph input has exactly one output shape");
    if (j.contains("folded_from")) {
      if (op != kWeightOp) fail(member(path, "folded_from"), "only a weight is folded from others");
      FoldRecipe recipe{
          std::make_shared<const Graph>(read_recipe(j.at("folded_from"), member(path, "folded_from"), shapes.front(), catalog))};
      at_path(path, [&] { graph.add_folded_weight(name, shapes.front(), std::move(recipe)); });
    } else {
      at_path(path, [&] { graph.add_input(name, shapes.front(), op == kWeightOp); });
    }
  } else {
    if (!catalog.has_op(op)) fail(member(path, "op"), "unknown operator \"" + op + "\"");
    at_path(path, [&] { graph.add_node(catalog, op, attrs, inputs, name); });
    const std::vector<ParallelShape>& inferred = graph.node(id).output_shapes;
    if (j.contains("output_shapes") && shapes != inferred) {
      fail(shapes_path, "stored shapes " + shapes_text(shapes) + " differ from the inferred " + shapes_text(inferred));
    }
  }
  if (j.contains("view")) {
    const std::string view_path = member(path, "view");
    MachineView view = read_value<MachineView>(j.at("view"), view_path);
    at_path(view_path, [&] { graph.set_view(id, std::move(view)); });
  }
}

}  // namespace

json graph_to_json(const Graph& graph) {
  json nodes = json::array();
  for (const Node& n : graph.nodes()) {
    json inputs = json::array();
    for (PortRef in : n.inputs) inputs.push_back({{"node", in.node}, {"port", in.port}});
    json node = {{"id", n.id},
                 {"op", n.op},
                 {"name", n.name},
                 {"attrs", json::object()},
                 {"inputs", std::move(inputs)},
                 {"output_shapes", n.output_shapes}};
    for (const auto& [key, value] : n.attrs) node["attrs"][key] = value;
    if (n.view) node["view"] = *n.view;
    if (n.folded_from) node["folded_from"] = graph_to_json(*n.folded_from.parts);
    nodes.push_back(std::move(node));
  }
  json outputs = json::array();
  for (PortRef out : graph.outputs()) outputs.push_back({{"node", out.node}, {"port", out.port}});
  return json{{"format", kGraphFormat}, {"version", kGraphFormatVersion}, {"nodes", std::move(nodes)}, {"outputs", std::move(outputs)}};
}

Graph graph_from_json(const json& j, const OpCatalog& catalog) {
  check_format(j, kGraphFormat, kGraphFormatVersion, "Loom graph");
  reject_unknown_keys(j, "", {"format", "version", "nodes", "outputs"});

  Graph graph;
  const json& nodes = require_array(require(j, "nodes", ""), "nodes");
  for (std::size_t i = 0; i < nodes.size(); ++i) read_node(nodes[i], i, nodes.size(), catalog, graph);

  if (j.contains("outputs")) {
    const json& outputs = require_array(j.at("outputs"), "outputs");
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const std::string path = indexed("outputs", i);
      const PortRef port = read_port(outputs[i], path);
      check_port(graph, port, graph.size(), path);
      for (PortRef earlier : graph.outputs()) {
        if (earlier == port) fail(path, port_json_text(port) + " is listed twice");
      }
      graph.mark_output(port);
    }
  }
  return graph;
}

}  // namespace loom::pcg
