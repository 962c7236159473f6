#pragma once
// Moving buffers between the processes of a distributed run: one process per device of the plan,
// rank r running device r. Every process walks the graph in the same order and knows every
// message of a step, so a step is a set of point-to-point messages each process takes its part of,
// or a collective every process of a group calls.
#include <cstdint>
#include <string>
#include <type_traits>
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

// A group of processes as messages name it: "{0, 1}".
std::string group_text(const std::vector<int>& group);

// The element types values travel as.
enum class ElementType { Float32, Float64 };

template <class T>
constexpr ElementType element_type_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "values travel as float or double");
  return std::is_same_v<T, float> ? ElementType::Float32 : ElementType::Float64;
}

// Values of one element type in this process's memory: what every transport moves.
struct HostValues {
  ElementType type = ElementType::Float64;
  void* data = nullptr;
  std::size_t count = 0;

  template <class T>
  static HostValues of(std::vector<T>& values) {
    return {element_type_of<T>(), values.data(), values.size()};
  }
  std::size_t bytes() const { return count * (type == ElementType::Float32 ? sizeof(float) : sizeof(double)); }
};

// One message of an exchange: the process it goes to or comes from, and its values.
struct Message {
  int peer = 0;
  HostValues values;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sends every outgoing buffer and fills every incoming one; returns when all are done. Messages
  // between two processes are matched in the order both sides list them.
  template <class T>
  void exchange(std::vector<Outgoing<T>>& sends, std::vector<Incoming<T>>& receives) {
    std::vector<Message> out, in;
    for (Outgoing<T>& s : sends) out.push_back({s.to, HostValues::of(s.data)});
    for (Incoming<T>& r : receives) in.push_back({r.from, HostValues::of(*r.into)});
    move_values(out, in);
  }
  // Every process ends with the element-wise sum of every process's `values`.
  template <class T>
  void sum(std::vector<T>& values) {
    sum_values(HostValues::of(values), nullptr);
  }
  // Every process of `group` (distinct ranks in ascending order, this process among them) ends
  // with the element-wise sum over the group: an allreduce among the devices of one value's
  // partial sums. Only the group's processes call it, all with the same group.
  template <class T>
  void sum(std::vector<T>& values, const std::vector<int>& group) {
    sum_values(HostValues::of(values), &group);
  }
  // Every process of `group` (as for sum) gives `values` of one length n, the same on each, and
  // ends with the group's values concatenated in group order (group.size() * n).
  template <class T>
  void all_gather(std::vector<T>& values, const std::vector<int>& group) {
    std::vector<T> all(values.size() * group.size());
    gather_values(HostValues::of(values), HostValues::of(all), group);
    values = std::move(all);
  }
  // Every process of `group` (as for sum) gives `values` of group.size() * n elements, n the same
  // on each; process k of the group ends with block k (n elements) of their element-wise sum.
  template <class T>
  void reduce_scatter(std::vector<T>& values, const std::vector<int>& group) {
    check_divides(values.size(), group);
    std::vector<T> block(values.size() / group.size());
    scatter_sums(HostValues::of(values), HostValues::of(block), group);
    values = std::move(block);
  }
  // Every process of `group` (as for sum) gives `values` of group.size() * n elements, n the same
  // on each, block j for process j of the group; each ends with the block every process gave it,
  // in group order.
  template <class T>
  void all_to_all(std::vector<T>& values, const std::vector<int>& group) {
    check_divides(values.size(), group);
    std::vector<T> received(values.size());
    swap_blocks(HostValues::of(values), HostValues::of(received), group);
    values = std::move(received);
  }
  // Sums that overlap other work: start_sum begins the sum of `values` over `group` (as
  // sum(values, group)) and may return before it is done; `values` must stay alive and untouched
  // until finish_sums() returns, which waits for every sum started. Every process of a group
  // starts the group's sums in the same order, and runs its other collectives over that group in
  // the same order relative to them. progress() lets started sums advance between pieces of other
  // work (MPI advances a nonblocking collective only inside MPI calls).
  template <class T>
  void start_sum(std::vector<T>& values, const std::vector<int>& group) {
    start_sum_values(HostValues::of(values), group);
  }
  virtual void progress() {}
  virtual void finish_sums() {}
  // Sends that do not wait for their receivers. While on, an exchange returns once this process's
  // receives are done: its sends are copied and left in flight until finish_sends(). The processes
  // of a pipeline run different micro-batches' passes at once, and two of them sending to each
  // other at one time would otherwise each wait for the other to receive.
  virtual void send_ahead(bool /*on*/) {}
  virtual void finish_sends() {}
  // Whether send_ahead does anything: where it does not, a pipeline's processes run their passes in
  // one order.
  virtual bool can_send_ahead() const { return false; }
  // Messages sent on one channel are received only on that channel, in the order they were sent.
  // A pipeline's micro-batches each take their own: the processes of two stages run their passes
  // in different orders, so the messages of one micro-batch's backward can come between those of
  // the next one's forward. Channel 0 until set; at most kChannels.
  static constexpr int kChannels = 4096;
  virtual void use_channel(int /*channel*/) {}

  // What a transport implements, once for every element type. Receives are sized by the caller;
  // a null group is every process; `all` holds group.size() blocks of `mine`'s length.
  virtual void move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) = 0;
  virtual void sum_values(HostValues values, const std::vector<int>* group) = 0;
  virtual void gather_values(HostValues mine, HostValues all, const std::vector<int>& group) = 0;
  virtual void scatter_sums(HostValues all, HostValues mine, const std::vector<int>& group) = 0;
  // `mine` and `theirs` hold group.size() equal blocks. By default, point-to-point messages: block
  // j to process j of the group, and from it into block j.
  virtual void swap_blocks(HostValues mine, HostValues theirs, const std::vector<int>& group);
  // By default a sum is done when it is started.
  virtual void start_sum_values(HostValues values, const std::vector<int>& group) { sum_values(values, &group); }

  // Throws LoomError unless `whole` holds group.size() blocks of `block`'s length and element
  // type: what gather_values and scatter_sums need, checked by each transport.
  static void check_blocks(const HostValues& block, const HostValues& whole, const std::vector<int>& group, const char* operation);
  // Throws LoomError unless `mine` and `theirs` are of one element type and length, in
  // group.size() equal blocks: what swap_blocks needs.
  static void check_swap(const HostValues& mine, const HostValues& theirs, const std::vector<int>& group, const char* operation);

 private:
  // Throws LoomError unless `count` values split into the group's blocks (for reduce_scatter and
  // all_to_all).
  static void check_divides(std::size_t count, const std::vector<int>& group);
};

// The collectives a layout change among a group of processes can run as.
using pcg::Collective;

// A run of one process: it holds every device's tasks, so nothing ever moves between processes,
// and a group is this process alone.
class LocalTransport final : public Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  // Messages to itself, matched in order.
  void move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) override;
  void sum_values(HostValues, const std::vector<int>*) override {}
  void gather_values(HostValues mine, HostValues all, const std::vector<int>& group) override;
  void scatter_sums(HostValues all, HostValues mine, const std::vector<int>& group) override;
};

}  // namespace loom::runtime
