#pragma once
// A candidate pair as a rule: both sides as PCGs over the shared named inputs, its category, and
// the rule in spec syntax. Sizes become symbols (one per distinct example size; attributes
// declared without a domain, such as split positions, share them), degrees stay literal, and the
// side conditions the example shapes met are kept where the sides' typing needs them.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/superopt/encoded_graph.hpp"
#include "loom/superopt/op_set.hpp"
#include "loom/superopt/options.hpp"

namespace loom::superopt {

struct RenderedRule {
  pcg::Rule rule;             // id, category, lhs, rhs, constraints, declared shapes, text
  std::string body;           // the text after `rule <id>: `
  std::string concrete_body;  // the same rule at the example sizes, every size a literal
};

class RuleRenderer {
 public:
  RuleRenderer(const spec::Library& library, const OpSet& ops, const std::vector<InputTensor>& inputs, const GeneratorOptions& options);

  // With `widen`, a dimension equal to another only by the example sizes' choice gets a symbol of
  // its own wherever both sides stay well-typed without the equality; without, one symbol per size.
  RenderedRule render(const GraphView& lhs, const GraphView& rhs, const std::string& id, bool widen = true) const;

  // (input, dimension) of a variable's shape.
  using Position = std::pair<std::size_t, std::size_t>;
  using PositionSizes = std::map<Position, std::int64_t>;

  // Whether both sides are well-typed with every example size v replaced by sizes.at(v) (sizes
  // missing from the map are kept), and the dimensions in `positions` at the sizes given there.
  bool typed_at(const GraphView& view, const std::map<std::int64_t, std::int64_t>& sizes, const PositionSizes& positions = {}) const;

 private:
  std::string term(const GraphView& view, TensorRef ref, const std::map<std::int64_t, std::string>& names) const;
  pcg::Graph graph(const GraphView& view, const std::vector<std::size_t>& variables) const;

  const spec::Library& library_;
  const OpSet& ops_;
  const std::vector<InputTensor>& inputs_;
  const GeneratorOptions& options_;
};

// `rule <id>: <body>;`
std::string rule_text(const std::string& id, const std::string& body);

// A .loom file holding the rules, importing the spec files that declare every form they use;
// imports are written relative to `directory` (absolute when it is empty).
std::string spec_file(const spec::Library& library, const std::vector<pcg::Rule>& rules, const std::string& directory,
                      const std::string& header);

// The spec files declaring the forms the rules use, as absolute paths.
std::vector<std::string> spec_files_used(const spec::Library& library, const std::vector<pcg::Rule>& rules);

}  // namespace loom::superopt
