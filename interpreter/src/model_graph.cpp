#include "loom/interpreter/model_graph.hpp"

#include <set>
#include <vector>

#include "loom/interpreter/int_eval.hpp"
#include "loom/interpreter/library.hpp"

namespace loom::spec {
namespace {

// Bounds on what a model may grow to, so that a size given by mistake (a loop run 10^9 times) is
// refused at its place instead of holding up every command that loads the file.
constexpr std::size_t kMaxModelNodes = 20000;
constexpr std::int64_t kMaxLoopIterations = 1000000;

// What a name holds in a model: one port, or every output of an operator with several.
struct Bound {
  std::vector<pcg::PortRef> ports;
  std::string form;  // the operator whose outputs the ports are, where there are several
};

class ModelBuilder {
 public:
  ModelBuilder(const Library& library, const ModelDecl& model) : library_(library), model_(model) {}

  pcg::Graph build(const ModelSizes& sizes) {
    for (const auto& [name, value] : sizes) {
      if (!declares(name)) {
        std::string known;
        for (const auto& p : model_.params) known += (known.empty() ? "" : ", ") + p.name;
        throw LoomError({{model_.loc, "model '" + model_.name + "' has no size '" + name + "' (" +
                                          (known.empty() ? std::string("it has none") : "it has " + known) + ")"}});
      }
    }
    for (const auto& p : model_.params) {
      if (scope_.values.count(p.name)) fail(p.loc, "size '" + p.name + "' is declared twice");
      const auto given = sizes.find(p.name);
      scope_.values[p.name] = given == sizes.end() ? p.default_value : given->second;
    }
    blocks_.emplace_back();
    run(model_.stmts);
    if (graph_.outputs().empty()) throw LoomError({{model_.loc, "model '" + model_.name + "' has no output"}});
    return std::move(graph_);
  }

 private:
  bool declares(const std::string& size) const {
    for (const auto& p : model_.params)
      if (p.name == size) return true;
    return false;
  }

  [[noreturn]] static void fail(const SourceLocation& where, const std::string& message) { throw LoomError({{where, message}}); }

  std::string scoped(const std::string& name) const { return prefix_ + name; }

  void run(const std::vector<ModelStmt>& stmts) {
    for (const ModelStmt& s : stmts) step(s);
  }

  void step(const ModelStmt& s) {
    switch (s.kind) {
      case ModelStmtKind::Require:
        if (eval_int(*s.expr, scope_) == 0) fail(s.loc, "requirement " + expr_to_string(*s.expr) + " does not hold for " + sizes_text());
        return;
      case ModelStmtKind::Input:
      case ModelStmtKind::Weight: {
        check_free(s);
        const bool weight = s.kind == ModelStmtKind::Weight;
        grow(s.loc);
        const int id =
            located(s.loc, [&] { return graph_.add_input(scoped(s.name), pcg::ParallelShape::unpartitioned(dims(*s.shape)), weight); });
        named_.insert(scoped(s.name));
        declare(s, Bound{{{id, 0}}, ""});
        return;
      }
      case ModelStmtKind::Let:
        check_free(s);
        declare(s, value(*s.value, scoped(s.name)));
        return;
      case ModelStmtKind::Assign: {
        Bound* target = find(s.name);
        if (!target) fail(s.loc, "'" + s.name + "' is not declared: write `let " + s.name + " = ...` to name a new value");
        // A name assigned again in the same block names only its first node.
        const std::string name = named_.count(scoped(s.name)) ? std::string() : scoped(s.name);
        *target = value(*s.value, name);
        return;
      }
      case ModelStmtKind::Output: output(s); return;
      case ModelStmtKind::For: loop(s); return;
    }
  }

  void output(const ModelStmt& s) {
    Bound out;
    if (s.value) {
      if (s.value->kind == TermKind::Var)
        fail(s.loc, "'" + s.value->name + "' is already named: write `output " + s.value->name + ";` to make it an output");
      check_free(s);
      out = value(*s.value, scoped(s.name));
      declare(s, out);
    } else {
      const Bound* named = find(s.name);
      if (!named) fail(s.loc, "unknown name '" + s.name + "'");
      out = *named;
    }
    for (const pcg::PortRef& port : out.ports) located(s.loc, [&] { graph_.mark_output(port); });
  }

  void loop(const ModelStmt& s) {
    if (scope_.values.count(s.name) || find(s.name)) fail(s.loc, "the loop variable '" + s.name + "' hides a name already declared");
    const std::int64_t count = eval_int(*s.expr, scope_);
    if (count < 0) fail(s.loc, "the loop runs " + std::to_string(count) + " times for " + sizes_text());
    if (count > kMaxLoopIterations - iterations_)
      fail(s.loc, "the model's loops run more than " + std::to_string(kMaxLoopIterations) + " times in all for " + sizes_text());
    iterations_ += count;
    const std::string outer = prefix_;
    for (std::int64_t i = 0; i < count; ++i) {
      scope_.values[s.name] = i;
      prefix_ = outer + s.name + std::to_string(i) + ".";
      // Two loops must not scope names alike (sibling loops over `layer`, or `i` at 11 and `i1` at 1).
      const auto [earlier, fresh] = scopes_.emplace(prefix_, &s);
      if (!fresh && earlier->second != &s)
        fail(s.loc, "this loop scopes names as '" + prefix_ + "', as the loop at line " + std::to_string(earlier->second->loc.line) +
                        " does: give one of them another variable");
      blocks_.emplace_back();
      run(s.body);
      blocks_.pop_back();
    }
    scope_.values.erase(s.name);
    prefix_ = outer;
  }

  std::vector<std::int64_t> dims(const ShapeSpec& shape) const {
    std::vector<std::int64_t> out;
    for (const DimSpec& d : shape.dims) {
      if (d.is_pack()) fail(shape.loc, "a model's tensor has a fixed rank: '*" + d.pack_name + "' has no meaning here");
      const std::int64_t size = eval_int(*d.expr, scope_);
      if (size <= 0) fail(d.expr->loc, "dimension " + expr_to_string(*d.expr) + " is " + std::to_string(size) + " for " + sizes_text());
      out.push_back(size);
    }
    return out;
  }

  void check_free(const ModelStmt& s) const {
    if (scope_.values.count(s.name)) fail(s.loc, "'" + s.name + "' is a size of the model");
    if (blocks_.back().count(s.name)) fail(s.loc, "'" + s.name + "' is already declared in this block");
    if (named_.count(scoped(s.name)))
      fail(s.loc, "'" + scoped(s.name) + "' already names a node (an assignment to '" + s.name + "' here): choose another name");
  }

  void declare(const ModelStmt& s, Bound bound) { blocks_.back().emplace(s.name, std::move(bound)); }

  Bound* find(const std::string& name) {
    for (auto block = blocks_.rbegin(); block != blocks_.rend(); ++block) {
      auto it = block->find(name);
      if (it != block->end()) return &it->second;
    }
    return nullptr;
  }

  // The value of a term; an operator it applies last is named `name` (empty: unnamed).
  Bound value(const Term& t, const std::string& name) {
    switch (t.kind) {
      case TermKind::Var: {
        const Bound* b = find(t.name);
        if (!b) fail(t.loc, scope_.values.count(t.name) ? "'" + t.name + "' is a size, not a tensor" : "unknown name '" + t.name + "'");
        return *b;
      }
      case TermKind::Project: {
        const Bound whole = value(*t.args[0], name);
        const std::optional<std::size_t> pick = library_.projected_output(whole.form, t);
        if (pick && *pick < whole.ports.size()) return {{whole.ports[*pick]}, ""};
        fail(t.loc, "no output " + (t.field.empty() ? std::to_string(t.position) : "'" + t.field + "'") + " among " + fields_text(whole));
      }
      case TermKind::Apply: return apply(t, name);
      case TermKind::Literal: fail(t.loc, "a model's constants are weights or inputs: declare one in place of " + t.name.substr(1));
      case TermKind::Tuple: break;
    }
    fail(t.loc, "a tuple is not a value of a model");
  }

  Bound apply(const Term& t, const std::string& name) {
    const std::vector<AttrParam>* params = library_.attr_params(t.name);
    if (!params) fail(t.loc, "unknown operator '" + t.name + "'");
    const std::size_t arity = library_.input_count(t.name);
    if (t.args.size() != arity)
      fail(t.loc, "'" + t.name + "' takes " + std::to_string(arity) + " input" + (arity == 1 ? "" : "s") + ", not " +
                      std::to_string(t.args.size()));
    std::vector<pcg::PortRef> inputs;
    for (const TermPtr& arg : t.args) {
      const Bound b = value(*arg, "");
      if (b.ports.size() != 1)
        fail(arg->loc,
             "this value has " + std::to_string(b.ports.size()) + " outputs, " + fields_text(b) + ": pick one with .name or .index");
      inputs.push_back(b.ports.front());
    }
    pcg::AttrMap attrs = Library::resolve_attrs(t.name, *params, t.attrs, scope_, t.loc);
    grow(t.loc);
    const int id = located(t.loc, [&] { return graph_.add_node(library_, t.name, std::move(attrs), inputs, name); });
    if (!name.empty()) named_.insert(name);
    Bound out{{}, t.name};
    for (std::size_t i = 0; i < graph_.node(id).output_shapes.size(); ++i) out.ports.push_back({id, static_cast<int>(i)});
    return out;
  }

  void grow(const SourceLocation& where) const {
    if (graph_.size() >= kMaxModelNodes)
      fail(where, "the model grows past " + std::to_string(kMaxModelNodes) + " nodes here for " + sizes_text());
  }

  // Runs a graph edit, placing what it refuses at `where`.
  template <class Edit>
  auto located(const SourceLocation& where, Edit edit) -> decltype(edit()) {
    try {
      return edit();
    } catch (const LoomError& e) {
      std::string message;
      for (const Diagnostic& d : e.diagnostics()) message += (message.empty() ? "" : "; ") + d.message;
      fail(where, message.empty() ? std::string(e.what()) : message);
    }
  }

  // "0 'low', 1 'high'": the outputs of the value, by position and name.
  std::string fields_text(const Bound& b) const {
    const OpDecl* op = library_.find_op(b.form);
    std::string out;
    for (std::size_t i = 0; i < b.ports.size(); ++i)
      out += (i ? ", " : "") + std::to_string(i) + " '" + (op && i < op->outputs.size() ? op->outputs[i].name : "out") + "'";
    return out;
  }

  std::string sizes_text() const {
    std::string out;
    for (const auto& p : model_.params) out += (out.empty() ? "" : ", ") + p.name + " = " + std::to_string(scope_.values.at(p.name));
    return out.empty() ? "this model" : out;
  }

  const Library& library_;
  const ModelDecl& model_;
  pcg::Graph graph_;
  IntScope scope_;
  std::vector<std::map<std::string, Bound>> blocks_;
  std::string prefix_;
  std::set<std::string> named_;                     // the graph's node names so far
  std::map<std::string, const ModelStmt*> scopes_;  // each loop iteration's prefix, and its loop
  std::int64_t iterations_ = 0;
};

}  // namespace

pcg::Graph build_model_graph(const Library& library, const ModelDecl& model, const ModelSizes& sizes) {
  return ModelBuilder(library, model).build(sizes);
}

}  // namespace loom::spec
