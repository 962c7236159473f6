#include "loom/runtime/step_trace.hpp"

#include <algorithm>
#include <numeric>

#include "loom/search/task_graph.hpp"

namespace loom::runtime {

namespace {

constexpr std::size_t kFieldsPerRecord = 7;

const char* kind_of(TracedWork work) {
  switch (work) {
    case TracedWork::Forward:
    case TracedWork::LayoutChange: return "forward";
    case TracedWork::Backward:
    case TracedWork::LayoutChangeBackward:
    case TracedWork::GradientsAddedUp: return "backward";
    case TracedWork::Recompute: return "recompute";
    case TracedWork::Transport:
    case TracedWork::TransportBackward: return "communication";
    case TracedWork::Loss: return "loss";
    case TracedWork::Update: return "update";
  }
  return "";
}

bool is_transport(TracedWork work) { return work == TracedWork::Transport || work == TracedWork::TransportBackward; }

// A transport call no node's work made: the gradient sums' (or the pipeline's last sends').
const char* unattributed_call(TransportCall call) {
  switch (call) {
    case TransportCall::StartSum: return "sums started";
    case TransportCall::Progress: return "sums progressed";
    case TransportCall::FinishSums: return "sums finished";
    case TransportCall::FinishSends: return "sends finished";
    default: return "gradient sums";
  }
}

}  // namespace

void StepTrace::start() {
  records_.clear();
  current_ = pcg::kNoNode;
  current_microbatch_ = 0;
  current_backward_ = false;
  origin_ = Clock::now();
  on_ = true;
}

void StepTrace::add(TracedWork work, pcg::NodeId node, std::int64_t task, int microbatch, Clock::time_point begin, TransportCall call) {
  if (!on_) return;
  const double start = std::chrono::duration<double>(begin - origin_).count();
  const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  records_.push_back({work, node, task, microbatch, call, start, seconds});
}

search::TraceSpan StepTrace::span_of(const Record& r, int rank, const pcg::Graph& graph) const {
  search::TraceSpan s;
  s.device = rank;
  s.lane = is_transport(r.work) ? search::TraceLane::Communication : search::TraceLane::Compute;
  s.kind = kind_of(r.work);
  s.node = r.node;
  s.start = r.start;
  s.seconds = r.seconds;
  if (r.work == TracedWork::Loss) {
    s.name = "loss";
  } else if (r.work == TracedWork::Update) {
    s.name = "optimizer step";
  } else if (r.work == TracedWork::GradientsAddedUp) {
    s.name = "gradients added up";
  } else if (!r.node.valid()) {
    s.name = unattributed_call(r.call);
  } else {
    const pcg::Node& n = graph.node(r.node);
    s.name = r.task >= 0 ? search::task_label(n, r.task) : search::node_label(n);
    if (r.work == TracedWork::Recompute) s.name = "recompute " + s.name;
    if (r.work == TracedWork::Backward || r.work == TracedWork::LayoutChangeBackward || r.work == TracedWork::TransportBackward)
      s.name += search::kBackwardLabel;
  }
  if (pipelined_ && (r.work == TracedWork::Loss || (r.node.valid() && r.work != TracedWork::GradientsAddedUp)))
    s.name = search::microbatch_label(r.microbatch, s.name);
  return s;
}

std::vector<search::TraceSpan> StepTrace::gather(const pcg::Graph& graph, Transport& transport) const {
  std::vector<int> everyone(static_cast<std::size_t>(transport.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  std::vector<double> counts{static_cast<double>(records_.size())};
  transport.all_gather(counts, everyone);
  const auto most = static_cast<std::size_t>(*std::max_element(counts.begin(), counts.end()));
  std::vector<double> fields(most * kFieldsPerRecord, 0);
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    double* f = &fields[i * kFieldsPerRecord];
    f[0] = static_cast<double>(r.work);
    f[1] = r.node.value();
    f[2] = static_cast<double>(r.task);
    f[3] = r.microbatch;
    f[4] = static_cast<double>(r.call);
    f[5] = r.start;
    f[6] = r.seconds;
  }
  transport.all_gather(fields, everyone);
  std::vector<search::TraceSpan> spans;
  for (std::size_t rank = 0; rank < everyone.size(); ++rank)
    for (std::size_t i = 0; i < static_cast<std::size_t>(counts[rank]); ++i) {
      const double* f = &fields[(rank * most + i) * kFieldsPerRecord];
      const Record r{static_cast<TracedWork>(static_cast<int>(f[0])),
                     pcg::NodeId(static_cast<int>(f[1])),
                     static_cast<std::int64_t>(f[2]),
                     static_cast<int>(f[3]),
                     static_cast<TransportCall>(static_cast<int>(f[4])),
                     f[5],
                     f[6]};
      spans.push_back(span_of(r, static_cast<int>(rank), graph));
    }
  return spans;
}

}  // namespace loom::runtime
