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
  void exchange(std::vector<Outgoing<double>>& s, std::vector<Incoming<double>>& r) override { pass("exchange", [&] { inner_.exchange(s, r); }); }
  void exchange(std::vector<Outgoing<float>>& s, std::vector<Incoming<float>>& r) override { pass("exchange", [&] { inner_.exchange(s, r); }); }
  void sum(std::vector<double>& v) override { pass("sum", [&] { inner_.sum(v); }); }
  void sum(std::vector<float>& v) override { pass("sum", [&] { inner_.sum(v); }); }
  void sum(std::vector<double>& v, const std::vector<int>& g) override { pass("sum", [&] { inner_.sum(v, g); }); }
  void sum(std::vector<float>& v, const std::vector<int>& g) override { pass("sum", [&] { inner_.sum(v, g); }); }
  void all_gather(std::vector<double>& v, const std::vector<int>& g) override { pass("all_gather", [&] { inner_.all_gather(v, g); }); }
  void all_gather(std::vector<float>& v, const std::vector<int>& g) override { pass("all_gather", [&] { inner_.all_gather(v, g); }); }
  void reduce_scatter(std::vector<double>& v, const std::vector<int>& g) override { pass("reduce_scatter", [&] { inner_.reduce_scatter(v, g); }); }
  void reduce_scatter(std::vector<float>& v, const std::vector<int>& g) override { pass("reduce_scatter", [&] { inner_.reduce_scatter(v, g); }); }
  void start_sum(std::vector<double>& v, const std::vector<int>& g) override { pass("start_sum", [&] { inner_.start_sum(v, g); }); }
  void start_sum(std::vector<float>& v, const std::vector<int>& g) override { pass("start_sum", [&] { inner_.start_sum(v, g); }); }
  void progress() override { pass("progress", [&] { inner_.progress(); }); }
  void finish_sums() override { pass("finish_sums", [&] { inner_.finish_sums(); }); }

 protected:
  virtual void pass(const char* call, const std::function<void()>& run) = 0;

 private:
  Transport& inner_;
};

}  // namespace loom::runtime::mpi_test
