#pragma once
// The shapes a rule's statement gives its variables (`forall k: [n, n, l, l]`). A proof of the
// statement covers those shapes only, so a match must keep to them: one size per symbol, every
// number as written, the rank where no rank pack leaves it open.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/pcg/graph.hpp"

namespace loom::pcg {

// One dimension as written: a symbol, or a number (a dimension written as an expression, `2 * n`,
// is declared at the size the rule was typed at, its symbols held there).
struct DeclaredDim {
  std::string symbol;  // empty: the number `size`
  std::int64_t size = 0;

  static DeclaredDim named(std::string symbol) { return {std::move(symbol), 0}; }
  static DeclaredDim number(std::int64_t size) { return {"", size}; }
  bool operator==(const DeclaredDim&) const = default;
};

// `[m, *p, n]`: `front` = [m], `back` = [n], `rank_pack` true. Without a pack, `front` is every dimension.
struct DeclaredShape {
  std::vector<DeclaredDim> front, back;
  bool rank_pack = false;
  bool operator==(const DeclaredShape&) const = default;
};

struct DeclaredShapes {
  std::map<std::string, DeclaredShape> variables;  // variables written with a shape
  // Symbols an attribute of the rule's graphs holds at the value the rule was typed at (a closed
  // attribute written with the symbol): a dimension written with one must have that size too.
  std::map<std::string, std::int64_t> fixed;

  bool empty() const { return variables.empty() && fixed.empty(); }
  bool operator==(const DeclaredShapes&) const = default;
};

// The sizes a match gives the symbols when the variables are bound to `bindings`; none when a bound
// shape has another rank, a number differs, or a symbol would take two sizes. A variable missing
// from `bindings` is not checked.
std::optional<std::map<std::string, std::int64_t>> declared_sizes(const DeclaredShapes& declared, const Graph& graph,
                                                                  const std::map<std::string, PortRef>& bindings);

// `[m, 4, *, n]`: symbols, numbers and `*` for the rank pack.
std::string to_string(const DeclaredShape& shape);

// File form: {"variables": {"k": ["n", "n", "l", "l"], "x": [1, "*", "n"]}, "fixed": {"n": 6}}.
nlohmann::json declared_shapes_to_json(const DeclaredShapes& declared);
// Throws LoomError naming `path` and the entry at fault.
DeclaredShapes declared_shapes_from_json(const nlohmann::json& json, const std::string& path);

}  // namespace loom::pcg
