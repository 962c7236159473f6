#include <filesystem>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/cost.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/parallel_rules.hpp"
#include "loom/models/load.hpp"
#include "loom/models/model_stats.hpp"
#include "loom/pcg/graph_dot.hpp"
#include "loom/verifier/term_text.hpp"
#include "model_options.hpp"

namespace loom::cli {
namespace {

struct ShowOptions {
  std::string target;
  std::vector<std::string> specs;
  bool dot = false;
  bool list = false;
  bool json = false;
  ModelOptions model;
};

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string shape_text(const spec::ShapeSpec& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.dims.size(); ++i)
    out += (i ? ", " : "") + (s.dims[i].is_pack() ? "*" + s.dims[i].pack_name : spec::expr_to_string(*s.dims[i].expr));
  return out + "]";
}

std::string signature(const spec::OpDecl& op) {
  std::ostringstream os;
  os << "op " << op.name;
  if (!op.attrs.empty()) {
    os << "<";
    for (std::size_t i = 0; i < op.attrs.size(); ++i) {
      os << (i ? ", " : "") << op.attrs[i].name;
      if (op.attrs[i].domain) {
        os << " in {";
        for (std::size_t k = 0; k < op.attrs[i].domain->size(); ++k) os << (k ? ", " : "") << (*op.attrs[i].domain)[k];
        os << "}";
      }
    }
    os << ">";
  }
  os << "(";
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    os << (i ? ", " : "") << op.inputs[i].name << ": " << (op.inputs[i].shape ? shape_text(*op.inputs[i].shape) : "?");
  os << ") -> (";
  for (std::size_t i = 0; i < op.outputs.size(); ++i)
    os << (i ? ", " : "") << op.outputs[i].name << ": " << shape_text(op.outputs[i].shape);
  os << ")";
  return os.str();
}

// A small instance of the op for showing its derived rules: sizes drawn until every
// requirement holds.
std::optional<spec::Program> example_instance(const spec::OpDecl& op) {
  std::mt19937_64 rng(7);
  for (int attempt = 0; attempt < 2000; ++attempt) {
    pcg::AttrMap attrs;
    for (const auto& a : op.attrs) {
      if (a.domain)
        attrs[a.name] = (*a.domain)[attempt < 500 ? 0 : rng() % a.domain->size()];
      else
        attrs[a.name] = static_cast<std::int64_t>(1 + rng() % 4);
    }
    std::map<std::string, std::int64_t> sizes;
    std::vector<std::vector<std::int64_t>> dims;
    for (const auto& in : op.inputs) {
      std::vector<std::int64_t> d;
      for (const auto& entry : in.shape->dims) {
        std::string key = entry.is_pack() ? "*" + entry.pack_name : spec::expr_to_string(*entry.expr);
        if (!sizes.count(key)) sizes[key] = static_cast<std::int64_t>(2 + rng() % 5);
        if (entry.is_pack()) {
          for (std::int64_t k = 0; k < 1 + static_cast<std::int64_t>(attempt % 3); ++k) d.push_back(sizes[key] + k);
        } else {
          d.push_back(sizes[key]);
        }
      }
      dims.push_back(d);
    }
    try {
      return spec::compile(op, attrs, dims);
    } catch (const LoomError&) {
    }
  }
  return std::nullopt;
}

void show_op(const spec::OpDecl& op, bool dot) {
  if (dot) {
    std::cout << "digraph " << quote(op.name) << " {\n  rankdir=LR;\n  node [fontname=\"monospace\"];\n";
    for (const auto& in : op.inputs)
      std::cout << "  " << quote(in.name) << " [shape=ellipse, label=" << quote(in.name + ": " + (in.shape ? shape_text(*in.shape) : ""))
                << "];\n";
    for (const auto& st : op.stmts) {
      if (st.kind == spec::OpStmtKind::Require) continue;
      std::cout << "  " << quote(st.name) << " [shape=box, label=" << quote(st.name + " = " + spec::expr_to_string(*st.expr)) << "];\n";
      std::function<void(const spec::Expr&)> edges = [&](const spec::Expr& e) {
        if (e.kind == spec::ExprKind::Read) std::cout << "  " << quote(e.name) << " -> " << quote(st.name) << ";\n";
        for (const auto& a : e.args) edges(*a);
        if (e.fallback) edges(*e.fallback);
      };
      edges(*st.expr);
    }
    std::cout << "}\n";
    return;
  }
  std::cout << signature(op) << "\n  declared at " << op.loc.to_string() << "\n";
  auto example = example_instance(op);
  if (!example) {
    std::cout << "  (no small instance satisfies its requirements)\n";
    return;
  }
  std::cout << "  example instance:";
  for (const auto& [k, v] : example->scope.values) std::cout << " " << k << "=" << v;
  std::cout << "\n";
  for (int b : example->output_buffers)
    std::cout << "  output " << example->buffers[static_cast<std::size_t>(b)].name << ": "
              << spec::dims_to_string(example->buffers[static_cast<std::size_t>(b)].dims) << "\n";
  std::cout << "  flops: " << spec::total_flops(*example) << "\n  parallelism derived from the comprehension:\n";
  auto summary = spec::summarize_parallelism(*example);
  for (const auto& role : summary.roles) {
    const char* what = role.kind == spec::DimensionRole::Free     ? "split -> output split (D)"
                       : role.kind == spec::DimensionRole::Summed ? "split -> partial sums (V)"
                                                                  : "cannot be split";
    std::cout << "    " << role.input << " dim " << role.dim << ": " << what << "\n";
  }
  std::cout << "    partial-sum (V) inputs accepted: ";
  if (summary.linear_inputs.empty()) std::cout << "none";
  for (std::size_t i = 0; i < summary.linear_inputs.size(); ++i) std::cout << (i ? ", " : "") << summary.linear_inputs[i];
  std::cout << "\n";
}

void term_dot(const spec::Term& t, const std::string& prefix, int& counter, std::map<std::string, std::string>& vars,
              const std::string& parent) {
  if (t.kind == spec::TermKind::Tuple) {
    for (const auto& part : t.args) term_dot(*part, prefix, counter, vars, parent);
    return;
  }
  std::string id;
  if (t.kind == spec::TermKind::Var) {
    auto it = vars.find(t.name);
    if (it == vars.end()) {
      id = prefix + "v" + std::to_string(counter++);
      vars[t.name] = id;
      std::cout << "    " << quote(id) << " [shape=ellipse, label=" << quote(t.name) << "];\n";
    } else {
      id = it->second;
    }
  } else {
    id = prefix + "n" + std::to_string(counter++);
    std::string label = t.kind == spec::TermKind::Project   ? "." + (t.field.empty() ? std::to_string(t.position) : t.field)
                        : t.kind == spec::TermKind::Literal ? t.name.substr(1)
                                                            : t.name;
    if (t.kind == spec::TermKind::Apply && !t.attrs.empty()) {
      label += "<";
      for (std::size_t i = 0; i < t.attrs.size(); ++i) label += (i ? "," : "") + spec::expr_to_string(*t.attrs[i].value);
      label += ">";
    }
    std::cout << "    " << quote(id) << " [shape=box, label=" << quote(label) << "];\n";
    for (const auto& a : t.args) term_dot(*a, prefix, counter, vars, id);
  }
  if (!parent.empty()) std::cout << "    " << quote(id) << " -> " << quote(parent) << ";\n";
}

std::string sizes_text(const spec::ModelDecl& model) {
  std::string out;
  for (const auto& p : model.params) out += (out.empty() ? "" : ", ") + p.name + "=" + std::to_string(p.default_value);
  return out;
}

void show_file(const spec::Library& lib, const std::string& file, bool dot) {
  auto in_file = [&](const SourceLocation& loc) {
    std::error_code ec;
    return std::filesystem::equivalent(loc.file, file, ec);
  };
  if (dot) {
    std::cout << "digraph " << quote(file) << " {\n  rankdir=BT;\n  node [fontname=\"monospace\"];\n";
    int cluster = 0;
    for (const auto* list : {&lib.axioms(), &lib.rules()}) {
      for (const auto* eq : *list) {
        if (!in_file(eq->loc)) continue;
        std::cout << "  subgraph cluster_" << cluster << " {\n    label=" << quote(eq->name) << ";\n";
        int counter = 0;
        for (int side = 0; side < 2; ++side) {
          std::string prefix = "c" + std::to_string(cluster) + (side ? "r" : "l");
          std::map<std::string, std::string> vars;
          std::cout << "    subgraph cluster_" << prefix << " {\n    label=" << quote(side ? "rhs" : "lhs") << ";\n";
          term_dot(side ? *eq->rhs : *eq->lhs, prefix, counter, vars, "");
          std::cout << "    }\n";
        }
        std::cout << "  }\n";
        ++cluster;
      }
    }
    std::cout << "}\n";
    return;
  }
  for (const auto* op : lib.ops())
    if (in_file(op->loc)) std::cout << signature(*op) << "\n";
  for (const auto* m : lib.models())
    if (in_file(m->loc)) std::cout << "model " << m->name << "<" << sizes_text(*m) << ">\n";
  for (const auto* p : lib.parallel_forms())
    if (in_file(p->loc)) std::cout << "parallel " << p->name << " (values " << p->values << ", lowers to " << p->lowers_to << ")\n";
  for (const auto* f : lib.fused_forms())
    if (in_file(f->loc)) std::cout << "fused " << f->name << " = " << verifier::term_to_string(*f->body) << "\n";
  for (const auto* a : lib.axioms())
    if (in_file(a->loc))
      std::cout << "axiom " << a->name << ": " << verifier::term_to_string(*a->lhs) << " == " << verifier::term_to_string(*a->rhs) << "\n";
  for (const auto* r : lib.rules())
    if (in_file(r->loc))
      std::cout << "rule " << r->name << ": " << verifier::term_to_string(*r->lhs) << " => " << verifier::term_to_string(*r->rhs) << "\n";
}

// 335141888 -> "335,141,888"
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string flops_text(double flops) {
  std::ostringstream os;
  os << std::setprecision(4) << flops;
  return os.str();
}

int show_list(const ShowOptions& opt) {
  const bool json = opt.json;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : models::model_zoo()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : m.params) params.push_back({{"name", p.name}, {"default", p.default_value}, {"help", p.help}});
    out.push_back({{"name", m.name}, {"description", m.description}, {"params", params}});
    if (json) continue;
    std::cout << m.name << "\n  " << m.description << "\n";
    for (const auto& p : m.params) {
      std::cout << "    " << std::left << std::setw(16) << (p.name + "=" + std::to_string(p.default_value)) << p.help << "\n";
    }
  }
  const auto lib = spec::Library::load(spec::Library::paths_or_bundled(opt.specs));
  if (!json && !lib.models().empty())
    std::cout << "\nmodels of the spec library (--model NAME where no zoo model has the name, or FILE.loom:NAME):\n";
  for (const spec::ModelDecl* m : lib.models()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : m->params) params.push_back({{"name", p.name}, {"default", p.default_value}});
    out.push_back({{"name", m->name}, {"declared_at", m->loc.to_string()}, {"params", params}});
    if (!json) std::cout << m->name << "<" << sizes_text(*m) << ">\n  " << m->loc.to_string() << "\n";
  }
  if (json) std::cout << out.dump(2) << "\n";
  return 0;
}

int show_model(const ShowOptions& opt) {
  const auto lib = spec::Library::load(opt.model.spec_paths(opt.specs));
  const models::ModelRequest request = opt.model.request(lib);
  const models::LoadedModel loaded = models::load_model(lib, request);
  if (opt.dot) {
    std::cout << pcg::graph_to_dot(loaded.graph);
    return 0;
  }
  const models::ModelStats stats = models::model_stats(loaded.graph, lib);
  nlohmann::json params = nlohmann::json::object();
  if (const auto* info = models::find_model(loaded.name)) {
    const models::Params values(info->params, request.params);
    for (const auto& p : info->params) params[p.name] = values(p.name);
  }
  if (opt.json) {
    nlohmann::json out = {
        {"model", loaded.name}, {"source", loaded.from_onnx ? "onnx" : "zoo"}, {"params", params}, {"notes", loaded.notes}};
    out["stats"] = stats;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "model " << loaded.name;
  if (const auto* info = models::find_model(loaded.name)) std::cout << ": " << info->description;
  std::cout << "\n";
  if (!params.empty()) {
    std::cout << "  sizes:";
    for (const auto& [k, v] : params.items()) std::cout << " " << k << "=" << v.get<std::int64_t>();
    std::cout << "\n";
  }
  for (const auto& note : loaded.notes) std::cout << "  note: " << note << "\n";
  auto counted = [](std::size_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  std::cout << "  nodes: " << stats.nodes << " (" << counted(stats.inputs, "input") << ", " << counted(stats.weights, "weight") << ", "
            << counted(stats.operators, "operator") << ")\n";
  std::cout << "  parameters: " << grouped(stats.parameters);
  if (stats.statistics > 0) std::cout << " (+ " << grouped(stats.statistics) << " batch-norm running statistics)";
  std::cout << "\n  FLOPs: " << flops_text(stats.forward_flops) << " forward, " << flops_text(stats.iteration_flops())
            << " per training iteration (forward + backward, backward taken as 2x forward)\n";
  std::cout << "  operators by type:\n";
  for (const auto& [op, count] : stats.operators_by_type) {
    std::cout << "    " << std::left << std::setw(20) << op << std::right << std::setw(6) << count << "\n";
  }
  return 0;
}

int run_show(const ShowOptions& opt) {
  const int modes = !opt.target.empty() + !opt.model.model.empty() + opt.list;
  if (modes != 1) {
    std::cerr << "loom show: give exactly one of an operator or .loom file, --model, or --list\n";
    return 2;
  }
  if (opt.list) return show_list(opt);
  if (!opt.model.model.empty()) return show_model(opt);
  if (opt.json) {
    std::cerr << "loom show: --json applies to --model and --list\n";
    return 2;
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(opt.target, ec)) {
    auto lib = spec::Library::load({opt.target});
    show_file(lib, opt.target, opt.dot);
    return 0;
  }
  auto lib = spec::Library::load(spec::Library::paths_or_bundled(opt.specs));
  if (const auto* op = lib.find_op(opt.target)) {
    show_op(*op, opt.dot);
    return 0;
  }
  if (lib.has_op(opt.target)) {
    std::cout << opt.target << " is a parallel or fused form; see its declaration with `loom show FILE`\n";
    return 0;
  }
  std::cerr << "loom show: '" << opt.target << "' is neither a file nor an operator of the library\n";
  return 1;
}

}  // namespace

void add_show_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<ShowOptions>();
  auto* cmd =
      app.add_subcommand("show",
                         "Show an operator (its signature, an example instance, its FLOPs and the parallelism derived from its "
                         "comprehension), a spec file's declarations, or a model: a zoo model or an ONNX file as a PCG, with its "
                         "operators by type, parameters and FLOPs (--model; --list lists the zoo with its parameters). With --dot, "
                         "print Graphviz DOT instead: an operator's dataflow, a file's axioms and rules as left/right term graphs, or "
                         "the model's graph.");
  cmd->add_option("target", opt->target, "an operator name or a .loom file");
  cmd->add_option("--specs", opt->specs, "spec files or directories to look operators up in (default: bundled specs/)");
  cmd->add_flag("--dot", opt->dot, "print Graphviz DOT");
  cmd->add_option("-m,--model", opt->model.model,
                  "a zoo model name (see --list), a model of the spec language (FILE.loom:NAME, or the name of one the library "
                  "declares), an .onnx file, or a graph file (loom-pcg JSON, as loom import --out writes)");
  cmd->add_flag("--list", opt->list, "list the zoo's models and their parameters with defaults, then the models the spec library declares");
  cmd->add_flag("--json", opt->json,
                "with --model or --list: print JSON (model, params, stats: operators_by_type, "
                "parameters, forward_flops, ...)");
  add_model_size_options(*cmd, opt->model);
  cmd->callback([opt, &status] { status = run_show(*opt); });
}

}  // namespace loom::cli
