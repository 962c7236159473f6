#include "loom/interpreter/parser.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <antlr4-runtime.h>

#include "LoomLexer.h"
#include "LoomParser.h"

namespace loom::spec {
namespace {

using P = grammar::LoomParser;

class DiagnosticCollector : public antlr4::BaseErrorListener {
 public:
  DiagnosticCollector(std::string file, std::vector<Diagnostic>& out) : file_(std::move(file)), out_(out) {}
  void syntaxError(antlr4::Recognizer*, antlr4::Token*, size_t line, size_t column, const std::string& msg, std::exception_ptr) override {
    out_.push_back({{file_, static_cast<int>(line), static_cast<int>(column) + 1}, msg});
  }

 private:
  std::string file_;
  std::vector<Diagnostic>& out_;
};

constexpr std::uint64_t kMaxRangeValues = 4096;

class Builder {
 public:
  explicit Builder(std::string file) : file_(std::move(file)) {}

  SourceLocation at(antlr4::ParserRuleContext* ctx) const { return at(ctx->getStart()); }
  SourceLocation at(antlr4::Token* tok) const {
    return {file_, static_cast<int>(tok->getLine()), static_cast<int>(tok->getCharPositionInLine()) + 1};
  }

  std::int64_t signed_int(P::SignedIntContext* ctx) const { return to_int(ctx->getText(), ctx); }

  std::int64_t to_int(const std::string& text, antlr4::ParserRuleContext* ctx) const {
    try {
      return std::stoll(text);
    } catch (const std::out_of_range&) {
      throw LoomError({{at(ctx), "integer " + text + " is too large"}});
    }
  }

  double to_real(const std::string& text, antlr4::ParserRuleContext* ctx) const {
    try {
      return std::stod(text);
    } catch (const std::out_of_range&) {
      throw LoomError({{at(ctx), "number " + text + " is out of range"}});
    }
  }

  ExprPtr make(ExprKind kind, SourceLocation loc, std::string name, std::vector<ExprPtr> args = {}) const {
    auto e = std::make_shared<Expr>();
    e->kind = kind;
    e->loc = std::move(loc);
    e->name = std::move(name);
    e->args = std::move(args);
    if (kind == ExprKind::Binary) {
      const std::optional<BinaryOp> op = binary_op_of(e->name);
      if (!op) throw LoomError({{e->loc, "unknown operator '" + e->name + "'"}});
      e->binary = *op;
    }
    return e;
  }

  ExprPtr number(SourceLocation loc, double value, bool integral) const {
    auto e = std::make_shared<Expr>();
    e->kind = ExprKind::Number;
    e->loc = std::move(loc);
    e->number = value;
    e->integral = integral;
    return e;
  }

  ExprPtr expr(P::ExprContext* ctx) const {
    auto loc = at(ctx);
    if (auto* c = dynamic_cast<P::ParenExprContext*>(ctx)) return expr(c->expr());
    if (auto* c = dynamic_cast<P::IntLiteralContext*>(ctx)) return number(loc, static_cast<double>(to_int(c->getText(), c)), true);
    if (auto* c = dynamic_cast<P::RealLiteralContext*>(ctx)) return number(loc, to_real(c->getText(), c), false);
    if (dynamic_cast<P::InfLiteralContext*>(ctx)) return number(loc, HUGE_VAL, false);
    if (auto* c = dynamic_cast<P::NameExprContext*>(ctx)) return make(ExprKind::Name, loc, c->name->getText());
    if (auto* c = dynamic_cast<P::ScalarDegreeRefContext*>(ctx)) return make(ExprKind::DegreeRef, loc, c->getText());
    if (auto* c = dynamic_cast<P::DimDegreeRefContext*>(ctx))
      return make(ExprKind::DegreeRef, loc, c->getStart()->getText(), {expr(c->expr())});
    if (auto* c = dynamic_cast<P::UnaryExprContext*>(ctx)) return make(ExprKind::Unary, loc, c->op->getText(), {expr(c->expr())});
    if (auto* c = dynamic_cast<P::MulExprContext*>(ctx)) return binary(c->op, c->expr(0), c->expr(1));
    if (auto* c = dynamic_cast<P::AddExprContext*>(ctx)) return binary(c->op, c->expr(0), c->expr(1));
    if (auto* c = dynamic_cast<P::CompareExprContext*>(ctx)) return binary(c->op, c->expr(0), c->expr(1));
    if (auto* c = dynamic_cast<P::EqualExprContext*>(ctx)) return binary(c->op, c->expr(0), c->expr(1));
    if (auto* c = dynamic_cast<P::AndExprContext*>(ctx)) return make(ExprKind::Binary, loc, "&&", {expr(c->expr(0)), expr(c->expr(1))});
    if (auto* c = dynamic_cast<P::OrExprContext*>(ctx)) return make(ExprKind::Binary, loc, "||", {expr(c->expr(0)), expr(c->expr(1))});
    if (auto* c = dynamic_cast<P::TernaryExprContext*>(ctx))
      return make(ExprKind::Ternary, loc, "?", {expr(c->expr(0)), expr(c->expr(1)), expr(c->expr(2))});
    if (auto* c = dynamic_cast<P::CallExprContext*>(ctx)) {
      std::vector<ExprPtr> args;
      for (auto* a : c->expr()) args.push_back(expr(a));
      return make(ExprKind::Call, loc, c->fn->getText(), std::move(args));
    }
    if (auto* c = dynamic_cast<P::ReduceExprContext*>(ctx)) {
      auto e = std::make_shared<Expr>();
      e->kind = ExprKind::Reduce;
      e->loc = loc;
      e->name = c->reducer->getText();
      for (auto* v : c->reductionVar()) e->vars.push_back({v->name->getText(), v->bound ? expr(v->bound) : nullptr});
      e->args.push_back(expr(c->body));
      return e;
    }
    if (auto* c = dynamic_cast<P::ReadExprContext*>(ctx)) {
      auto e = std::make_shared<Expr>();
      e->kind = ExprKind::Read;
      e->loc = loc;
      e->name = c->name->getText();
      for (auto* i : c->indexExpr()) {
        if (auto* pk = dynamic_cast<P::PackIndexContext*>(i))
          e->indices.push_back({nullptr, pk->name->getText()});
        else
          e->indices.push_back({expr(dynamic_cast<P::PlainIndexContext*>(i)->expr()), ""});
      }
      if (c->fallback) e->fallback = primary(c->fallback);
      return e;
    }
    throw LoomError({{loc, "unsupported expression '" + ctx->getText() + "'"}});
  }

  ExprPtr primary(P::PrimaryValueContext* ctx) const {
    auto loc = at(ctx);
    if (ctx->expr()) return expr(ctx->expr());
    std::string text = ctx->getText();
    if (ctx->ID()) return make(ExprKind::Name, loc, text);
    bool negative = !text.empty() && text[0] == '-';
    std::string body = negative ? text.substr(1) : text;
    double v = body == "inf" ? HUGE_VAL : std::stod(body);
    return number(loc, negative ? -v : v, ctx->INT() != nullptr);
  }

  ExprPtr binary(antlr4::Token* op, P::ExprContext* a, P::ExprContext* b) const {
    return make(ExprKind::Binary, at(op), op->getText(), {expr(a), expr(b)});
  }

  ShapeSpec shape(P::ShapeContext* ctx) const {
    ShapeSpec s;
    s.loc = at(ctx);
    for (auto* d : ctx->dim()) {
      if (auto* pk = dynamic_cast<P::PackDimContext*>(d))
        s.dims.push_back({pk->ID()->getText(), nullptr});
      else
        s.dims.push_back({"", expr(dynamic_cast<P::ExprDimContext*>(d)->expr())});
    }
    return s;
  }

  std::optional<std::vector<std::int64_t>> domain(P::DomainContext* ctx, std::map<std::string, std::int64_t>* labels) const {
    if (!ctx) return std::nullopt;
    std::vector<std::int64_t> values;
    if (auto* r = dynamic_cast<P::RangeDomainContext*>(ctx)) {
      const std::int64_t lo = signed_int(r->lo), hi = signed_int(r->hi);
      // Domains are enumerated (attribute checks, generation), so they must stay small.
      if (hi >= lo && static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) >= kMaxRangeValues)
        throw LoomError({{at(ctx), "range " + std::to_string(lo) + ".." + std::to_string(hi) + " is too large: a domain holds at most " +
                                       std::to_string(kMaxRangeValues) + " values (leave the domain out for any integer)"}});
      for (auto v = lo; v <= hi; ++v) values.push_back(v);
    } else {
      for (auto* item : dynamic_cast<P::EnumDomainContext*>(ctx)->domainItem()) {
        auto v = signed_int(item->value);
        values.push_back(v);
        if (item->label && labels) (*labels)[item->label->getText()] = v;
      }
    }
    return values;
  }

  std::vector<AttrParam> attr_params(P::AttrParamsContext* ctx) const {
    std::vector<AttrParam> out;
    if (!ctx) return out;
    for (auto* a : ctx->attrParam()) {
      AttrParam p;
      p.name = a->name->getText();
      p.loc = at(a);
      p.domain = domain(a->domain(), &p.labels);
      out.push_back(std::move(p));
    }
    return out;
  }

  std::vector<Note> notes(const std::vector<P::NoteContext*>& ctxs) const {
    std::vector<Note> out;
    for (auto* n : ctxs) {
      Note note;
      note.role = n->role->getText();
      if (n->argName) note.arg = n->argName->getText();
      if (n->argValue) note.arg = n->argValue->getText();
      note.loc = at(n);
      out.push_back(std::move(note));
    }
    return out;
  }

  std::vector<InputParam> input_params(P::InputParamsContext* ctx) const {
    std::vector<InputParam> out;
    if (!ctx) return out;
    for (auto* i : ctx->inputParam()) {
      InputParam p;
      p.name = i->name->getText();
      p.loc = at(i);
      if (i->shape()) p.shape = shape(i->shape());
      p.notes = notes(i->note());
      out.push_back(std::move(p));
    }
    return out;
  }

  std::vector<IndexVar> index_list(P::IndexListContext* ctx) const {
    std::vector<IndexVar> out;
    if (!ctx) return out;
    for (auto* v : ctx->indexVar()) out.push_back({v->name->getText(), v->pack != nullptr});
    return out;
  }

  OpDecl op(P::OpDeclContext* ctx) const {
    OpDecl d;
    d.name = ctx->name->getText();
    d.loc = at(ctx->name);
    d.attrs = attr_params(ctx->attrParams());
    d.inputs = input_params(ctx->inputParams());
    if (auto* single = dynamic_cast<P::SingleOutputContext*>(ctx->outputs())) {
      d.outputs.push_back({"out", shape(single->shape()), notes(single->note())});
    } else {
      for (auto* o : dynamic_cast<P::NamedOutputsContext*>(ctx->outputs())->outputParam())
        d.outputs.push_back({o->name->getText(), shape(o->shape()), notes(o->note())});
    }
    for (auto* s : ctx->opStmt()) {
      OpStmt st;
      st.loc = at(s);
      if (auto* r = dynamic_cast<P::RequireStmtContext*>(s)) {
        st.kind = OpStmtKind::Require;
        st.expr = expr(r->expr());
      } else if (auto* l = dynamic_cast<P::LetStmtContext*>(s)) {
        st.kind = OpStmtKind::Let;
        st.name = l->name->getText();
        st.indices = index_list(l->indexList());
        st.expr = expr(l->expr());
      } else {
        auto* def = dynamic_cast<P::DefineStmtContext*>(s);
        st.kind = OpStmtKind::Define;
        st.name = def->name->getText();
        st.indices = index_list(def->indexList());
        st.expr = expr(def->expr());
      }
      d.stmts.push_back(std::move(st));
    }
    return d;
  }

  std::vector<AttrArg> attr_args(P::AttrArgsContext* ctx) const {
    std::vector<AttrArg> out;
    for (auto* arg : ctx->attrArg()) {
      AttrArg aa;
      aa.loc = at(arg);
      if (arg->name) aa.name = arg->name->getText();
      if (auto* iv = dynamic_cast<P::IntAttrValueContext*>(arg->value))
        aa.value = number(at(iv), static_cast<double>(signed_int(iv->signedInt())), true);
      else if (auto* nv = dynamic_cast<P::NameAttrValueContext*>(arg->value))
        aa.value = make(ExprKind::Name, at(nv), nv->ID()->getText());
      else
        aa.value = expr(dynamic_cast<P::ExprAttrValueContext*>(arg->value)->expr());
      out.push_back(std::move(aa));
    }
    return out;
  }

  TermPtr term(P::TermContext* ctx) const {
    auto t = std::make_shared<Term>();
    t->loc = at(ctx);
    if (auto* v = dynamic_cast<P::VarTermContext*>(ctx)) {
      t->kind = TermKind::Var;
      t->name = v->name->getText();
    } else if (auto* l = dynamic_cast<P::LiteralTermContext*>(ctx)) {
      t->kind = TermKind::Literal;
      t->value = to_real(l->getText(), l);
      t->name = literal_name(t->value);
    } else if (auto* a = dynamic_cast<P::ApplyTermContext*>(ctx)) {
      t->kind = TermKind::Apply;
      t->name = a->name->getText();
      t->loc = at(a->name);
      if (a->attrArgs()) t->attrs = attr_args(a->attrArgs());
      for (auto* arg : a->term()) t->args.push_back(term(arg));
    } else {
      auto* p = dynamic_cast<P::ProjectTermContext*>(ctx);
      t->kind = TermKind::Project;
      t->args.push_back(term(p->term()));
      if (p->field) t->field = p->field->getText();
      if (p->position) t->position = static_cast<int>(std::min<std::int64_t>(to_int(p->position->getText(), p), 1 << 20));
    }
    return t;
  }

  ParallelDecl parallel(P::ParallelDeclContext* ctx) const {
    ParallelDecl d;
    d.name = ctx->name->getText();
    d.loc = at(ctx->name);
    d.attrs = attr_params(ctx->attrParams());
    d.inputs = input_params(ctx->inputParams());
    for (auto* s : ctx->parStmt()) {
      if (auto* r = dynamic_cast<P::ParRequireContext*>(s)) {
        d.stmts.push_back({expr(r->expr()), std::nullopt});
      } else if (auto* u = dynamic_cast<P::DimDegreeUpdateContext*>(s)) {
        DegreeUpdate up{u->degree->getText() == "D" ? DegreeKind::D : DegreeKind::P, expr(u->index),
                        u->op->getText() == "*=", expr(u->amount), at(s)};
        d.stmts.push_back({nullptr, up});
      } else if (auto* u2 = dynamic_cast<P::ScalarDegreeUpdateContext*>(s)) {
        DegreeUpdate up{u2->degree->getText() == "V" ? DegreeKind::V : DegreeKind::R, nullptr, u2->op->getText() == "*=", expr(u2->amount),
                        at(s)};
        d.stmts.push_back({nullptr, up});
      } else if (auto* v = dynamic_cast<P::ValuesStmtContext*>(s)) {
        d.values = v->kind->getText();
      } else if (auto* b = dynamic_cast<P::BackwardStmtContext*>(s)) {
        auto t = std::make_shared<Term>();
        t->kind = TermKind::Apply;
        t->name = b->form->getText();
        t->loc = at(b->form);
        if (b->attrArgs()) t->attrs = attr_args(b->attrArgs());
        d.backward = t;
      } else if (auto* l = dynamic_cast<P::LowersStmtContext*>(s)) {
        d.lowers_to = l->collective->getText();
      }
    }
    return d;
  }

  FusedDecl fused(P::FusedDeclContext* ctx) const {
    FusedDecl d;
    d.name = ctx->name->getText();
    d.loc = at(ctx->name);
    d.attrs = attr_params(ctx->attrParams());
    d.inputs = input_params(ctx->inputParams());
    d.body = term(ctx->term());
    if (ctx->collective) d.lowers_to = ctx->collective->getText();
    return d;
  }

  Quantifier quantifier(P::QuantifierContext* ctx) const {
    Quantifier q;
    if (!ctx) return q;
    for (auto* b : ctx->binder()) {
      Binder binder;
      binder.loc = at(b);
      if (auto* ib = dynamic_cast<P::IntBinderContext*>(b)) {
        binder.name = ib->name->getText();
        binder.is_int = true;
        binder.domain = domain(ib->domain(), nullptr);
      } else if (auto* bb = dynamic_cast<P::BoundedIntBinderContext*>(b)) {
        binder.name = bb->name->getText();
        binder.is_int = true;
        binder.bound_op = bb->cmp->getText();
        binder.bound = signed_int(bb->bound);
      } else {
        auto* tb = dynamic_cast<P::TensorBinderContext*>(b);
        binder.name = tb->name->getText();
        if (tb->shape()) binder.shape = shape(tb->shape());
        if (auto* ann = tb->degreeAnnotation()) {
          for (auto* entry : ann->degreeEntry()) {
            if (auto* s = dynamic_cast<P::ScalarDegreeEntryContext*>(entry)) {
              (s->key->getText() == "V" ? binder.degrees.V : binder.degrees.R) = expr(s->expr());
            } else {
              auto* l = dynamic_cast<P::ListDegreeEntryContext*>(entry);
              auto& list = l->key->getText() == "D" ? binder.degrees.D : binder.degrees.P;
              for (auto* e : l->expr()) list.push_back(expr(e));
            }
          }
        }
      }
      q.binders.push_back(std::move(binder));
    }
    if (ctx->cond) q.where = expr(ctx->cond);
    return q;
  }

  template <class Ctx>
  EquationDecl equation(Ctx* ctx) const {
    EquationDecl d;
    d.name = ctx->name->getText();
    d.loc = at(ctx->name);
    d.quantifier = quantifier(ctx->quantifier());
    d.lhs = side(ctx->lhs);
    d.rhs = side(ctx->rhs);
    return d;
  }

  TermPtr side(P::TermContext* ctx) const { return term(ctx); }

  TermPtr side(P::RuleSideContext* ctx) const {
    if (ctx->term().size() == 1) return term(ctx->term(0));
    auto t = std::make_shared<Term>();
    t->kind = TermKind::Tuple;
    t->loc = at(ctx);
    for (auto* part : ctx->term()) t->args.push_back(term(part));
    return t;
  }

  ModelDecl model(P::ModelDeclContext* ctx) const {
    ModelDecl d;
    d.name = ctx->name->getText();
    d.loc = at(ctx->name);
    if (auto* params = ctx->modelParams())
      for (auto* p : params->modelParam()) d.params.push_back({p->name->getText(), signed_int(p->value), at(p)});
    d.stmts = model_stmts(ctx->modelStmt());
    return d;
  }

  std::vector<ModelStmt> model_stmts(const std::vector<P::ModelStmtContext*>& ctxs) const {
    std::vector<ModelStmt> out;
    for (auto* s : ctxs) out.push_back(model_stmt(s));
    return out;
  }

  ModelStmt model_stmt(P::ModelStmtContext* ctx) const {
    ModelStmt st;
    st.loc = at(ctx);
    if (auto* r = dynamic_cast<P::ModelRequireContext*>(ctx)) {
      st.kind = ModelStmtKind::Require;
      st.expr = expr(r->expr());
    } else if (auto* t = dynamic_cast<P::ModelTensorContext*>(ctx)) {
      const std::string kind = t->kind->getText();
      if (kind != "input" && kind != "weight")
        throw LoomError({{at(t->kind), "expected 'input' or 'weight' before a tensor's shape, not '" + kind + "'"}});
      st.kind = kind == "input" ? ModelStmtKind::Input : ModelStmtKind::Weight;
      st.name = t->name->getText();
      st.shape = shape(t->shape());
    } else if (auto* l = dynamic_cast<P::ModelLetContext*>(ctx)) {
      st.kind = ModelStmtKind::Let;
      st.name = l->name->getText();
      st.value = term(l->term());
    } else if (auto* a = dynamic_cast<P::ModelAssignContext*>(ctx)) {
      st.kind = ModelStmtKind::Assign;
      st.name = a->name->getText();
      st.value = term(a->term());
    } else if (auto* o = dynamic_cast<P::ModelOutputContext*>(ctx)) {
      if (o->kind->getText() != "output")
        throw LoomError(
            {{at(o->kind), "expected 'output', 'input', 'weight', 'let', 'for' or 'require', not '" + o->kind->getText() + "'"}});
      st.kind = ModelStmtKind::Output;
      st.name = o->name->getText();
      if (o->term()) st.value = term(o->term());
    } else {
      auto* f = dynamic_cast<P::ModelForContext*>(ctx);
      st.kind = ModelStmtKind::For;
      st.name = f->var->getText();
      st.expr = expr(f->bound);
      st.body = model_stmts(f->modelStmt());
    }
    return st;
  }

  ScheduleDecl schedule(P::ScheduleDeclContext* ctx) const {
    ScheduleDecl d;
    d.name = ctx->name->getText();
    d.model = ctx->model->getText();
    d.loc = at(ctx->name);
    if (auto* params = ctx->modelParams())
      for (auto* p : params->modelParam()) d.sizes.push_back({p->name->getText(), signed_int(p->value), at(p)});
    for (auto* s : ctx->scheduleStmt()) d.stmts.push_back(schedule_stmt(s));
    return d;
  }

  // A statement's clauses by the word that leads them ("" for the verb's own), each word once and
  // only those the verb takes.
  std::map<std::string, P::ScheduleClauseContext*> schedule_clauses(P::ScheduleStmtContext* ctx, const std::string& verb,
                                                                    const std::vector<std::string>& words,
                                                                    const std::vector<std::string>& required) const {
    std::map<std::string, P::ScheduleClauseContext*> out{{"", ctx->scheduleClause(0)}};
    const auto led = ctx->ID();  // the verb, then each clause's word
    for (std::size_t k = 1; k < led.size(); ++k) {
      const std::string word = led[k]->getText();
      if (std::find(words.begin(), words.end(), word) == words.end()) {
        std::string allowed;
        for (const auto& w : words) allowed += (allowed.empty() ? "'" : ", '") + w + "'";
        throw LoomError({{at(led[k]->getSymbol()),
                          "'" + verb + "' takes " + (allowed.empty() ? "no further clause" : allowed) + ", not '" + word + "'"}});
      }
      if (!out.emplace(word, ctx->scheduleClause(k)).second) throw LoomError({{at(led[k]->getSymbol()), "'" + word + "' is given twice"}});
    }
    for (const auto& w : required)
      if (!out.count(w)) throw LoomError({{at(ctx), "'" + verb + "' needs '" + w + " ...'"}});
    return out;
  }

  static std::string operator_name(P::OperatorNameContext* ctx) {
    if (!ctx) return "";
    std::string text = ctx->getText();
    return ctx->STRING() ? text.substr(1, text.size() - 2) : text;
  }

  std::vector<OperatorRef> schedule_operators(P::ScheduleClauseContext* ctx, const std::string& what) const {
    std::vector<OperatorRef> out;
    for (auto* item : ctx->scheduleItem()) {
      if (auto* name = dynamic_cast<P::NameItemContext*>(item)) {
        out.push_back({operator_name(name->operatorName()), false, ""});
      } else if (auto* range = dynamic_cast<P::OperatorRangeItemContext*>(item)) {
        out.push_back({operator_name(range->first), true, operator_name(range->last)});
      } else {
        throw LoomError({{at(item), "expected " + what + ", not '" + item->getText() + "'"}});
      }
    }
    return out;
  }

  std::string schedule_name(P::ScheduleClauseContext* ctx, const std::string& what) const {
    auto items = ctx->scheduleItem();
    auto* name = items.size() == 1 ? dynamic_cast<P::NameItemContext*>(items.front()) : nullptr;
    if (!name) throw LoomError({{at(ctx), "expected one " + what}});
    return operator_name(name->operatorName());
  }

  std::vector<int> schedule_devices(P::ScheduleClauseContext* ctx) const {
    constexpr std::int64_t kMaxDevice = 1 << 20;
    std::vector<int> out;
    auto device = [&](antlr4::Token* tok, antlr4::ParserRuleContext* item) {
      const std::int64_t d = to_int(tok->getText(), item);
      if (d > kMaxDevice) throw LoomError({{at(tok), "device " + tok->getText() + " is out of range"}});
      return static_cast<int>(d);
    };
    for (auto* item : ctx->scheduleItem()) {
      if (auto* n = dynamic_cast<P::NumberItemContext*>(item)) {
        out.push_back(device(n->INT()->getSymbol(), n));
      } else if (auto* r = dynamic_cast<P::RangeItemContext*>(item)) {
        const int lo = device(r->lo, r), hi = device(r->hi, r);
        if (hi < lo) throw LoomError({{at(r), "the range " + r->getText() + " is empty"}});
        for (int d = lo; d <= hi; ++d) out.push_back(d);
      } else {
        throw LoomError({{at(item), "expected devices (3, 0..3 or a list of them), not '" + item->getText() + "'"}});
      }
    }
    return out;
  }

  std::int64_t schedule_count(P::ScheduleClauseContext* ctx, const std::string& what) const {
    auto items = ctx->scheduleItem();
    auto* n = items.size() == 1 ? dynamic_cast<P::NumberItemContext*>(items.front()) : nullptr;
    if (!n) throw LoomError({{at(ctx), "expected " + what + ", not '" + ctx->getText() + "'"}});
    const std::int64_t value = to_int(n->getText(), n);
    if (value < 1) throw LoomError({{at(ctx), what + " must be at least 1"}});
    constexpr std::int64_t kMostCount = 1 << 20;
    if (value > kMostCount) throw LoomError({{at(ctx), what + " must be at most " + std::to_string(kMostCount)}});
    return value;
  }

  ScheduleStmt schedule_stmt(P::ScheduleStmtContext* ctx) const {
    ScheduleStmt st;
    st.loc = at(ctx);
    const std::string verb = ctx->verb->getText();
    if (verb == "apply") {
      st.kind = ScheduleStmtKind::Apply;
      auto c = schedule_clauses(ctx, verb, {"at", "as"}, {"at"});
      st.rule = schedule_name(c[""], "rule name");
      st.nodes = schedule_operators(c["at"], "an operator's name");
      if (c.count("as")) st.alias = schedule_name(c["as"], "name for the inserted operators");
    } else if (verb == "split") {
      st.kind = ScheduleStmtKind::Split;
      auto c = schedule_clauses(ctx, verb, {"by", "to"}, {"by"});
      st.nodes = schedule_operators(c[""], "an operator's name");
      for (auto* item : c["by"]->scheduleItem()) {
        auto* s = dynamic_cast<P::SplitItemContext*>(item);
        if (!s)
          throw LoomError({{at(item), "expected INDEX/DEGREE (an index of the operator's comprehension), not '" + item->getText() + "'"}});
        const std::int64_t degree = to_int(s->degree->getText(), s);
        if (degree < 1) throw LoomError({{at(s), "a split's degree must be at least 1"}});
        st.splits.push_back({s->index->getText(), degree, at(s)});
      }
      if (c.count("to")) st.devices = schedule_devices(c["to"]);
    } else if (verb == "assign") {
      st.kind = ScheduleStmtKind::Assign;
      auto c = schedule_clauses(ctx, verb, {"to"}, {"to"});
      st.nodes = schedule_operators(c[""], "an operator's name");
      st.devices = schedule_devices(c["to"]);
    } else if (verb == "order") {
      st.kind = ScheduleStmtKind::Order;
      auto c = schedule_clauses(ctx, verb, {"before"}, {"before"});
      st.nodes = schedule_operators(c[""], "an operator's name");
      st.later = schedule_operators(c["before"], "an operator's name");
    } else if (verb == "microbatch" || verb == "stages") {
      st.kind = verb == "microbatch" ? ScheduleStmtKind::Microbatch : ScheduleStmtKind::Stages;
      auto c = schedule_clauses(ctx, verb, {}, {});
      st.count = schedule_count(c[""], verb == "microbatch" ? "a number of micro-batches" : "a number of stages");
    } else if (verb == "pipeline") {
      st.kind = ScheduleStmtKind::Pipeline;
      auto c = schedule_clauses(ctx, verb, {}, {});
      st.order = schedule_name(c[""], "pipeline order, gpipe or \"1f1b\"");
      if (st.order != "gpipe" && st.order != "1f1b")
        throw LoomError({{at(ctx), "expected a pipeline order, gpipe or \"1f1b\", not '" + st.order + "'"}});
    } else if (verb == "recompute") {
      st.kind = ScheduleStmtKind::Recompute;
      auto c = schedule_clauses(ctx, verb, {}, {});
      st.nodes = schedule_operators(c[""], "an operator's name");
    } else {
      throw LoomError(
          {{at(ctx->verb),
            "expected a schedule statement (apply, split, assign, order, microbatch, stages, pipeline or recompute), not '" + verb + "'"}});
    }
    return st;
  }

  Module module(P::FileContext* ctx) const {
    Module m;
    m.file = file_;
    for (auto* decl : ctx->decl()) {
      if (auto* i = decl->importDecl()) {
        std::string raw = i->STRING()->getText();
        m.imports.push_back({raw.substr(1, raw.size() - 2), at(i)});
      } else if (auto* o = decl->opDecl()) {
        m.ops.push_back(op(o));
      } else if (auto* p = decl->parallelDecl()) {
        m.parallels.push_back(parallel(p));
      } else if (auto* f = decl->fusedDecl()) {
        m.fused.push_back(fused(f));
      } else if (auto* a = decl->axiomDecl()) {
        m.axioms.push_back(equation(a));
      } else if (auto* r = decl->ruleDecl()) {
        m.rules.push_back(equation(r));
      } else if (auto* md = decl->modelDecl()) {
        m.models.push_back(model(md));
      } else if (auto* sd = decl->scheduleDecl()) {
        m.schedules.push_back(schedule(sd));
      }
    }
    return m;
  }

 private:
  std::string file_;
};

}  // namespace

namespace {

// Line and column of the first byte that is not valid UTF-8, if any.
std::optional<SourceLocation> invalid_utf8(const std::string& text, const std::string& file) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (!ok) return SourceLocation{file, line, column};
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += len;
  }
  return std::nullopt;
}

}  // namespace

Module parse_module(const std::string& text, const std::string& file) {
  if (auto bad = invalid_utf8(text, file)) throw LoomError({{*bad, "the file is not valid UTF-8 text"}});
  std::vector<Diagnostic> diagnostics;
  DiagnosticCollector collector(file, diagnostics);
  antlr4::ANTLRInputStream input;
  try {
    input.load(text);
  } catch (const std::range_error&) {  // the runtime's own UTF-8 decoder is stricter than the scan above
    throw LoomError({{{file, 0, 0}, "the file is not valid UTF-8 text"}});
  }
  grammar::LoomLexer lexer(&input);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&collector);
  antlr4::CommonTokenStream tokens(&lexer);
  grammar::LoomParser parser(&tokens);
  parser.removeErrorListeners();
  parser.addErrorListener(&collector);
  auto* tree = parser.file();
  if (!diagnostics.empty()) throw LoomError(std::move(diagnostics));
  return Builder(file).module(tree);
}

}  // namespace loom::spec
