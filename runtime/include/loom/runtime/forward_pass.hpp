#pragma once
// One forward pass of a PCG on given inputs, as training runs it: a model's graph in one process,
// or a plan's graph task by task across the processes of the transport (one per device), or all
// in one. The weights are the seed's with the model's values in their place (an ONNX file's), or
// a checkpoint's.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

struct ForwardSettings {
  std::uint64_t seed = 1;                          // weights the model does not give
  NamedTensors<double> model_values;               // the model's values of weights and inputs, by node name
  NamedTensors<double> inputs;                     // the values of the graph's inputs, by name (the model's stay otherwise)
  std::map<std::string, std::string> input_files;  // where each came from, for messages
  std::string checkpoint;                          // weights from this checkpoint instead
  std::int64_t plan_devices = 0;                   // devices of the plan the graph comes from (0: those its views use)
  Backend backend = Backend::Cpu;
  bool compile_from_specs = true;  // operators without a hand-written kernel run compiled (false: interpreted)
};

template <class T>
struct ForwardReport {
  std::vector<Tensor<T>> outputs;            // every graph output, whole, in order, on every process
  double seconds = 0;                        // the forward pass, without loading
  std::vector<std::string> compiled_ops;     // operators without a native kernel, compiled from their specs
  std::vector<std::string> interpreted_ops;  // operators without a native kernel, run by the interpreter
};

// Throws LoomError: an input with no value (each named, with its shape), a value for a name that is
// no input of the graph (the inputs listed), a value of another shape, a checkpoint that does not
// fit, a graph the library cannot run, a process count other than the plan's.
template <class T>
ForwardReport<T> forward_pass(const spec::Library& library, const pcg::Graph& graph, const ForwardSettings& settings,
                              Transport* transport = nullptr, const KernelRegistry* kernels = nullptr);

}  // namespace loom::runtime
