#pragma once
// A transport that passes every call on to another and adds up the seconds spent in them: the
// time a process waits on messages and collectives, the other processes' work before them
// included.
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

class TimedTransport final : public Transport {
 public:
  explicit TimedTransport(Transport& inner) : inner_(inner) {}

  // Seconds spent in calls since this transport was made.
  double seconds() const { return seconds_; }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void exchange(std::vector<Outgoing<float>>& sends, std::vector<Incoming<float>>& receives) override;
  void exchange(std::vector<Outgoing<double>>& sends, std::vector<Incoming<double>>& receives) override;
  void sum(std::vector<float>& values) override;
  void sum(std::vector<double>& values) override;
  void sum(std::vector<float>& values, const std::vector<int>& group) override;
  void sum(std::vector<double>& values, const std::vector<int>& group) override;
  void all_gather(std::vector<float>& values, const std::vector<int>& group) override;
  void all_gather(std::vector<double>& values, const std::vector<int>& group) override;
  void reduce_scatter(std::vector<float>& values, const std::vector<int>& group) override;
  void reduce_scatter(std::vector<double>& values, const std::vector<int>& group) override;
  void start_sum(std::vector<float>& values, const std::vector<int>& group) override;
  void start_sum(std::vector<double>& values, const std::vector<int>& group) override;
  void progress() override;
  void finish_sums() override;

 private:
  template <class Call>
  void timed(Call&& call);

  Transport& inner_;
  double seconds_ = 0;
};

}  // namespace loom::runtime
