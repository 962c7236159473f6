#pragma once
// An operator instantiated on concrete attributes and input shapes, with its comprehension
// compiled to slot-addressed expression trees: what the evaluator, the parallel-rule derivation
// and the cost model all read.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/interpreter/ast.hpp"
#include "loom/interpreter/int_eval.hpp"
#include "loom/interpreter/numeric.hpp"
#include "loom/pcg/op_catalog.hpp"

namespace loom::spec {

enum class COp { Const, Index, Read, Reduce, Neg, Not, Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or, Select, Call };
enum class Reducer { Sum, Max, Min };

struct CNode;

// How one dimension of a read is addressed: a bare index slot, or an integer expression.
struct IndexCalc {
  int slot = -1;
  std::vector<CNode> expr;  // one element when not bare
};

struct CNode {
  COp op = COp::Const;
  double constant = 0;
  bool sized = false;            // Const: from an attribute, a dimension symbol or a piece's offset, not a literal
  int slot = -1;                 // Index
  int buffer = -1;               // Read
  std::vector<IndexCalc> index;  // Read
  bool has_fallback = false;     // Read: children[0] is the fallback
  Function fn = Function::Exp;   // Call
  Reducer reducer = Reducer::Sum;
  std::vector<int> reduce_slots;
  std::vector<std::int64_t> reduce_extents;
  std::vector<CNode> children;
  std::string text;  // source text, for messages
};

// One dimension group of a shape: a plain dimension, or a rank pack's dimensions.
struct ShapeEntry {
  bool pack = false;
  std::vector<std::int64_t> sizes;  // one size when plain
};

enum class BufferKind { Input, Let, Output };

struct Buffer {
  std::string name;
  BufferKind kind;
  std::vector<ShapeEntry> structure;
  std::vector<std::int64_t> dims;  // flattened structure
};

struct Statement {
  int target = -1;
  std::vector<int> lhs_slots;
  std::vector<std::string> slot_names;     // every slot's index name
  std::vector<std::int64_t> slot_extents;  // every slot's range
  int slot_count = 0;
  CNode body;
  SourceLocation loc;
};

struct Program {
  const OpDecl* op = nullptr;
  IntScope scope;  // attributes, dimension symbols and packs, all concrete
  std::vector<Buffer> buffers;
  std::vector<int> input_buffers, output_buffers;
  std::vector<Statement> statements;
  pcg::KernelShape shape = pcg::KernelShape::Elementwise;  // kernel_shape(), set by compile()
};

// Instantiates `op`: checks the attributes against their domains, matches the input shapes,
// evaluates every `require`, computes the output shapes and compiles the body. Throws LoomError
// naming the op and the reason when the instance is not well-typed.
Program compile(const OpDecl& op, const pcg::AttrMap& attrs, const std::vector<std::vector<std::int64_t>>& input_dims);

std::string dims_to_string(const std::vector<std::int64_t>& dims);

}  // namespace loom::spec
