#include "run_setup.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "loom/interpreter/native_program.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/mpi_transport.hpp"
#include "loom/search/plan.hpp"
#include "loom/verifier/result_cache.hpp"
#include "plan_chain.hpp"
#ifdef LOOM_HAVE_CUDA
#include "loom/runtime/cuda/cuda_kernels.hpp"
#include "loom/runtime/cuda/gpu_processes.hpp"
#include "loom/runtime/cuda/nccl_transport.hpp"
#endif

namespace loom::cli {

bool launched_by_mpi() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK"); }

int run_on_processes(const std::string& backend, const std::function<int(runtime::Transport&)>& command) {
  if (!launched_by_mpi()) {
    runtime::LocalTransport local;
    return command(local);
  }
  // MPI first: it starts and ends MPI, and a GPU run's NCCL transport, made after it and ended
  // before it, runs inside.
  const auto mpi = std::make_unique<runtime::MpiTransport>(nullptr, nullptr);
  runtime::Transport* transport = mpi.get();
#ifdef LOOM_HAVE_CUDA
  std::unique_ptr<runtime::Transport> nccl;
  if (backend == "cuda") {
    if (const auto reason = runtime::cuda_unavailable_reason()) throw LoomError("--backend cuda: " + *reason);
    const runtime::GpuPlacement place = runtime::place_processes_on_gpus();
    runtime::use_cuda_device(place.device);
    if (place.nccl) {
      nccl = std::make_unique<runtime::NcclTransport>(nullptr, nullptr, place.device);
      transport = nccl.get();
    } else if (place.first_on_node) {
      std::cerr << "loom: rank " << mpi->rank() << ": " << place.why_not_nccl << ": values move through MPI, in host memory\n";
    }
  }
#else
  (void)backend;
#endif
  try {
    return command(*transport);
  } catch (const std::exception& e) {
    // The other processes may be waiting on this one: leaving without MPI_Finalize makes mpirun
    // end the whole job rather than hang them.
    std::cerr << "rank " << transport->rank() << " of " << transport->size() << ": " << e.what() << std::endl;
    std::_Exit(1);
  }
}

void print_kernel_routes(const std::vector<std::string>& compiled, const std::vector<std::string>& interpreted, bool asked_to_interpret) {
  for (const std::string& op : compiled) std::cout << "  compiled from its spec: " << op << "\n";
  for (const std::string& op : interpreted) std::cout << "  through the interpreter: " << op << "\n";
  const std::string& why = spec::NativeToolchain::from_environment().why_none;
  if (!interpreted.empty() && !asked_to_interpret && !why.empty()) std::cout << "  (not compiled: " << why << ")\n";
}

runtime::KernelRegistry kernels_for(const std::string& backend) {
  runtime::KernelRegistry kernels = runtime::builtin_kernels();
  if (backend == "cpu") return kernels;
  if (backend != "cuda") throw LoomError("--backend: '" + backend + "' is neither cpu nor cuda");
#ifdef LOOM_HAVE_CUDA
  if (const auto reason = runtime::cuda_unavailable_reason()) throw LoomError("--backend cuda: " + *reason);
  runtime::add_cuda_kernels(kernels);
  return kernels;
#else
  throw LoomError("--backend cuda: this loom was built without the CUDA toolkit (no /usr/local/cuda/bin/nvcc at configure time)");
#endif
}

namespace {

// Every process audits the plan's soundness chain before running it, and refuses a plan whose
// chain does not hold, naming the substitution, the rule and the cause.
void audit_before_running(const std::string& path, const search::Plan& plan, const spec::Library& library, bool saves_cache, bool speaks,
                          const std::string& verb) {
  const audit::PlanAudit result = audit_with_cache(plan, library, verifier::ResultCache::default_path(), saves_cache);
  if (!result.holds())
    throw LoomError(path + ": refusing to " + verb + ": " + result.first_problem() + "\n(see the whole chain with `loom verify " + path +
                    "`; --trust-plan " + verb + "s without the audit)");
  if (speaks) std::cerr << path << ": " << result.verdict() << "\n";
}

}  // namespace

GraphToRun graph_to_run(const std::string& plan_path, const ModelOptions& model, bool trust_plan, const spec::Library& library,
                        const runtime::Transport& transport, bool chatty, const std::string& verb, const std::string& gerund) {
  GraphToRun out;
  if (plan_path.empty()) {
    if (transport.size() > 1)
      throw LoomError("--model without --plan " + verb + "s on one device, but " + std::to_string(transport.size()) +
                      " processes run it: give a plan written by `loom optimize -o` (or run without mpirun)");
    models::LoadedModel loaded = models::load_model(library, model.request(library));
    return {std::move(loaded.graph), loaded.name, std::move(loaded.constants), std::move(loaded.fixed), 0, {}, {}, {}};
  }
  search::Plan plan = search::load_plan(plan_path, library);
  if (trust_plan) {
    if (transport.rank() == 0)
      std::cerr << "warning: " << plan_path << ": --trust-plan: " << gerund << " the plan without auditing its soundness chain\n";
  } else {
    audit_before_running(plan_path, plan, library, transport.rank() == 0, chatty && transport.rank() == 0, verb);
  }
  out.graph = std::move(plan.graph);
  // A plan's run continues the model's: the same weights whatever the plan; an imported model's
  // are the file's, read again from it.
  out.model = model.model.empty() ? plan.model : model.model;
  if (models::is_onnx_path(out.model)) {
    if (!std::filesystem::exists(out.model))
      throw LoomError(plan_path + ": the plan is of " + out.model + ", whose weights it " + verb + "s with, but the file is not there" +
                      " (give it with --model)");
    ModelOptions source = model;
    source.model = out.model;
    models::LoadedModel loaded = models::load_model(library, source.request(library));
    out.values = std::move(loaded.constants);
    out.fixed = std::move(loaded.fixed);
  }
  out.plan_devices = plan.machine.devices();
  out.recompute = plan.recompute;
  out.pipeline = plan.pipeline;
  out.loss = plan.loss;
  if (transport.size() > 1 && transport.size() != out.plan_devices)
    throw LoomError(plan_path + ": the plan is for " + std::to_string(out.plan_devices) + " devices, but " +
                    std::to_string(transport.size()) + " processes run it: start one process per device (mpirun -np " +
                    std::to_string(out.plan_devices) + ")");
  return out;
}

}  // namespace loom::cli
