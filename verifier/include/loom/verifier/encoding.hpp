#pragma once
// The Z3 encoding of terms (TASO and Unity style): tensors are one uninterpreted sort; every op
// output and parallel form is an uninterpreted function of its integer attributes followed by its
// tensor inputs; fused forms are expanded by their definitions. `dim(t, i)` and `rdim(t, i)` are
// the i-th dimension of t counted from the front and from the back: Z3 knows them only where a
// rule states them (rules read from PCGs state every subterm's shape).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <z3++.h>

#include "loom/interpreter/library.hpp"

namespace loom::verifier {

// The function symbols of one library in one Z3 context.
class Vocabulary {
 public:
  Vocabulary(z3::context& context, const spec::Library& library);

  z3::context& context() { return context_; }
  const spec::Library& library() const { return library_; }
  const z3::sort& tensor() const { return tensor_; }

  // Output `output` of an op, or a parallel form (output 0). Throws LoomError for fused forms,
  // which have no symbol of their own, and for unknown names.
  z3::func_decl form(const std::string& name, std::size_t output);
  // The constant a number written in an axiom or rule stands for, by its literal name: one
  // symbol per value, shared by every axiom and rule, about which Z3 knows only what axioms state.
  z3::expr literal(const std::string& name);
  z3::expr dim(const z3::expr& tensor, int index);
  z3::expr rdim(const z3::expr& tensor, int index);

 private:
  z3::context& context_;
  const spec::Library& library_;
  z3::sort tensor_;
  z3::func_decl dim_, rdim_;
  std::map<std::pair<std::string, std::size_t>, z3::func_decl> forms_;
};

// What names mean while encoding: integers (binders, dimension symbols, attributes) and tensors.
struct EncodingScope {
  std::map<std::string, z3::expr> ints;
  std::map<std::string, z3::expr> tensors;
};

// Encodes terms. The optional hook sees every attribute value (simplified) and may replace it,
// e.g. by a fresh variable, which is how trigger patterns keep arithmetic out of them.
class TermEncoder {
 public:
  using AttributeHook = std::function<z3::expr(const z3::expr&)>;

  explicit TermEncoder(Vocabulary& vocabulary, AttributeHook hook = {}) : vocab_(vocabulary), hook_(std::move(hook)) {}

  // One expression per output. Throws LoomError at the term for what cannot be encoded.
  std::vector<z3::expr> encode(const spec::Term& term, const EncodingScope& scope);
  z3::expr encode_single(const spec::Term& term, const EncodingScope& scope);

 private:
  std::vector<z3::expr> apply(const spec::Term& term, const EncodingScope& scope);
  Vocabulary& vocab_;
  AttributeHook hook_;
};

// Integer expressions: `+ - * / %` (Z3's integer division and modulus, which agree with the
// interpreter's floor division for positive divisors), comparisons, `&& || !`, `?:`, min, max,
// abs. Throws LoomError at the expression for anything else (`rank(...)`, reads, reals).
z3::expr encode_int(z3::context& context, const spec::Expr& expr, const EncodingScope& scope);
z3::expr encode_condition(z3::context& context, const spec::Expr& expr, const EncodingScope& scope);

// Binds every dimension symbol of the tensor binders' shapes that some binder names as a whole
// dimension: to dim(x, i) when no rank pack comes before it, else to rdim(x, j) when none
// comes after it. Symbols bound already are left alone.
void bind_dimension_symbols(Vocabulary& vocabulary, const spec::Quantifier& quantifier, EncodingScope& scope);

// The domain of an integer binder as a condition on `value` (true when unrestricted).
z3::expr binder_domain(z3::context& context, const spec::Binder& binder, const z3::expr& value);

}  // namespace loom::verifier
