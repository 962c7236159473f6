// The schedule declaration: each statement reaches the syntax tree as written, and a malformed
// statement is refused at its place, naming what the verb takes. The indices a split names are
// those the operator's comprehension reads its inputs through.
#include <gtest/gtest.h>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/parallel_rules.hpp"
#include "loom/interpreter/parser.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

using test::all_text;
using test::bundled;
using test::diagnostics_of;
using test::locate;

constexpr const char* kSchedule = R"(schedule s for m<batch = 4> {
  apply merge at q, "k*" as qk;
  split fc1, fc2 by j/2, i0/3 to 0..1, 4;
  assign "*", "h0.*" .. "h1.out", .. x, y .. to 0;
  order a before b, c;
  microbatch 4;
  stages 2;
  pipeline gpipe;
  recompute h;
}
)";

TEST(ScheduleParser, EveryStatementReachesTheSyntaxTree) {
  const Module m = parse_module(kSchedule, "s.loom");
  ASSERT_EQ(m.schedules.size(), 1u);
  const ScheduleDecl& s = m.schedules[0];
  EXPECT_EQ(s.name, "s");
  EXPECT_EQ(s.model, "m");
  ASSERT_EQ(s.sizes.size(), 1u);
  EXPECT_EQ(s.sizes[0].name, "batch");
  EXPECT_EQ(s.sizes[0].default_value, 4);
  ASSERT_EQ(s.stmts.size(), 8u);
  EXPECT_EQ(s.stmts[0].kind, ScheduleStmtKind::Apply);
  EXPECT_EQ(s.stmts[0].rule, "merge");
  EXPECT_EQ(s.stmts[0].nodes, (std::vector<OperatorRef>{{"q"}, {"k*"}}));
  EXPECT_EQ(s.stmts[0].alias, "qk");
  EXPECT_EQ(s.stmts[1].kind, ScheduleStmtKind::Split);
  EXPECT_EQ(s.stmts[1].nodes, (std::vector<OperatorRef>{{"fc1"}, {"fc2"}}));
  ASSERT_EQ(s.stmts[1].splits.size(), 2u);
  EXPECT_EQ(s.stmts[1].splits[1].index, "i0");
  EXPECT_EQ(s.stmts[1].splits[1].degree, 3);
  EXPECT_EQ(s.stmts[1].devices, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(s.stmts[1].loc.line, 3);
  EXPECT_EQ(s.stmts[2].kind, ScheduleStmtKind::Assign);
  EXPECT_EQ(s.stmts[2].nodes, (std::vector<OperatorRef>{{"*"}, {"h0.*", true, "h1.out"}, {"", true, "x"}, {"y", true, ""}}));
  EXPECT_EQ(s.stmts[3].kind, ScheduleStmtKind::Order);
  EXPECT_EQ(s.stmts[3].later, (std::vector<OperatorRef>{{"b"}, {"c"}}));
  EXPECT_EQ(s.stmts[4].kind, ScheduleStmtKind::Microbatch);
  EXPECT_EQ(s.stmts[4].count, 4);
  EXPECT_EQ(s.stmts[5].kind, ScheduleStmtKind::Stages);
  EXPECT_EQ(s.stmts[5].count, 2);
  EXPECT_EQ(s.stmts[6].kind, ScheduleStmtKind::Pipeline);
  EXPECT_EQ(s.stmts[6].order, "gpipe");
  EXPECT_EQ(s.stmts[7].kind, ScheduleStmtKind::Recompute);
}

struct Mistake {
  const char* statement;
  const char* place;  // where in the statement the error points
  const char* message;
};

TEST(ScheduleParser, AMalformedStatementIsRefusedAtItsPlace) {
  const std::vector<Mistake> mistakes = {
      {"shard a by i/2;", "shard",
       "expected a schedule statement (apply, split, assign, order, microbatch, stages, pipeline or recompute)"},
      {"split a along i/2;", "along", "'split' takes 'by', 'to', not 'along'"},
      {"split a to 0;", "split", "'split' needs 'by ...'"},
      {"split a by i;", "i;", "expected INDEX/DEGREE"},
      {"split a by i/0;", "i/0", "degree must be at least 1"},
      {"assign a to b;", "b;", "expected devices"},
      {"assign a to 3..1;", "3..1", "the range 3..1 is empty"},
      {"assign a to 0 to 1;", "to 1", "'to' is given twice"},
      {"order a after b;", "after", "'order' takes 'before', not 'after'"},
      {"microbatch 0;", "0;", "a number of micro-batches must be at least 1"},
      {"stages a;", "a;", "expected a number of stages"},
      {"recompute a before b;", "before", "'recompute' takes no further clause, not 'before'"},
      {"apply r, t at a;", "r, t", "expected one rule name"},
      {"pipeline interlaced;", "pipeline", "expected a pipeline order, gpipe or \"1f1b\", not 'interlaced'"},
  };
  for (const Mistake& m : mistakes) {
    const std::string text = std::string("schedule s for m {\n  ") + m.statement + "\n}\n";
    const auto ds = diagnostics_of([&] { parse_module(text, "s.loom"); });
    ASSERT_EQ(ds.size(), 1u) << m.statement << "\n" << all_text(ds);
    const auto at = locate(text, m.place);
    EXPECT_EQ(ds[0].where.line, at.line) << m.statement;
    EXPECT_EQ(ds[0].where.column, at.column) << m.statement << ": " << ds[0].message;
    EXPECT_NE(ds[0].message.find(m.message), std::string::npos) << m.statement << ": " << ds[0].message;
  }
}

TEST(ScheduleParser, SplitIndicesAreTheNamesTheComprehensionReadsItsInputsThrough) {
  using Names = std::vector<std::vector<std::string>>;
  EXPECT_EQ(input_index_names(*bundled().find_op("matmul"), {{4, 6}, {6, 8}}), (Names{{"i", "p"}, {"p", "j"}}));
  EXPECT_EQ(input_index_names(*bundled().find_op("relu"), {{4, 6}}), (Names{{"i0", "i1"}}));
  EXPECT_EQ(input_index_names(*bundled().find_op("linear"), {{2, 4, 6}, {6, 8}, {8}}), (Names{{"i0", "i1", "p"}, {"p", "j"}, {"j"}}));
}

}  // namespace
}  // namespace loom::spec
