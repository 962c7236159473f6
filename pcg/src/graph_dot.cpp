#include "loom/pcg/graph_dot.hpp"

#include <array>
#include <sstream>
#include <vector>

namespace loom::pcg {

namespace {

// ColorBrewer Set3: light enough that black text stays readable.
constexpr std::array<const char*, 12> kDeviceColors = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                                       "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};

// Lines of a label, escaped and joined with DOT's centered line break.
std::string label(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) {
    if (!out.empty()) out += "\\n";
    out += dot_escape(line);
  }
  return out;
}

std::string node_label(const Node& n) {
  std::vector<std::string> lines{n.op};
  if (!n.name.empty()) lines.push_back(n.name);
  if (!n.attrs.empty()) {
    std::string attrs;
    for (const auto& [key, value] : n.attrs) {
      attrs += (attrs.empty() ? "" : ", ") + key + "=" + std::to_string(value);
    }
    lines.push_back(attrs);
  }
  for (std::size_t i = 0; i < n.output_shapes.size(); ++i) {
    const std::string shape = n.output_shapes[i].to_string();
    lines.push_back(n.output_shapes.size() == 1 ? shape : "#" + std::to_string(i) + " " + shape);
  }
  if (n.view && !n.view->devices.empty()) lines.push_back("devices " + n.view->to_string());
  return label(lines);
}

std::string node_attributes(const Node& n) {
  std::string style;
  std::string shape = "box";
  if (n.op == kInputOp) {
    shape = "ellipse";
  } else if (n.op == kWeightOp) {
    shape = "cylinder";
  } else {
    style = "rounded";
  }
  std::string out = "shape=" + shape;
  if (n.view && !n.view->devices.empty()) {
    const auto color = static_cast<std::size_t>(n.view->devices.front()) % kDeviceColors.size();
    style += style.empty() ? "filled" : ",filled";
    out += std::string(", fillcolor=\"") + kDeviceColors[color] + "\"";
  }
  if (!style.empty()) out += ", style=\"" + style + "\"";
  return out + ", label=\"" + node_label(n) + "\"";
}

std::string edge_label(const Graph& graph, PortRef port) {
  const std::string shape = graph.shape_of(port).to_string();
  const bool several = graph.node(port.node).output_shapes.size() > 1;
  return dot_escape(several ? "#" + std::to_string(port.port) + " " + shape : shape);
}

}  // namespace

std::string dot_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': break;
      default: out += c;
    }
  }
  return out;
}

std::string graph_to_dot(const Graph& graph) {
  std::ostringstream dot;
  dot << "digraph pcg {\n"
      << "  node [fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  for (const Node& n : graph.nodes()) {
    dot << "  n" << n.id << " [" << node_attributes(n) << "];\n";
  }
  for (const Node& n : graph.nodes()) {
    for (PortRef in : n.inputs) {
      dot << "  n" << in.node << " -> n" << n.id << " [label=\"" << edge_label(graph, in) << "\"];\n";
    }
  }
  const std::vector<PortRef>& outputs = graph.outputs();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    dot << "  out" << i << " [shape=plaintext, label=\"output " << i << "\"];\n"
        << "  n" << outputs[i].node << " -> out" << i << " [label=\"" << edge_label(graph, outputs[i]) << "\"];\n";
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace loom::pcg
