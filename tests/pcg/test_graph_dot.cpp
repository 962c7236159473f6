#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "error_text.hpp"
#include "fake_catalog.hpp"
#include "loom/pcg/graph_dot.hpp"

namespace loom::pcg {
namespace {

using test_support::contains;
using test_support::FakeCatalog;

struct Sample {
  Graph graph;
  int x = 0, w = 0, fc = 0, halves = 0, tail = 0;

  explicit Sample(const OpCatalog& catalog) {
    ParallelShape rows = ParallelShape::unpartitioned({8, 4});
    rows.D = {2, 1};
    ParallelShape copied = ParallelShape::unpartitioned({4, 6});
    copied.R = 2;
    x = graph.add_input("x", rows);
    w = graph.add_input("w", copied, /*is_weight=*/true);
    fc = graph.add_node(catalog, "matmul", {}, {{x, 0}, {w, 0}}, "fc");
    graph.set_view(fc, MachineView{{3, 1}});
    const int y = graph.add_input("y", ParallelShape::unpartitioned({4, 6}));
    halves = graph.add_node(catalog, "split", {{"axis", 1}}, {{y, 0}});
    tail = graph.add_node(catalog, "relu", {}, {{halves, 1}}, "say \"hi\"");
    graph.mark_output({fc, 0});
    graph.mark_output({tail, 0});
  }
};

// Each test starts from the sample graph and its DOT text.
class GraphDot : public ::testing::Test {
 protected:
  const FakeCatalog catalog;
  Sample s{catalog};
  const std::string dot = graph_to_dot(s.graph);
};

// The statement that declares DOT node `id` (e.g. "n2"), or "" when there is none.
std::string node_line(const std::string& dot, const std::string& id) {
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("  " + id + " [")) return line;
  }
  return "";
}

// The fillcolor attribute of a node statement, or "" when it has none.
std::string fill_color(const std::string& line) {
  const std::string key = "fillcolor=\"";
  const auto start = line.find(key);
  if (start == std::string::npos) return "";
  return line.substr(start + key.size(), line.find('"', start + key.size()) - start - key.size());
}

TEST_F(GraphDot, IsADigraphWithOneStatementPerNode) {
  EXPECT_TRUE(dot.starts_with("digraph pcg {\n"));
  EXPECT_TRUE(dot.ends_with("}\n"));
  for (const Node& n : s.graph.nodes()) {
    EXPECT_NE(node_line(dot, "n" + pcg::to_string(n.id)), "") << "no statement for node " << n.id;
  }
  EXPECT_EQ(node_line(dot, "n6"), "");
}

TEST_F(GraphDot, LabelsShowOpNameAttributesAndShapes) {
  EXPECT_TRUE(contains(node_line(dot, "n2"), "label=\"matmul\\nfc\\n[8/2, 6]\\ndevices 3,1\""));
  EXPECT_TRUE(contains(node_line(dot, "n4"), "label=\"split\\naxis=1\\n#0 [4, 3]\\n#1 [4, 3]\""));
  EXPECT_TRUE(contains(node_line(dot, "n1"), "label=\"weight\\nw\\n[4, 6]{R2}\""));
}

TEST_F(GraphDot, InputsWeightsAndOpsHaveDifferentShapes) {
  EXPECT_TRUE(contains(node_line(dot, "n0"), "shape=ellipse"));
  EXPECT_TRUE(contains(node_line(dot, "n1"), "shape=cylinder"));
  EXPECT_TRUE(contains(node_line(dot, "n2"), "shape=box"));
}

TEST_F(GraphDot, EdgesCarryTheTensorShape) {
  EXPECT_TRUE(contains(dot, "  n0 -> n2 [label=\"[8/2, 4]\"];\n"));
  EXPECT_TRUE(contains(dot, "  n1 -> n2 [label=\"[4, 6]{R2}\"];\n"));
  EXPECT_TRUE(contains(dot, "  n4 -> n5 [label=\"#1 [4, 3]\"];\n"));
}

TEST_F(GraphDot, GraphOutputsAreDrawn) {
  EXPECT_TRUE(contains(dot, "  n2 -> out0 [label=\"[8/2, 6]\"];\n"));
  EXPECT_TRUE(contains(dot, "  n5 -> out1 [label=\"[4, 3]\"];\n"));
  EXPECT_TRUE(contains(node_line(dot, "out1"), "label=\"output 1\""));
}

TEST_F(GraphDot, NodesAreColoredByTheirFirstDevice) {
  s.graph.set_view(s.x, MachineView{{3, 0}});
  s.graph.set_view(s.w, MachineView{{0, 1}});
  const std::string colored = graph_to_dot(s.graph);
  const std::string fc = fill_color(node_line(colored, "n2"));
  EXPECT_NE(fc, "");
  EXPECT_EQ(fill_color(node_line(colored, "n0")), fc);  // both start on device 3
  EXPECT_NE(fill_color(node_line(colored, "n1")), fc);  // starts on device 0
  EXPECT_NE(fill_color(node_line(colored, "n1")), "");
  EXPECT_EQ(fill_color(node_line(colored, "n4")), "");  // no view, no fill
  EXPECT_TRUE(contains(node_line(colored, "n2"), "style=\"rounded,filled\""));
  EXPECT_TRUE(contains(node_line(colored, "n0"), "style=\"filled\""));
}

TEST_F(GraphDot, EscapeQuotesBackslashesAndNewlines) {
  EXPECT_EQ(dot_escape("plain"), "plain");
  EXPECT_EQ(dot_escape("a\"b"), "a\\\"b");
  EXPECT_EQ(dot_escape("a\\nb"), "a\\\\nb");  // a literal backslash-n stays literal
  EXPECT_EQ(dot_escape("two\nlines"), "two\\nlines");
}

TEST_F(GraphDot, NamesWithQuotesAreEscaped) {
  EXPECT_TRUE(contains(node_line(dot, "n5"), "label=\"relu\\nsay \\\"hi\\\"\\n[4, 3]\""));
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    int quotes = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\') {
        ++i;
      } else if (line[i] == '"') {
        ++quotes;
      }
    }
    EXPECT_EQ(quotes % 2, 0) << "unbalanced quotes in: " << line;
  }
}

// Runs Graphviz on the text when it is installed, so the syntax is checked by the real parser.
TEST_F(GraphDot, GraphvizAcceptsTheOutput) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz not installed";
  s.graph.add_input("odd \\ \"name\"\nwith newline", ParallelShape::unpartitioned({2}));
  const std::string odd = graph_to_dot(s.graph);
  FILE* pipe = popen("dot -Tsvg -o /dev/null 2>&1", "w");
  ASSERT_NE(pipe, nullptr);
  std::fwrite(odd.data(), 1, odd.size(), pipe);
  EXPECT_EQ(pclose(pipe), 0) << odd;
}

}  // namespace
}  // namespace loom::pcg
