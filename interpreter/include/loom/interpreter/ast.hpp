#pragma once
// The syntax tree of a .loom file, as the parser builds it and the checker reads it.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/pcg/diagnostic.hpp"

namespace loom::spec {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

enum class ExprKind {
  Number,     // literal; `integral` says whether it was written as an integer
  Name,       // a dimension symbol, attribute, index, `rank`
  Read,       // name[indices] ?? fallback
  Reduce,     // name in {sum, max, min}, vars, args[0] = body
  Call,       // name(args)
  Unary,      // name in {-, !}, args[0]
  Binary,     // `binary` the operator (`name` its symbol), args[0], args[1]
  Ternary,    // args = cond, then, else
  DegreeRef,  // name in {D, P, V, R}; args[0] is the dimension for D and P
};

// The binary operators of expressions.
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or };

// The operator a symbol as written (`+`, `<=`, `&&`, ...) stands for, if any.
std::optional<BinaryOp> binary_op_of(std::string_view symbol);

// One position of a read: an index expression, or a pack index `*i`.
struct IndexArg {
  ExprPtr expr;           // null for a pack index
  std::string pack_name;  // set for a pack index
  bool is_pack() const { return !expr; }
};

struct ReductionVar {
  std::string name;
  ExprPtr bound;  // explicit range `p < bound`, or null when inferred
};

struct Expr {
  ExprKind kind;
  SourceLocation loc;
  std::string name;
  BinaryOp binary = BinaryOp::Add;  // Binary
  double number = 0;
  bool integral = false;
  std::vector<ExprPtr> args;
  std::vector<IndexArg> indices;   // Read
  ExprPtr fallback;                // Read
  std::vector<ReductionVar> vars;  // Reduce
};

// One entry of a shape: `*s` or an integer expression.
struct DimSpec {
  std::string pack_name;  // non-empty for a pack
  ExprPtr expr;
  bool is_pack() const { return !pack_name.empty(); }
};

struct ShapeSpec {
  std::vector<DimSpec> dims;
  SourceLocation loc;
};

struct AttrParam {
  std::string name;
  std::optional<std::vector<std::int64_t>> domain;  // absent: any integer
  std::map<std::string, std::int64_t> labels;       // named domain values
  SourceLocation loc;
};

// A note on an operator's input or output saying what its values are (docs/language.md, "Input
// notes").
struct Note {
  std::string role;  // inputs: index, init, statistic, positive, detached; outputs: probabilities
  std::string arg;   // the argument as written, empty when there is none
  SourceLocation loc;
};

struct InputParam {
  std::string name;
  std::optional<ShapeSpec> shape;
  std::vector<Note> notes;
  SourceLocation loc;

  const Note* note(const std::string& role) const {
    for (const Note& n : notes)
      if (n.role == role) return &n;
    return nullptr;
  }
};

struct OutputParam {
  std::string name;
  ShapeSpec shape;
  std::vector<Note> notes;

  bool noted(const std::string& role) const {
    for (const Note& n : notes)
      if (n.role == role) return true;
    return false;
  }
};

struct IndexVar {
  std::string name;
  bool pack = false;
};

enum class OpStmtKind { Require, Let, Define };

struct OpStmt {
  OpStmtKind kind;
  std::string name;  // Let / Define target
  std::vector<IndexVar> indices;
  ExprPtr expr;
  SourceLocation loc;
};

struct OpDecl {
  std::string name;
  std::vector<AttrParam> attrs;
  std::vector<InputParam> inputs;
  std::vector<OutputParam> outputs;
  std::vector<OpStmt> stmts;
  SourceLocation loc;
};

struct Term;
using TermPtr = std::shared_ptr<const Term>;

struct AttrArg {
  std::string name;  // empty when positional
  ExprPtr value;
  SourceLocation loc;
};

// Tuple: the outputs of a rule's side with several (args), only ever a whole side of a rule.
// Literal: a rank-0 tensor holding `value` (a constant a rule or axiom is stated for, e.g. GELU's 0.5).
enum class TermKind { Var, Apply, Project, Tuple, Literal };

struct Term {
  TermKind kind;
  std::string name;  // variable or applied form
  std::vector<AttrArg> attrs;
  std::vector<TermPtr> args;  // Apply: arguments; Project: args[0]; Tuple: the outputs
  std::string field;          // Project by name
  int position = -1;          // Project by position
  double value = 0;           // Literal
  SourceLocation loc;
};

// The name a literal's value goes by where a rule's graphs hold it as an input: the shortest text
// that reads back as the same double, after a '#', so that it can never clash with a variable.
std::string literal_name(double value);

enum class DegreeKind { D, P, V, R };

struct DegreeUpdate {
  DegreeKind degree;
  ExprPtr dim;  // D and P only
  bool multiply = true;
  ExprPtr amount;
  SourceLocation loc;
};

// A require condition or a degree update, kept in written order.
struct ParallelStmt {
  ExprPtr require;
  std::optional<DegreeUpdate> update;
};

struct ParallelDecl {
  std::string name;
  std::vector<AttrParam> attrs;
  std::vector<InputParam> inputs;
  std::vector<ParallelStmt> stmts;
  std::string values = "identity";
  TermPtr backward;
  std::string lowers_to;
  SourceLocation loc;
};

struct FusedDecl {
  std::string name;
  std::vector<AttrParam> attrs;
  std::vector<InputParam> inputs;
  TermPtr body;
  std::string lowers_to;
  SourceLocation loc;
};

struct DegreeAnnotation {
  ExprPtr V, R;
  std::vector<ExprPtr> D, P;  // empty: all 1
};

struct Binder {
  std::string name;
  bool is_int = false;
  std::optional<std::vector<std::int64_t>> domain;  // int binder
  std::string bound_op;                             // int binder `d: int > 0`
  std::int64_t bound = 0;
  std::optional<ShapeSpec> shape;  // tensor binder
  DegreeAnnotation degrees;
  SourceLocation loc;
};

struct Quantifier {
  std::vector<Binder> binders;
  ExprPtr where;
};

// An axiom (`==`) or a rule (`=>`).
struct EquationDecl {
  std::string name;
  Quantifier quantifier;
  TermPtr lhs, rhs;
  SourceLocation loc;
};

struct ImportDecl {
  std::string path;
  SourceLocation loc;
};

// A model's statement. Input and Weight declare a tensor of `shape`; Let names `value` anew in
// the current block, Assign gives an existing name a new value; Output marks `value` (or, without
// one, the value already named) as an output named `name`; For runs `body` for `name` = 0 ..
// `expr` - 1; Require states a condition on the sizes.
enum class ModelStmtKind { Require, Input, Weight, Let, Assign, Output, For };

struct ModelStmt {
  ModelStmtKind kind;
  std::string name;
  std::optional<ShapeSpec> shape;
  TermPtr value;
  ExprPtr expr;
  std::vector<ModelStmt> body;
  SourceLocation loc;
};

struct ModelParamDecl {
  std::string name;
  std::int64_t default_value = 0;
  SourceLocation loc;
};

struct ModelDecl {
  std::string name;
  std::vector<ModelParamDecl> params;
  std::vector<ModelStmt> stmts;
  SourceLocation loc;
};

// A schedule's statement (SuperScaler's plan primitives).
enum class ScheduleStmtKind {
  Apply,       // apply RULE at NODES [as NAME]: rewrite by a proved rule; inserted nodes named NAME, NAME.1, ...
  Split,       // split NODES by INDEX/DEGREE, ... [to DEVICES]: cut by a split the operator's spec derives
  Assign,      // assign NODES to DEVICES: piece k runs on the k-th device listed
  Order,       // order NODES before NODES: every piece of the first ahead of the second's
  Microbatch,  // microbatch COUNT: the batch runs as COUNT micro-batches
  Stages,      // stages COUNT: pipeline stages, each on its own equal block of devices
  Pipeline,    // pipeline ORDER: how a stage orders its micro-batches, 1f1b or gpipe
  Recompute,   // recompute NODES: outputs dropped after the forward, computed again for the backward
};

// Operators a schedule statement names: a name or a quoted pattern (`*`, `?`, `[...]`), or a range
// in the graph's order, `A .. B`: every operator from the first that A names to the last that B
// names (either end left out: from the first operator, to the last).
struct OperatorRef {
  std::string name;  // a range's first end, "" when left out
  bool range = false;
  std::string last{};  // a range's last end, "" when left out

  std::string to_string() const {
    return range ? (name.empty() ? "" : "\"" + name + "\" ") + ".." + (last.empty() ? "" : " \"" + last + "\"") : name;
  }
  bool operator==(const OperatorRef&) const = default;
};

struct IndexSplit {
  std::string index;  // an index of the operator's comprehension
  std::int64_t degree = 1;
  SourceLocation loc;
};

struct ScheduleStmt {
  ScheduleStmtKind kind;
  std::vector<OperatorRef> nodes;  // the targets; for Order those that go first
  std::vector<OperatorRef> later;  // Order: those that go after
  std::string rule;                // Apply
  std::string alias;               // Apply: empty when not named
  std::vector<IndexSplit> splits;  // Split
  std::vector<int> devices;        // Assign, and Split when it names devices
  std::int64_t count = 0;          // Microbatch, Stages
  std::string order;               // Pipeline: "1f1b" or "gpipe"
  SourceLocation loc;
};

struct ScheduleDecl {
  std::string name;
  std::string model;
  std::vector<ModelParamDecl> sizes;  // the model's size parameters as the schedule sets them
  std::vector<ScheduleStmt> stmts;
  SourceLocation loc;
};

struct Module {
  std::string file;
  std::vector<ImportDecl> imports;
  std::vector<OpDecl> ops;
  std::vector<ParallelDecl> parallels;
  std::vector<FusedDecl> fused;
  std::vector<EquationDecl> axioms;
  std::vector<EquationDecl> rules;
  std::vector<ModelDecl> models;
  std::vector<ScheduleDecl> schedules;
};

}  // namespace loom::spec
