#include "loom/runtime/step_trace.hpp"

#include <algorithm>
#include <numeric>

namespace loom::runtime {

namespace {

constexpr std::size_t kFieldsPerRecord = 6;

const char* kind_of(TracedWork work) {
  switch (work) {
    case TracedWork::Forward:
    case TracedWork::LayoutChange: return "forward";
    case TracedWork::Backward:
    case TracedWork::LayoutChangeBackward: return "backward";
    case TracedWork::Transport:
    case TracedWork::TransportBackward: return "communication";
    case TracedWork::Loss: return "loss";
    case TracedWork::Update: return "update";
  }
  return "";
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

void StepTrace::add(TracedWork work, pcg::NodeId node, std::int64_t task, int microbatch, Clock::time_point begin) {
  if (!on_) return;
  const double start = std::chrono::duration<double>(begin - origin_).count();
  const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  records_.push_back({work, node, task, microbatch, start, seconds});
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
    f[4] = r.start;
    f[5] = r.seconds;
  }
  transport.all_gather(fields, everyone);
  std::vector<search::TraceSpan> spans;
  for (std::size_t rank = 0; rank < everyone.size(); ++rank)
    for (std::size_t i = 0; i < static_cast<std::size_t>(counts[rank]); ++i) {
      const double* f = &fields[(rank * most + i) * kFieldsPerRecord];
      const auto work = static_cast<TracedWork>(static_cast<int>(f[0]));
      search::TraceSpan s;
      s.device = static_cast<int>(rank);
      const bool transport = work == TracedWork::Transport || work == TracedWork::TransportBackward;
      s.lane = transport ? search::TraceLane::Communication : search::TraceLane::Compute;
      s.kind = kind_of(work);
      s.node = pcg::NodeId(static_cast<int>(f[1]));
      const auto task = static_cast<std::int64_t>(f[2]);
      if (work == TracedWork::Loss)
        s.name = "loss";
      else if (work == TracedWork::Update)
        s.name = "optimizer step";
      else if (!s.node.valid())
        s.name = "gradient sums";
      else {
        const pcg::Node& n = graph.node(s.node);
        s.name = n.op + "#" + pcg::to_string(n.id) + (task >= 0 ? "[" + std::to_string(task) + "]" : "");
        if (work == TracedWork::Backward || work == TracedWork::LayoutChangeBackward || work == TracedWork::TransportBackward)
          s.name += " (backward)";
      }
      if (pipelined_ && (work == TracedWork::Loss || (work != TracedWork::Update && s.node.valid()))) s.name = "mb" + std::to_string(static_cast<int>(f[3])) + " " + s.name;
      s.start = f[4];
      s.seconds = f[5];
      spans.push_back(std::move(s));
    }
  return spans;
}

}  // namespace loom::runtime
