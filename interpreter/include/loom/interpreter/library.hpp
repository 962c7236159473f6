#pragma once
// A loaded, checked spec library: every op, parallel form, fused form, axiom, rule, model and schedule of a
// set of .loom files and their imports. Loading is all-or-nothing: any error in any file throws, with
// every diagnostic found, and no library is produced.
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/interpreter/ast.hpp"
#include "loom/interpreter/int_eval.hpp"
#include "loom/interpreter/program.hpp"
#include "loom/interpreter/program_cache.hpp"
#include "loom/pcg/op_catalog.hpp"

namespace loom::spec {

struct LoadOptions {
  // Refuse the library when a `rule` cannot be typed or its sides differ in shape. Off only where
  // rules are candidates to be judged (the generator's numeric check), never for users' files.
  bool type_rules = true;
};

class Library : public pcg::OpCatalog {
 public:
  Library() : programs_(std::make_unique<ProgramCache>()) {}
  Library(Library&&) noexcept = default;
  Library& operator=(Library&&) noexcept = default;
  Library(const Library&) = delete;  // declarations are referenced by address
  Library& operator=(const Library&) = delete;

  // Loads files and directories (every *.loom below them), following imports.
  static Library load(const std::vector<std::string>& paths, const LoadOptions& options = {});
  // Loads one in-memory file; its imports are resolved relative to `directory`.
  static Library from_text(const std::string& text, const std::string& name = "<input>", const std::string& directory = ".",
                           const LoadOptions& options = {});
  // The bundled library: $LOOM_SPECS if set, else the source tree's specs/.
  static std::string default_specs_dir();
  // `paths`, or the bundled library when it is empty: what every command's --specs means.
  static std::vector<std::string> paths_or_bundled(const std::vector<std::string>& paths);

  const OpDecl* find_op(const std::string& name) const;
  const ParallelDecl* find_parallel(const std::string& name) const;
  const FusedDecl* find_fused(const std::string& name) const;
  const ModelDecl* find_model(const std::string& name) const;
  const ScheduleDecl* find_schedule(const std::string& name) const;

  const std::vector<const OpDecl*>& ops() const { return ops_; }
  const std::vector<const ParallelDecl*>& parallel_forms() const { return parallels_; }
  const std::vector<const FusedDecl*>& fused_forms() const { return fused_; }
  const std::vector<const EquationDecl*>& axioms() const { return axioms_; }
  const std::vector<const EquationDecl*>& rules() const { return rules_; }
  const std::vector<const ModelDecl*>& models() const { return models_; }
  const std::vector<const ScheduleDecl*>& schedules() const { return schedules_; }
  std::vector<std::string> files() const;

  Program instantiate(const std::string& op, const pcg::AttrMap& attrs, const std::vector<std::vector<std::int64_t>>& input_dims) const;
  // The compiled instance, through the cache (compiled afresh in a library moved from); throws as
  // compile does.
  std::shared_ptr<const Program> compiled(const OpDecl& op, const pcg::AttrMap& attrs,
                                          const std::vector<std::vector<std::int64_t>>& input_dims) const;

  // OpCatalog: ops, parallel forms and fused forms alike.
  bool has_op(const std::string& name) const override;
  std::size_t input_count(const std::string& name) const override;
  std::size_t output_count(const std::string& name) const override;
  std::vector<pcg::ParallelShape> infer(const std::string& name, const pcg::AttrMap& attrs,
                                        const std::vector<pcg::ParallelShape>& inputs) const override;
  pcg::TaskCost task_cost(const std::string& name, const pcg::AttrMap& attrs, const std::vector<pcg::ParallelShape>& inputs) const override;
  bool moves_each_element_once(const std::string& name, const pcg::AttrMap& attrs,
                               const std::vector<pcg::ParallelShape>& inputs) const override;
  // The arithmetic of a task's backward where only the inputs `gradients` marks take a gradient
  // (spec::gradient_flops), split over the task's pieces as task_cost splits it; every input's
  // where `gradients` is empty or marks them all.
  double backward_flops(const std::string& name, const pcg::AttrMap& attrs, const std::vector<pcg::ParallelShape>& inputs,
                        const std::vector<bool>& gradients) const;

  // Attribute arguments of an application, resolved to values (positional or named, labels of
  // the parameter's domain allowed), checked against the parameters' domains.
  static pcg::AttrMap resolve_attrs(const std::string& form, const std::vector<AttrParam>& params, const std::vector<AttrArg>& args,
                                    const IntScope& scope, const SourceLocation& where);
  const std::vector<AttrParam>* attr_params(const std::string& name) const;

  // Which output of an application of `form` a projection term picks: `.N` its position, `.name`
  // the op's output so named; nullopt for a name the form has no output by.
  std::optional<std::size_t> projected_output(const std::string& form, const Term& projection) const;

 private:
  void index();
  std::deque<Module> modules_;
  // Looked up by name for every node of every plan the search costs.
  std::unordered_map<std::string, const OpDecl*> op_index_;
  std::unordered_map<std::string, const ParallelDecl*> parallel_index_;
  std::unordered_map<std::string, const FusedDecl*> fused_index_;
  std::vector<const OpDecl*> ops_;
  std::vector<const ParallelDecl*> parallels_;
  std::vector<const FusedDecl*> fused_;
  std::vector<const EquationDecl*> axioms_;
  std::vector<const EquationDecl*> rules_;
  std::map<std::string, const ModelDecl*> model_index_;
  std::vector<const ModelDecl*> models_;
  std::map<std::string, const ScheduleDecl*> schedule_index_;
  std::vector<const ScheduleDecl*> schedules_;
  std::unique_ptr<ProgramCache> programs_;
  friend class LibraryLoader;
};

// Static checks over a whole library (names, arities, attribute domains, indices, terms);
// returns every problem found.
std::vector<Diagnostic> check_library(const Library& library);

// The same checks of one rule declaration that is not part of `library` (a rule read back from its
// text), against the library's forms.
std::vector<Diagnostic> check_rule_declaration(const Library& library, const EquationDecl& rule);

}  // namespace loom::spec
