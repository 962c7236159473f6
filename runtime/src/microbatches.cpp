#include "loom/runtime/microbatches.hpp"

#include <algorithm>
#include <string>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/pipeline_order.hpp"

namespace loom::runtime {

template <class T>
Tensor<T> batch_rows(const Tensor<T>& t, int part, int parts) {
  if (t.dims.empty()) throw LoomError("a scalar cannot be cut into micro-batches");
  const std::int64_t rows = t.dims.front();
  if (parts < 1 || rows % parts != 0)
    throw LoomError("a batch of " + std::to_string(rows) + " does not divide into " + std::to_string(parts) + " micro-batches");
  Tensor<T> out;
  out.dims = t.dims;
  out.dims.front() = rows / parts;
  const std::size_t size = Tensor<T>::element_count(out.dims);
  const auto first = t.data.begin() + static_cast<std::ptrdiff_t>(size * static_cast<std::size_t>(part));
  out.data.assign(first, first + static_cast<std::ptrdiff_t>(size));
  return out;
}

std::vector<search::PipelineStep> process_passes(const pcg::Graph& graph, const search::Pipeline& pipeline, int rank, int processes,
                                                 int devices, bool one_order, const std::vector<bool>& takes_gradient) {
  if (pipeline.stages < 1 || pipeline.microbatches < 1 || (processes > 1 && (devices < 1 || devices % pipeline.stages != 0)))
    throw LoomError("a pipeline of " + std::to_string(pipeline.stages) + " stages and " + std::to_string(pipeline.microbatches) +
                    " micro-batches cannot run on " + std::to_string(devices) + " devices: each stage takes an equal block of them");
  one_order = one_order || processes == 1 || search::runs_in_one_order(graph, pipeline.stages, devices, takes_gradient);
  const int stage = one_order ? 0 : search::stage_of_device(rank, devices, pipeline.stages);
  const std::vector<int> laps = search::pipeline_laps(graph, pipeline.stages, devices);
  const int count = 1 + (laps.empty() ? 0 : *std::max_element(laps.begin(), laps.end()));
  return search::stage_steps(pipeline.order, stage, pipeline.stages, pipeline.microbatches, count);
}

template Tensor<float> batch_rows(const Tensor<float>&, int, int);
template Tensor<double> batch_rows(const Tensor<double>&, int, int);

}  // namespace loom::runtime
