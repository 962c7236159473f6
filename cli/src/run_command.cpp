#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/forward_pass.hpp"
#include "loom/runtime/npy_file.hpp"
#include "loom/search/plan.hpp"
#include "model_options.hpp"
#include "run_setup.hpp"

namespace loom::cli {
namespace {

constexpr const char* kRunHelp =
    "Run a forward pass of a model or a plan on inputs given as NumPy .npy files, and write its outputs as .npy files. The weights "
    "are the model's: an ONNX file's own, a zoo model's drawn from --seed as `loom train` draws them, or a checkpoint's "
    "(--checkpoint). With --plan the plan's graph runs task by task as its machine views place the tasks, under `mpirun -np N` "
    "one process per device (its soundness chain audited first); its outputs equal the model's. Without -o the outputs' first "
    "values are printed.";

struct RunOptions {
  ModelOptions model;
  std::string plan;
  std::vector<std::string> specs;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::vector<std::string> positional;
  std::string out;
  std::string dtype = "float";
  std::string backend = "cpu";
  std::string checkpoint;
  std::uint64_t seed = 1;
  bool trust_plan = false;
  bool interpret = false;
  bool json = false;
  bool quiet = false;
};

// The graph's data inputs (not weights), in graph order.
std::vector<std::string> data_inputs(const pcg::Graph& graph, const models::NamedValues& model_values) {
  std::vector<std::string> names;
  for (const pcg::Node& n : graph.nodes())
    if (n.op == pcg::kInputOp && !model_values.count(n.name)) names.push_back(n.name);
  return names;
}

// --input NAME=FILE and a positional FILE (for a model with one input without a value of its own),
// read into `settings`; forward_pass checks them against the model.
void read_inputs(const RunOptions& opt, const pcg::Graph& graph, const models::NamedValues& model_values,
                 runtime::ForwardSettings& settings) {
  auto read = [&](const std::string& name, const std::string& file) {
    if (settings.inputs.count(name)) throw LoomError("--input: '" + name + "' is given twice");
    settings.inputs.emplace(name, runtime::read_npy(file));
    settings.input_files.emplace(name, file);
  };
  for (const std::string& assignment : opt.inputs) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == assignment.size())
      throw LoomError("--input '" + assignment + "': expected NAME=FILE.npy");
    read(assignment.substr(0, eq), assignment.substr(eq + 1));
  }
  if (opt.positional.empty()) return;
  if (opt.positional.size() > 1) throw LoomError("one input file may go without a name; give the others with --input NAME=FILE.npy");
  std::vector<std::string> open;
  for (const std::string& name : data_inputs(graph, model_values))
    if (!settings.inputs.count(name)) open.push_back(name);
  if (open.size() != 1) {
    std::string list;
    for (const std::string& name : open) list += (list.empty() ? "'" : ", '") + name + "'";
    throw LoomError(opt.positional.front() + " has no name, which feeds the model's one input left to give, but " +
                    (open.empty() ? std::string("none is left") : std::to_string(open.size()) + " are left (" + list + ")") +
                    ": name them with --input NAME=FILE.npy");
  }
  read(open.front(), opt.positional.front());
}

bool names_a_file(const std::string& out) { return std::filesystem::path(out).extension() == ".npy"; }

// Where output i goes: -o FILE.npy for a single output, else DIR/output<i>.npy.
std::string output_path(const std::string& out, std::size_t i) {
  if (names_a_file(out)) return out;
  return (std::filesystem::path(out) / ("output" + std::to_string(i) + ".npy")).string();
}

template <class T>
int run_forward(const RunOptions& opt, const spec::Library& library, const pcg::Graph& graph, const runtime::ForwardSettings& settings,
                const runtime::KernelRegistry& kernels, runtime::Transport& transport, const std::string& name) {
  const runtime::ForwardReport<T> report = runtime::forward_pass<T>(library, graph, settings, &transport, &kernels);
  if (transport.rank() != 0) return 0;
  // An output's name is its node's (a model's `output NAME`, an ONNX output's producer), if it has
  // one, and the output's position among the node's where it has several.
  auto output_name = [&](std::size_t i) {
    const pcg::PortRef port = graph.outputs().at(i);
    const pcg::Node& node = graph.node(port.node);
    if (node.name.empty() || node.output_shapes.size() == 1) return node.name;
    return node.name + "." + std::to_string(port.port);
  };
  std::vector<std::string> written;
  if (!opt.out.empty()) {
    if (!names_a_file(opt.out)) std::filesystem::create_directories(opt.out);
    for (std::size_t i = 0; i < report.outputs.size(); ++i) {
      written.push_back(output_path(opt.out, i));
      runtime::write_npy<T>(written.back(), report.outputs[i]);
    }
  }
  if (opt.json) {
    nlohmann::json outputs = nlohmann::json::array();
    for (std::size_t i = 0; i < report.outputs.size(); ++i) {
      const auto& t = report.outputs[i];
      nlohmann::json o = {{"dims", t.dims},
                          {"file", i < written.size() ? nlohmann::json(written[i]) : nlohmann::json(nullptr)},
                          {"name", output_name(i).empty() ? nlohmann::json(nullptr) : nlohmann::json(output_name(i))}};
      if (written.empty()) o["values"] = t.data;
      outputs.push_back(std::move(o));
    }
    std::cout << nlohmann::json{{"model", name},
                                {"dtype", opt.dtype},
                                {"processes", transport.size()},
                                {"seconds", report.seconds},
                                {"compiled_ops", report.compiled_ops},
                                {"interpreted_ops", report.interpreted_ops},
                                {"outputs", outputs}}
                     .dump()
              << "\n";
    return 0;
  }
  if (!opt.quiet) {
    std::cout << name << ": forward pass in " << std::fixed << std::setprecision(2) << report.seconds * 1e3 << " ms ("
              << (transport.size() > 1 ? std::to_string(transport.size()) + " processes" : std::string("one process")) << ", " << opt.dtype
              << ")\n";
    print_kernel_routes(report.compiled_ops, report.interpreted_ops, opt.interpret);
  }
  for (std::size_t i = 0; i < report.outputs.size(); ++i) {
    std::cout << "output " << i << " " << (output_name(i).empty() ? "" : "\"" + output_name(i) + "\" ")
              << spec::dims_to_string(report.outputs[i].dims);
    if (i < written.size()) {
      std::cout << ": wrote " << written[i] << "\n";
      continue;
    }
    std::cout << ":";
    const std::size_t shown = std::min<std::size_t>(report.outputs[i].data.size(), 8);
    std::cout << std::defaultfloat << std::setprecision(6);
    for (std::size_t k = 0; k < shown; ++k) std::cout << " " << report.outputs[i].data[k];
    if (shown < report.outputs[i].data.size()) std::cout << " ... (" << report.outputs[i].data.size() << " values; -o writes them all)";
    std::cout << "\n";
  }
  return 0;
}

int run_command(const RunOptions& opt, runtime::Transport& transport) {
  const spec::Library library = spec::Library::load(opt.model.spec_paths(opt.specs, opt.plan));
  if (opt.dtype != "float" && opt.dtype != "double") throw LoomError("--dtype: '" + opt.dtype + "' is neither float nor double");
  const runtime::KernelRegistry kernels = kernels_for(opt.backend);
  runtime::ForwardSettings settings;
  settings.seed = opt.seed;
  settings.checkpoint = opt.checkpoint;
  settings.backend = opt.backend == "cuda" ? runtime::Backend::Cuda : runtime::Backend::Cpu;
  settings.compile_from_specs = !opt.interpret;
  GraphToRun run = graph_to_run(opt.plan, opt.model, opt.trust_plan, library, transport, !opt.json && !opt.quiet, "run", "running");
  const pcg::Graph& graph = run.graph;
  settings.plan_devices = run.plan_devices;
  if (!opt.out.empty() && names_a_file(opt.out) && graph.outputs().size() != 1)
    throw LoomError("-o " + opt.out + " names one file, but the model has " + std::to_string(graph.outputs().size()) +
                    " outputs: give a directory, which gets output0.npy, output1.npy, ...");
  read_inputs(opt, graph, run.values, settings);
  settings.model_values = std::move(run.values);
  return opt.dtype == "float" ? run_forward<float>(opt, library, graph, settings, kernels, transport, run.model)
                              : run_forward<double>(opt, library, graph, settings, kernels, transport, run.model);
}

}  // namespace

void add_run_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", kRunHelp);
  cmd->add_option("inputs", opt->positional, "the .npy file of the model's one input (others: --input NAME=FILE.npy)");
  add_model_options(*cmd, opt->model);
  cmd->add_option("--plan", opt->plan, "a plan written by `loom optimize -o` (run under mpirun -np <its devices>, or in one process)");
  cmd->add_flag("--trust-plan", opt->trust_plan, "run the plan without auditing its soundness chain (prints a warning)");
  cmd->add_option("-i,--input", opt->inputs,
                  "NAME=FILE.npy: the value of the model's input NAME (float32, float64, int32 or int64); repeat it for several")
      ->allow_extra_args(false);
  cmd->add_option("-o,--out", opt->out,
                  "write the outputs: FILE.npy for a model with one output, else a directory that gets output0.npy, output1.npy, ...");
  cmd->add_option("--checkpoint", opt->checkpoint, "take the weights from this checkpoint of `loom train --checkpoint`");
  cmd->add_option("--seed", opt->seed, "seed of the weights the model does not give (as `loom train --seed`)")->default_val(1);
  cmd->add_option("--dtype", opt->dtype, "float or double (the outputs are written in it)")->default_val("float");
  cmd->add_option("--backend", opt->backend, "cpu or cuda, as for `loom train`")->default_val("cpu");
  cmd->add_option("--specs", opt->specs, "spec files or directories (default: the bundled library)");
  cmd->add_flag("--json", opt->json, "print a JSON line: the outputs' dims and files (their values without -o) and the time");
  cmd->add_flag("--interpret", opt->interpret, kInterpretHelp);
  cmd->add_flag("-q,--quiet", opt->quiet, "print only the outputs' lines");
  cmd->callback([opt, &status] {
    if (opt->model.model.empty() && opt->plan.empty()) throw CLI::ValidationError("--model or --plan is required");
    status = run_on_processes(opt->backend, [&](runtime::Transport& transport) { return run_command(*opt, transport); });
  });
}

}  // namespace loom::cli
