#pragma once
// A transport that passes every call on to another and adds up the seconds spent in them: the
// time a process waits on messages and collectives, the other processes' work before them
// included. While a StepTrace records, each call is a span of it, charged to the trace's node at
// work.
#include "loom/runtime/step_trace.hpp"
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

class TimedTransport final : public Transport {
 public:
  explicit TimedTransport(Transport& inner) : inner_(inner) {}

  // Seconds spent in calls since this transport was made.
  double seconds() const { return seconds_; }
  // Records each call into `trace` (none: no longer).
  void trace_into(StepTrace* trace) { trace_ = trace; }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) override;
  void sum_values(HostValues values, const std::vector<int>* group) override;
  void gather_values(HostValues mine, HostValues all, const std::vector<int>& group) override;
  void scatter_sums(HostValues all, HostValues mine, const std::vector<int>& group) override;
  void swap_blocks(HostValues mine, HostValues theirs, const std::vector<int>& group) override;
  void start_sum_values(HostValues values, const std::vector<int>& group) override;
  void progress() override;
  void finish_sums() override;
  void send_ahead(bool on) override { inner_.send_ahead(on); }
  void use_channel(int channel) override { inner_.use_channel(channel); }
  bool can_send_ahead() const override { return inner_.can_send_ahead(); }
  void finish_sends() override;

 private:
  template <class Call>
  void timed(TransportCall what, Call&& call);

  Transport& inner_;
  double seconds_ = 0;
  StepTrace* trace_ = nullptr;
};

}  // namespace loom::runtime
