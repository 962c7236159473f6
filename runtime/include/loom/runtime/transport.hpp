#pragma once
// Moving buffers between the processes of a distributed run: one process per device of the plan,
// rank r running device r. Every process walks the graph in the same order and knows every
// message of a step, so a step is a set of point-to-point messages each process takes its part of,
// or a collective every process of a group calls.
#include <cstdint>
#include <vector>

#include "loom/pcg/collective_groups.hpp"

namespace loom::runtime {

template <class T>
struct Outgoing {
  int to = 0;
  std::vector<T> data;
};

template <class T>
struct Incoming {
  int from = 0;
  std::vector<T>* into = nullptr;  // sized by the receiver to the length expected
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sends every outgoing buffer and fills every incoming one; returns when all are done. Messages
  // between two processes are matched in the order both sides list them.
  virtual void exchange(std::vector<Outgoing<float>>& sends, std::vector<Incoming<float>>& receives) = 0;
  virtual void exchange(std::vector<Outgoing<double>>& sends, std::vector<Incoming<double>>& receives) = 0;
  // Every process ends with the element-wise sum of every process's `values`.
  virtual void sum(std::vector<float>& values) = 0;
  virtual void sum(std::vector<double>& values) = 0;
  // Every process of `group` (distinct ranks in ascending order, this process among them) ends
  // with the element-wise sum over the group: an allreduce among the devices of one value's
  // partial sums. Only the group's processes call it, all with the same group.
  virtual void sum(std::vector<float>& values, const std::vector<int>& group) = 0;
  virtual void sum(std::vector<double>& values, const std::vector<int>& group) = 0;
  // Every process of `group` (as for sum) gives `values` of one length n, the same on each, and
  // ends with the group's values concatenated in group order (group.size() * n).
  virtual void all_gather(std::vector<float>& values, const std::vector<int>& group) = 0;
  virtual void all_gather(std::vector<double>& values, const std::vector<int>& group) = 0;
  // Every process of `group` (as for sum) gives `values` of group.size() * n elements, n the same
  // on each; process k of the group ends with block k (n elements) of their element-wise sum.
  virtual void reduce_scatter(std::vector<float>& values, const std::vector<int>& group) = 0;
  virtual void reduce_scatter(std::vector<double>& values, const std::vector<int>& group) = 0;

  // Sums that overlap other work: start_sum begins the sum of `values` over `group` (as
  // sum(values, group)) and may return before it is done; `values` must stay alive and untouched
  // until finish_sums() returns, which waits for every sum started. Every process of a group
  // starts the group's sums in the same order, and runs its other collectives over that group in
  // the same order relative to them. progress() lets started sums advance between pieces of other
  // work (MPI advances a nonblocking collective only inside MPI calls). By default a sum is done
  // when start_sum returns.
  virtual void start_sum(std::vector<float>& values, const std::vector<int>& group) { sum(values, group); }
  virtual void start_sum(std::vector<double>& values, const std::vector<int>& group) { sum(values, group); }
  virtual void progress() {}
  virtual void finish_sums() {}
};

// The collectives a layout change among a group of processes can run as.
using pcg::Collective;

// A run of one process: it holds every device's tasks, so nothing ever moves between processes.
class LocalTransport final : public Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void exchange(std::vector<Outgoing<float>>& sends, std::vector<Incoming<float>>& receives) override { deliver(sends, receives); }
  void exchange(std::vector<Outgoing<double>>& sends, std::vector<Incoming<double>>& receives) override { deliver(sends, receives); }
  void sum(std::vector<float>&) override {}
  void sum(std::vector<double>&) override {}
  void sum(std::vector<float>&, const std::vector<int>&) override {}
  void sum(std::vector<double>&, const std::vector<int>&) override {}
  // A group here is this process alone: its values are the whole result.
  void all_gather(std::vector<float>&, const std::vector<int>&) override {}
  void all_gather(std::vector<double>&, const std::vector<int>&) override {}
  void reduce_scatter(std::vector<float>&, const std::vector<int>&) override {}
  void reduce_scatter(std::vector<double>&, const std::vector<int>&) override {}

 private:
  template <class T>
  static void deliver(std::vector<Outgoing<T>>& sends, std::vector<Incoming<T>>& receives) {
    for (std::size_t i = 0; i < sends.size() && i < receives.size(); ++i) *receives[i].into = std::move(sends[i].data);
  }
};

}  // namespace loom::runtime
