#include "loom/gui/graph_layout.hpp"

#include <memory>
#include <mutex>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph_dot.hpp"

namespace loom::gui {
namespace {

// Graphviz keeps inches for node sizes and points for positions.
constexpr double kPointsPerInch = 72.0;

// One Graphviz context for the process, used by one layout at a time. Graphviz's text-size code
// keeps pointers into the context it last measured with, so a freed context leaves them dangling
// for the next one (a use after free AddressSanitizer finds on the second layout).
class SharedContext {
 public:
  SharedContext() : gvc_(gvContext()) {}
  SharedContext(const SharedContext&) = delete;
  SharedContext& operator=(const SharedContext&) = delete;
  GVC_t* get() const { return gvc_; }
  std::mutex& mutex() { return mutex_; }

 private:
  GVC_t* gvc_;  // never freed: it lives as long as the process
  std::mutex mutex_;
};

SharedContext& shared_context() {
  static SharedContext context;
  return context;
}

// Closes the graph after freeing the layout that gvLayout attached to it.
class LaidOutGraph {
 public:
  LaidOutGraph(GVC_t* gvc, Agraph_t* graph) : gvc_(gvc), graph_(graph) {}
  ~LaidOutGraph() {
    if (laid_out_) gvFreeLayout(gvc_, graph_);
    agclose(graph_);
  }
  LaidOutGraph(const LaidOutGraph&) = delete;
  LaidOutGraph& operator=(const LaidOutGraph&) = delete;

  Agraph_t* get() const { return graph_; }
  void mark_laid_out() { laid_out_ = true; }

 private:
  GVC_t* gvc_;
  Agraph_t* graph_;
  bool laid_out_ = false;
};

// DOT's escapes in graph_to_dot's labels (`\n`, `\"`, `\\`) back to text.
std::string unescape(const char* text) {
  std::string out;
  if (!text) return out;
  for (const char* c = text; *c; ++c) {
    if (*c == '\\' && c[1]) {
      ++c;
      out += *c == 'n' || *c == 'l' || *c == 'r' ? '\n' : *c;
    } else {
      out += *c;
    }
  }
  return out;
}

std::string attribute(void* object, const char* name) {
  char* value = agget(object, const_cast<char*>(name));
  return value ? value : "";
}

LayoutNode read_node(Agnode_t* n, const pcg::Graph& graph, double height) {
  LayoutNode node;
  const std::string name = agnameof(n);
  if (name.rfind("out", 0) == 0) {
    node.kind = LayoutNodeKind::Output;
    node.id = std::stoi(name.substr(3));
  } else {
    node.id = std::stoi(name.substr(1));
    const pcg::Node& pcg_node = graph.node(node.id);
    node.op = pcg_node.op;
    node.kind = pcg_node.op == pcg::kInputOp    ? LayoutNodeKind::Input
                : pcg_node.op == pcg::kWeightOp ? LayoutNodeKind::Weight
                                                : LayoutNodeKind::Operator;
    if (pcg_node.view && !pcg_node.view->devices.empty()) node.fill_color = attribute(n, "fillcolor");
  }
  node.label = unescape(agget(n, const_cast<char*>("label")));
  node.center = {ND_coord(n).x, height - ND_coord(n).y};
  node.width = ND_width(n) * kPointsPerInch;
  node.height = ND_height(n) * kPointsPerInch;
  return node;
}

LayoutEdge read_edge(Agedge_t* e, const std::vector<int>& index_of_gv_node, double height) {
  LayoutEdge edge;
  edge.from = index_of_gv_node[static_cast<std::size_t>(AGSEQ(agtail(e)))];
  edge.to = index_of_gv_node[static_cast<std::size_t>(AGSEQ(aghead(e)))];
  const splines* spl = ED_spl(e);
  if (spl && spl->size > 0) {
    const bezier& bz = spl->list[0];
    for (int i = 0; i < bz.size; ++i) edge.spline.push_back({bz.list[i].x, height - bz.list[i].y});
    if (bz.eflag) {
      edge.has_arrow = true;
      edge.arrow_tip = {bz.ep.x, height - bz.ep.y};
    }
  }
  if (const textlabel_t* label = ED_label(e); label && label->set) {
    edge.label = unescape(label->text);
    edge.label_center = {label->pos.x, height - label->pos.y};
  }
  return edge;
}

}  // namespace

std::size_t GraphLayout::operator_count() const {
  std::size_t count = 0;
  for (const LayoutNode& n : nodes) count += n.kind != LayoutNodeKind::Output;
  return count;
}

GraphLayout layout_graph(const pcg::Graph& graph, const LayoutOptions& options) {
  GraphLayout layout;
  if (graph.size() == 0) return layout;
  SharedContext& context = shared_context();
  const std::lock_guard lock(context.mutex());
  GVC_t* gvc = context.get();
  const std::string dot = pcg::graph_to_dot(graph);
  Agraph_t* parsed = agmemread(dot.c_str());
  if (!parsed) throw LoomError("graph layout: Graphviz could not read the graph");
  LaidOutGraph g(gvc, parsed);
  agattr(g.get(), AGRAPH, const_cast<char*>("rankdir"), const_cast<char*>("TB"));
  if (!options.edge_labels) {
    Agsym_t* label = agattr(g.get(), AGEDGE, const_cast<char*>("label"), const_cast<char*>(""));
    for (Agnode_t* n = agfstnode(g.get()); n; n = agnxtnode(g.get(), n))
      for (Agedge_t* e = agfstout(g.get(), n); e; e = agnxtout(g.get(), e)) agxset(e, label, const_cast<char*>(""));
  }
  if (gvLayout(gvc, g.get(), "dot") != 0) throw LoomError("graph layout: Graphviz's dot layout failed");
  g.mark_laid_out();

  const boxf bb = GD_bb(g.get());
  layout.width = bb.UR.x - bb.LL.x;
  layout.height = bb.UR.y - bb.LL.y;
  const double top = bb.UR.y;
  std::vector<int> index_of_gv_node(static_cast<std::size_t>(agnnodes(g.get())) + 1, -1);
  for (Agnode_t* n = agfstnode(g.get()); n; n = agnxtnode(g.get(), n)) {
    const auto seq = static_cast<std::size_t>(AGSEQ(n));
    if (seq >= index_of_gv_node.size()) index_of_gv_node.resize(seq + 1, -1);
    index_of_gv_node[seq] = static_cast<int>(layout.nodes.size());
    layout.nodes.push_back(read_node(n, graph, top));
  }
  for (Agnode_t* n = agfstnode(g.get()); n; n = agnxtnode(g.get(), n))
    for (Agedge_t* e = agfstout(g.get(), n); e; e = agnxtout(g.get(), e)) layout.edges.push_back(read_edge(e, index_of_gv_node, top));
  return layout;
}

}  // namespace loom::gui
