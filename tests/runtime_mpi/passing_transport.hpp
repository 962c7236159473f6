#pragma once
// A transport for tests that wraps another: subclasses see every call and pass it on.
#include <functional>
#include <vector>

#include "loom/runtime/transport.hpp"

namespace loom::runtime::mpi_test {

// Passes every call on to another transport through pass(), which subclasses wrap around it.
class PassingTransport : public Transport {
 public:
  explicit PassingTransport(Transport& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void move_values(const std::vector<Message>& s, const std::vector<Message>& r) override {
    pass("exchange", [&] { inner_.move_values(s, r); });
  }
  void sum_values(HostValues v, const std::vector<int>* g) override {
    pass("sum", [&] { inner_.sum_values(v, g); });
  }
  void gather_values(HostValues m, HostValues a, const std::vector<int>& g) override {
    pass("all_gather", [&] { inner_.gather_values(m, a, g); });
  }
  void scatter_sums(HostValues a, HostValues m, const std::vector<int>& g) override {
    pass("reduce_scatter", [&] { inner_.scatter_sums(a, m, g); });
  }
  void swap_blocks(HostValues m, HostValues t, const std::vector<int>& g) override {
    pass("all_to_all", [&] { inner_.swap_blocks(m, t, g); });
  }
  void start_sum_values(HostValues v, const std::vector<int>& g) override {
    pass("start_sum", [&] { inner_.start_sum_values(v, g); });
  }
  void progress() override {
    pass("progress", [&] { inner_.progress(); });
  }
  void finish_sums() override {
    pass("finish_sums", [&] { inner_.finish_sums(); });
  }
  void send_ahead(bool on) override { inner_.send_ahead(on); }
  void finish_sends() override {
    pass("finish_sends", [&] { inner_.finish_sends(); });
  }
  bool can_send_ahead() const override { return inner_.can_send_ahead(); }
  void use_channel(int channel) override { inner_.use_channel(channel); }

 protected:
  virtual void pass(const char* call, const std::function<void()>& run) = 0;

 private:
  Transport& inner_;
};

}  // namespace loom::runtime::mpi_test
