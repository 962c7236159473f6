#pragma once
// What `loom train` and `loom run` share to run a model or a plan: the kernels of --backend, the
// processes mpirun started, the plan's audit, and the model's own values for a plan's graph.
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "loom/interpreter/library.hpp"
#include "loom/models/load.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/transport.hpp"
#include "loom/search/plan.hpp"
#include "model_options.hpp"

namespace loom::cli {

// Under mpirun (OpenMPI sets OMPI_COMM_WORLD_SIZE; other launchers PMI_SIZE or PMIX_RANK) each
// process is one device of the plan; otherwise this one process runs every device's tasks.
bool launched_by_mpi();

// Runs `command` on the processes mpirun started (MPI, or NCCL for the cuda backend), or in this
// one process. A process that fails under mpirun ends the whole job rather than leave the others
// waiting on it. Returns the command's exit status.
int run_on_processes(const std::string& backend, const std::function<int(runtime::Transport&)>& command);

// The kernels of --backend: the CPU's, or the CPU's with the CUDA kernels in front of them.
runtime::KernelRegistry kernels_for(const std::string& backend);

// What --interpret does, for the commands that run kernels.
inline constexpr const char* kInterpretHelp =
    "run operators without a hand-written kernel through the spec interpreter instead of compiling them to machine code "
    "(compiling needs a C++ compiler: LOOM_CXX, default c++ on PATH; kernels are kept in LOOM_KERNEL_CACHE, default "
    "$XDG_CACHE_HOME/loom/kernels or ~/.cache/loom/kernels)";

// Lists the operators that run compiled from their specs and those the interpreter runs, and,
// where some are interpreted without --interpret, why nothing compiled them.
void print_kernel_routes(const std::vector<std::string>& compiled, const std::vector<std::string>& interpreted, bool asked_to_interpret);

// The graph a command runs, with the model's values: --model's, in one process; or --plan's, its
// soundness chain audited on every process first (unless trusted), on one process per device of
// the plan or all in one.
struct GraphToRun {
  pcg::Graph graph;
  std::string model;                     // the zoo name or file: --model, else the model the plan records
  models::NamedValues values;            // the model's values of weights and inputs (an ONNX file's, read again for a plan)
  std::set<std::string> fixed;           // weights that are constants of the model
  std::int64_t plan_devices = 0;         // the plan's devices (0 for a model)
  std::vector<pcg::NodeId> recompute;    // operators the plan recomputes for the backward pass
  search::Pipeline pipeline;             // the plan's (none for a model)
  std::optional<search::LossKind> loss;  // the loss the plan was costed with (none for a model)
};

// `verb` and `gerund` ("train", "training") word the messages. Throws LoomError: a model run by
// several processes, a plan whose chain does not hold, a process count other than the plan's.
GraphToRun graph_to_run(const std::string& plan_path, const ModelOptions& model, bool trust_plan, const spec::Library& library,
                        const runtime::Transport& transport, bool chatty, const std::string& verb, const std::string& gerund);

}  // namespace loom::cli
