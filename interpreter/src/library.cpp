#include "loom/interpreter/library.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "loom/interpreter/cost.hpp"
#include "loom/interpreter/element_sources.hpp"
#include "loom/interpreter/model_graph.hpp"
#include "loom/interpreter/parallel_rules.hpp"
#include "loom/interpreter/parser.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/interpreter/term_eval.hpp"

namespace fs = std::filesystem;

namespace loom::spec {

// Reads files and their imports into a library, collecting every diagnostic before failing.
class LibraryLoader {
 public:
  void load_path(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::recursive_directory_iterator(path, ec))
        if (entry.is_regular_file() && entry.path().extension() == ".loom") files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      if (files.empty()) diagnostics_.push_back({{path, 0, 0}, "no .loom files in this directory"});
      for (const auto& f : files) load_file(f.string(), {});
      return;
    }
    load_file(path, {});
  }

  void load_file(const std::string& path, const SourceLocation& imported_at) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(path, ec);
    std::string key = ec ? path : canonical.string();
    if (!seen_.insert(key).second) return;
    std::ifstream in(path);
    if (!in) {
      if (imported_at.file.empty())
        diagnostics_.push_back({{path, 0, 0}, "cannot open file"});
      else
        diagnostics_.push_back({imported_at, "cannot open imported file '" + path + "'"});
      return;
    }
    std::stringstream text;
    text << in.rdbuf();
    // Files with the same content are the same file: a spec importing the checkout's specs/ while
    // the bundled library is installed elsewhere declares nothing twice.
    if (!contents_.insert(text.str()).second) return;
    load_text(text.str(), path, fs::path(path).parent_path().string());
  }

  void load_text(const std::string& text, const std::string& name, const std::string& directory) {
    try {
      Module m = parse_module(text, name);
      for (const auto& imp : m.imports)
        load_file((fs::path(directory.empty() ? "." : directory) / imp.path).lexically_normal().string(), imp.loc);
      modules_.push_back(std::move(m));
    } catch (const LoomError& e) {
      diagnostics_.insert(diagnostics_.end(), e.diagnostics().begin(), e.diagnostics().end());
    }
  }

  Library finish(const LoadOptions& options) {
    Library lib;
    lib.modules_ = std::move(modules_);
    if (diagnostics_.empty()) {
      auto dup = lib_index(lib);
      diagnostics_.insert(diagnostics_.end(), dup.begin(), dup.end());
    }
    if (diagnostics_.empty()) {
      auto found = check_library(lib);
      diagnostics_.insert(diagnostics_.end(), found.begin(), found.end());
    }
    if (diagnostics_.empty() && options.type_rules) {
      auto untyped = type_rules(lib);
      diagnostics_.insert(diagnostics_.end(), untyped.begin(), untyped.end());
    }
    if (diagnostics_.empty()) {
      for (const ModelDecl* model : lib.models_) {
        try {
          build_model_graph(lib, *model);
        } catch (const LoomError& e) {
          diagnostics_.insert(diagnostics_.end(), e.diagnostics().begin(), e.diagnostics().end());
        }
      }
    }
    if (!diagnostics_.empty()) throw LoomError(std::move(diagnostics_));
    return lib;
  }

 private:
  static std::vector<Diagnostic> lib_index(Library& lib) {
    std::vector<Diagnostic> out;
    // Forms share one namespace; models and schedules have their own.
    std::map<std::string, SourceLocation> names, models, schedules;
    auto claim = [&](std::map<std::string, SourceLocation>& taken, const std::string& name, const SourceLocation& loc, const char* what) {
      auto [it, inserted] = taken.emplace(name, loc);
      if (!inserted) out.push_back({loc, std::string(what) + " '" + name + "' is already declared at " + it->second.to_string()});
      return inserted;
    };
    // Each declaration whose name is free is indexed by name and listed in load order.
    const auto enter = [&](auto& declarations, std::map<std::string, SourceLocation>& space, const char* what, auto& index, auto& list) {
      for (auto& d : declarations)
        if (claim(space, d.name, d.loc, what)) {
          index[d.name] = &d;
          list.push_back(&d);
        }
    };
    std::map<std::string, SourceLocation> equations;
    for (auto& m : lib.modules_) {
      enter(m.ops, names, "op", lib.op_index_, lib.ops_);
      enter(m.parallels, names, "parallel form", lib.parallel_index_, lib.parallels_);
      enter(m.fused, names, "fused form", lib.fused_index_, lib.fused_);
      enter(m.models, models, "model", lib.model_index_, lib.models_);
      enter(m.schedules, schedules, "schedule", lib.schedule_index_, lib.schedules_);
      for (auto* list : {&m.axioms, &m.rules}) {
        for (auto& eq : *list) {
          auto [it, inserted] = equations.emplace(eq.name, eq.loc);
          if (!inserted) out.push_back({eq.loc, "'" + eq.name + "' is already declared at " + it->second.to_string()});
          (list == &m.axioms ? lib.axioms_ : lib.rules_).push_back(&eq);
        }
      }
    }
    return out;
  }

  std::deque<Module> modules_;
  std::vector<Diagnostic> diagnostics_;
  std::set<std::string> seen_;
  std::set<std::string> contents_;
};

Library Library::load(const std::vector<std::string>& paths, const LoadOptions& options) {
  LibraryLoader loader;
  for (const auto& p : paths) loader.load_path(p);
  return loader.finish(options);
}

Library Library::from_text(const std::string& text, const std::string& name, const std::string& directory, const LoadOptions& options) {
  LibraryLoader loader;
  loader.load_text(text, name, directory);
  return loader.finish(options);
}

std::string Library::default_specs_dir() {
  if (const char* env = std::getenv("LOOM_SPECS"); env && *env) return env;
  return LOOM_SPECS_DIR;
}

std::vector<std::string> Library::paths_or_bundled(const std::vector<std::string>& paths) {
  return paths.empty() ? std::vector<std::string>{default_specs_dir()} : paths;
}

std::vector<std::string> Library::files() const {
  std::vector<std::string> out;
  for (const auto& m : modules_) out.push_back(m.file);
  return out;
}

const OpDecl* Library::find_op(const std::string& name) const {
  auto it = op_index_.find(name);
  return it == op_index_.end() ? nullptr : it->second;
}
const ParallelDecl* Library::find_parallel(const std::string& name) const {
  auto it = parallel_index_.find(name);
  return it == parallel_index_.end() ? nullptr : it->second;
}
const FusedDecl* Library::find_fused(const std::string& name) const {
  auto it = fused_index_.find(name);
  return it == fused_index_.end() ? nullptr : it->second;
}

std::optional<std::size_t> Library::projected_output(const std::string& form, const Term& projection) const {
  if (projection.position >= 0) return static_cast<std::size_t>(projection.position);
  if (const OpDecl* op = find_op(form))
    for (std::size_t i = 0; i < op->outputs.size(); ++i)
      if (op->outputs[i].name == projection.field) return i;
  return std::nullopt;
}

const ModelDecl* Library::find_model(const std::string& name) const {
  auto it = model_index_.find(name);
  return it == model_index_.end() ? nullptr : it->second;
}

const ScheduleDecl* Library::find_schedule(const std::string& name) const {
  auto it = schedule_index_.find(name);
  return it == schedule_index_.end() ? nullptr : it->second;
}

const std::vector<AttrParam>* Library::attr_params(const std::string& name) const {
  if (const auto* op = find_op(name)) return &op->attrs;
  if (const auto* p = find_parallel(name)) return &p->attrs;
  if (const auto* f = find_fused(name)) return &f->attrs;
  return nullptr;
}

bool Library::has_op(const std::string& name) const { return attr_params(name) != nullptr; }

std::size_t Library::input_count(const std::string& name) const {
  if (const auto* op = find_op(name)) return op->inputs.size();
  if (const auto* p = find_parallel(name)) return p->inputs.size();
  if (const auto* f = find_fused(name)) return f->inputs.size();
  throw LoomError("unknown operator '" + name + "'");
}

std::size_t Library::output_count(const std::string& name) const {
  if (const auto* op = find_op(name)) return op->outputs.size();
  if (has_op(name)) return 1;
  throw LoomError("unknown operator '" + name + "'");
}

Program Library::instantiate(const std::string& op, const pcg::AttrMap& attrs,
                             const std::vector<std::vector<std::int64_t>>& input_dims) const {
  const auto* decl = find_op(op);
  if (!decl) throw LoomError("unknown operator '" + op + "'");
  return *compiled(*decl, attrs, input_dims);
}

std::shared_ptr<const Program> Library::compiled(const OpDecl& op, const pcg::AttrMap& attrs,
                                                 const std::vector<std::vector<std::int64_t>>& input_dims) const {
  if (!programs_) return std::make_shared<const Program>(compile(op, attrs, input_dims));
  return programs_->get(op, attrs, input_dims);
}

namespace {

void check_input_shape(const std::string& op, std::size_t i, const pcg::ParallelShape& input) {
  try {
    input.validate();
  } catch (const LoomError& e) {
    throw LoomError(op + ": input " + std::to_string(i) + " is not a valid parallel shape: " + e.what());
  }
}

}  // namespace

std::vector<pcg::ParallelShape> Library::infer(const std::string& name, const pcg::AttrMap& attrs,
                                               const std::vector<pcg::ParallelShape>& inputs) const {
  for (std::size_t i = 0; i < inputs.size(); ++i) check_input_shape(name, i, inputs[i]);
  if (const auto* op = find_op(name)) {
    if (programs_) return programs_->output_shapes(*op, attrs, inputs);
    std::vector<std::vector<std::int64_t>> dims;
    for (const auto& s : inputs) dims.push_back(s.dims);
    return derive_output_degrees(*compiled(*op, attrs, dims), inputs);
  }
  if (const auto* p = find_parallel(name)) {
    if (inputs.size() != 1) throw LoomError(name + " takes one input");
    return {apply_parallel_form(*p, attrs, inputs[0])};
  }
  const auto* f = find_fused(name);
  if (!f) throw LoomError("unknown operator '" + name + "'");
  if (inputs.size() != f->inputs.size()) throw LoomError(name + ": wrong number of inputs");
  TermEvaluator<RealDomain> shapes_only(*this, false);
  TermEvaluator<RealDomain>::Bindings vars;
  for (std::size_t i = 0; i < inputs.size(); ++i) vars[f->inputs[i].name].shape = inputs[i];
  IntScope scope;
  for (const auto& [k, v] : attrs) scope.values[k] = v;
  std::vector<pcg::ParallelShape> out;
  for (auto& v : shapes_only.eval(*f->body, vars, scope)) out.push_back(v.shape);
  return out;
}

pcg::TaskCost Library::task_cost(const std::string& name, const pcg::AttrMap& attrs, const std::vector<pcg::ParallelShape>& inputs) const {
  const OpDecl* op = find_op(name);
  if (op && programs_) {
    for (std::size_t i = 0; i < inputs.size(); ++i) check_input_shape(name, i, inputs[i]);
    return programs_->task_cost(*op, attrs, inputs);
  }
  auto outputs = infer(name, attrs, inputs);
  if (op) {
    std::vector<std::vector<std::int64_t>> dims;
    for (const auto& s : inputs) dims.push_back(s.dims);
    return spec::task_cost(*compiled(*op, attrs, dims), inputs, outputs);
  }
  // Parallel forms move data and compute nothing: each task sends and receives its shard.
  return spec::task_cost(Program{}, inputs, outputs);
}

double Library::backward_flops(const std::string& name, const pcg::AttrMap& attrs, const std::vector<pcg::ParallelShape>& inputs,
                               const std::vector<bool>& gradients) const {
  const pcg::TaskCost cost = task_cost(name, attrs, inputs);
  const OpDecl* op = find_op(name);
  if (!op || std::all_of(gradients.begin(), gradients.end(), [](bool g) { return g; })) return cost.backward_flops;
  std::vector<std::vector<std::int64_t>> dims;
  for (const auto& s : inputs) dims.push_back(s.dims);
  const std::shared_ptr<const Program> program = compiled(*op, attrs, dims);
  const double every = gradient_flops(*program);
  return every > 0 ? cost.backward_flops * gradient_flops(*program, gradients) / every : 0;
}

bool Library::moves_each_element_once(const std::string& name, const pcg::AttrMap& attrs,
                                      const std::vector<pcg::ParallelShape>& inputs) const {
  const OpDecl* op = find_op(name);
  if (!op || op->outputs.size() != 1) return false;
  std::vector<std::vector<std::int64_t>> dims;
  for (const auto& s : inputs) dims.push_back(s.dims);
  try {
    if (programs_) return programs_->moves_each_element_once(*op, attrs, dims);
    return spec::moves_each_element_once(*compiled(*op, attrs, dims), dims);
  } catch (const LoomError&) {
    return false;  // an instance that does not compile folds nothing
  }
}

pcg::AttrMap Library::resolve_attrs(const std::string& form, const std::vector<AttrParam>& params, const std::vector<AttrArg>& args,
                                    const IntScope& scope, const SourceLocation& where) {
  pcg::AttrMap out;
  if (args.size() > params.size())
    throw LoomError({{where, form + " takes " + std::to_string(params.size()) + " attributes, given " + std::to_string(args.size())}});
  bool named = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& arg = args[i];
    const AttrParam* param = nullptr;
    if (!arg.name.empty()) {
      named = true;
      for (const auto& p : params)
        if (p.name == arg.name) param = &p;
      if (!param) throw LoomError({{arg.loc, form + " has no attribute '" + arg.name + "'"}});
    } else {
      if (named) throw LoomError({{arg.loc, "a positional attribute cannot follow a named one"}});
      param = &params[i];
    }
    std::int64_t value;
    if (arg.value->kind == ExprKind::Name && param->labels.count(arg.value->name) && !scope.values.count(arg.value->name)) {
      value = param->labels.at(arg.value->name);
    } else {
      value = eval_int(*arg.value, scope);
    }
    if (param->domain && std::find(param->domain->begin(), param->domain->end(), value) == param->domain->end()) {
      std::string dom;
      for (auto v : *param->domain) dom += (dom.empty() ? "" : ", ") + std::to_string(v);
      throw LoomError({{arg.loc, form + ": attribute " + param->name + " = " + std::to_string(value) + " is not in {" + dom + "}"}});
    }
    if (!out.emplace(param->name, value).second) throw LoomError({{arg.loc, form + ": attribute '" + param->name + "' given twice"}});
  }
  for (const auto& p : params)
    if (!out.count(p.name)) throw LoomError({{where, form + ": attribute '" + p.name + "' is not given"}});
  return out;
}

}  // namespace loom::spec
