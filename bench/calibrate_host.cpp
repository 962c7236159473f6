// Measures this host as a machine for simulating runs with one CPU core per rank, and prints it
// as a Loom machine file (specs/machines/cpu_host.json holds one such run):
//   peak FLOP/s     single-threaded Eigen float GEMM, best of several
//   memory GB/s     memcpy of a buffer far larger than the caches, bytes read plus written
//   kernel overhead the runtime's relu kernel on one element (what every task pays)
//   dispatch        the executor's own time per task outside its task times, forward and backward,
//                   over a small MLP's steps (the median of a few runs)
//   unfolding       the rate convolutions unfold windows into a matrix at (im2col): per pair of
//                   convolutions over the same windows, one filter and many, the fixed part of
//                   their forward times over the unfolded bytes (the median of three pairs)
//   achieved fraction per kernel shape (contraction, convolution, reduction, transcendental,
//                   elementwise), the
//                   median over a few tasks of the shape, each measured alone forward and backward
//                   as `loom optimize` measures (runtime::LocalTaskMeasurer), of the roofline's
//                   time over the measured one (a convolution's unfolding taken off)
//   busy node slowdown those tasks' time on rank 0 while rank 1 runs them too, over their time
//                   while rank 1 sleeps (median of three pairs): a figure for two devices of a node
//   drift           how far two ranks' times for the same work between meetings spread, as a
//                   fraction of the work (meeting_drift)
//   links           ping-pong between ranks 0 and 1 through the runtime's MPI transport, and sums
//                   of a buffer through it (the allreduce figures), waited in or started and
//                   overlapped with other work (the started allreduce figures): median times over
//                   message sizes from 4 bytes to 4 MiB, the sizes a step sends (started sums from
//                   64 KiB), each fitted as latency plus bytes over bandwidth with the least
//                   relative error; the messages' and the waited sums' times are kept too, size
//                   by size, in the link's tables (a sum's halved, as the two steps of a ring):
//                   the transport sends messages of a few KiB and more only after a handshake,
//                   which no one line fits
// Run as `mpirun -np 2 loom_calibrate_host`; with one process the links are left out of the
// measurement and copy the memory figures. `[mpirun -np 2] loom_calibrate_host --only-for MACHINE`
// measures only the unfolding rate and the achieved fractions, against MACHINE's device figures (a bundled name or a
// file), and with two ranks the busy node slowdown and the drift, and prints MACHINE with them.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "bench_support.hpp"
#include "loom/pcg/median.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/mpi_transport.hpp"
#include "loom/runtime/roofline_calibration.hpp"
#include "loom/runtime/sharded_executor.hpp"
#include "loom/runtime/task_measurement.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/meeting_wait.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The fastest of `repeats` runs of `body`, in seconds.
template <class Body>
double best_of(int repeats, Body body) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    body();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

double gemm_flops() {
  Eigen::setNbThreads(1);
  constexpr int n = 512;
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf c(n, n);
  const double seconds = best_of(10, [&] { c.noalias() = a * b; });
  if (c(0, 0) == 12345.f) std::cerr << "";  // keeps the product alive
  return 2.0 * n * n * n / seconds;
}

double memcpy_bandwidth() {
  constexpr std::size_t bytes = std::size_t{256} << 20;
  std::vector<char> from(bytes, 1), to(bytes, 0);
  const double seconds = best_of(5, [&] { std::memcpy(to.data(), from.data(), bytes); });
  if (to[bytes / 2] != 1) std::cerr << "memcpy lost data\n";
  return 2.0 * static_cast<double>(bytes) / seconds;
}

double kernel_overhead() {
  using namespace loom::runtime;
  const Kernel<float>* relu = builtin_kernels().find<float>("relu", Backend::Cpu);
  Tensor<float> x(std::vector<std::int64_t>{1, 1});
  OpCall<float> call{"relu", {}, {&x}, {}, {}, {}, {x.dims}};
  constexpr int calls = 10000;
  return best_of(5,
                 [&] {
                   for (int i = 0; i < calls; ++i) relu->forward(call);
                 }) /
         calls;
}

// Over a small MLP rather than tasks on a few elements: the executor's bookkeeping between tasks
// runs with the caches full of the values the tasks read and write, as in a step, and takes several
// times longer than between tasks that leave the caches to it. What a step does once outside its
// tasks (here: the output's gradient copied in, as a loss makes one; the weights' gradients handed
// back) is spread over the tasks, as the simulator charges nothing else for it.
double dispatch_overhead() {
  using namespace loom::runtime;
  constexpr std::int64_t rows = 64, width = 256;
  constexpr int layers = 8;
  loom::pcg::Graph g;
  int last = g.add_input("x", loom::pcg::ParallelShape::unpartitioned({rows, width}));
  std::set<std::string> weights;
  NamedValues<float> feeds{{"x", Value<float>(Tensor<float>({rows, width}, 0.5f))}};
  for (int i = 0; i < layers; ++i) {
    const std::string w = "w" + std::to_string(i);
    weights.insert(w);
    feeds.emplace(w, Value<float>(Tensor<float>({width, width}, 1.f / width)));
    const int weight = g.add_input(w, loom::pcg::ParallelShape::unpartitioned({width, width}), true);
    last =
        g.add_node(loom::bench::library(), "relu", {}, {{g.add_node(loom::bench::library(), "matmul", {}, {{last, 0}, {weight, 0}}), 0}});
  }
  g.mark_output({last, 0});
  LocalTransport one;
  ShardedExecutor<float> executor(loom::bench::library(), g, builtin_kernels(), one, weights, 1);
  const std::vector<Tensor<float>> output_grad{Tensor<float>({rows, width}, 1.f)};
  constexpr int steps = 50;
  executor.forward(feeds);  // builds kernels and buffers
  executor.backward_values(output_grad);
  std::vector<double> per_task;
  for (int r = 0; r < 7; ++r) {
    executor.restart_operator_times();
    const auto start = Clock::now();
    for (int s = 0; s < steps; ++s) {
      executor.forward(feeds);
      executor.backward_values(output_grad);
    }
    const double total = seconds_since(start);
    double kernels = 0;
    std::int64_t tasks = 0;
    for (const OperatorTime& t : executor.operator_times()) {
      kernels += t.forward_seconds + t.backward_seconds;
      tasks += t.forward_tasks + t.backward_tasks;
    }
    per_task.push_back((total - kernels) / static_cast<double>(tasks));
  }
  return loom::pcg::median(per_task);
}

// The median of `repeats` runs of `body`, in seconds: what a step meets, where the best run is
// what an idle host allows.
template <class Body>
double median_of(int repeats, Body body) {
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    body();
    seconds.push_back(seconds_since(start));
  }
  return loom::pcg::median(seconds);
}

// Seconds for one message of `floats` floats between ranks 0 and 1, half of the median round trip.
double one_way_seconds(loom::runtime::Transport& transport, std::size_t floats, int repeats) {
  using namespace loom::runtime;
  std::vector<Outgoing<float>> send{{1 - transport.rank(), std::vector<float>(floats, 1.f)}};
  std::vector<float> buffer(floats);
  std::vector<Incoming<float>> receive{{1 - transport.rank(), &buffer}};
  std::vector<Outgoing<float>> none_out;
  std::vector<Incoming<float>> none_in;
  return median_of(repeats,
                   [&] {
                     if (transport.rank() == 0) {
                       transport.exchange(send, none_in);
                       transport.exchange(none_out, receive);
                     } else {
                       transport.exchange(none_out, receive);
                       transport.exchange(send, none_in);
                     }
                   }) /
         2;
}

// Buffers of `floats` floats that together outgrow the caches. A step sums gradients its backward
// pass wrote a while before, so each sum measured takes the next of them rather than the one it
// summed last.
std::vector<std::vector<float>> buffers_beyond_the_caches(std::size_t floats) {
  constexpr std::size_t cache_floats = std::size_t{16} << 20;  // 64 MiB
  return std::vector<std::vector<float>>(std::max<std::size_t>(1, std::min<std::size_t>(cache_floats / floats, 64)),
                                         std::vector<float>(floats, 1.f));
}

// Seconds for ranks 0 and 1 to sum a buffer of `floats` floats.
double sum_seconds(loom::runtime::Transport& transport, std::size_t floats, int repeats) {
  std::vector<std::vector<float>> buffers = buffers_beyond_the_caches(floats);
  const std::vector<int> pair{0, 1};
  std::size_t next = 0;
  return median_of(repeats, [&] { transport.sum(buffers[next++ % buffers.size()], pair); });
}

// Seconds a sum of `floats` floats that ranks 0 and 1 start and then overlap with other work
// adds to that work, as a gradient sum started during the backward pass does: each rank starts
// the sum, works in short spells letting it advance between them (progress), and waits for it
// at the end. The work lasts several times the sum, so the figure is what moving and adding the
// values costs a rank, not the wait for the other.
double started_sum_seconds(loom::runtime::Transport& transport, std::size_t floats, int repeats, double blocking_seconds) {
  std::vector<std::vector<float>> buffers = buffers_beyond_the_caches(floats);
  const std::vector<int> pair{0, 1};
  std::vector<float> scratch(std::size_t{16} << 10, 1.f);  // 64 KiB, in cache: the spells' work
  const auto spell = [&] {
    for (float& v : scratch) v = v * 0.999f + 0.001f;
  };
  const auto one_spell = median_of(repeats, spell);
  const int spells = std::max(4, static_cast<int>(4 * blocking_seconds / std::max(one_spell, 1e-7)));
  std::size_t next = 0;
  const double alone = median_of(repeats, [&] {
    for (int i = 0; i < spells; ++i) spell();
  });
  const double with_sum = median_of(repeats, [&] {
    transport.start_sum(buffers[next++ % buffers.size()], pair);
    for (int i = 0; i < spells; ++i) {
      spell();
      transport.progress();
    }
    transport.finish_sums();
  });
  return std::max(1e-8, with_sum - alone);  // the fit divides by it
}

// Latency and bandwidth of `seconds = latency + bytes / bandwidth` over measured (bytes, seconds),
// with the least relative error: small messages weigh as much as large ones. Where the times are
// so spread that the line falls as the size grows, the rate of the largest size alone, with no
// latency, said on standard error: a rate left out would price such sums at another kind's.
loom::search::Link fit_link(const std::vector<std::pair<double, double>>& measured, const std::string& what, bool say) {
  Eigen::MatrixXd a(static_cast<Eigen::Index>(measured.size()), 2);
  Eigen::VectorXd ones = Eigen::VectorXd::Ones(a.rows());
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    const auto [bytes, seconds] = measured[static_cast<std::size_t>(i)];
    a(i, 0) = 1 / seconds;
    a(i, 1) = bytes / seconds;
  }
  const Eigen::Vector2d x = a.colPivHouseholderQr().solve(ones);
  if (x(1) > 0) return loom::search::Link{1 / x(1), std::max(0.0, x(0))};
  const auto [bytes, seconds] = *std::max_element(measured.begin(), measured.end());
  if (say)
    std::cerr << "link: " << what << ": the times fit no rising line; the rate of " << bytes << " bytes alone, " << bytes / seconds / 1e9
              << " GB/s\n";
  return loom::search::Link{bytes / seconds, 0};
}

// The sizes a step's messages and sums come in, from one float to 4 MiB.
const std::vector<std::size_t>& message_floats() {
  static const std::vector<std::size_t> floats{1, 64, 1024, 16384, 131072, 1048576};
  return floats;
}

// Measured (bytes, seconds), each figure times `share`: a sum between two devices is two ring
// steps in which each sends half the buffer, so its steps are its figures halved.
loom::search::TransferTable transfer_table(const std::vector<std::pair<double, double>>& measured, double share) {
  std::vector<loom::search::MeasuredTransfer> points;
  for (const auto& [bytes, seconds] : measured) points.push_back({bytes * share, seconds * share});
  return loom::search::TransferTable(std::move(points));
}

// The link between ranks 0 and 1 through `transport`, its allreduce figures included: each fitted
// as latency plus bytes over bandwidth, and each size's time kept beside the fit. The sizes' times
// and the fit's go to standard error on rank 0.
loom::search::Link measure_link(loom::runtime::Transport& transport) {
  std::vector<std::pair<double, double>> messages, sums, started_sums;
  for (std::size_t floats : message_floats()) {
    const int repeats = floats > 100000 ? 21 : 201;
    const double bytes = static_cast<double>(floats * sizeof(float));
    messages.emplace_back(bytes, one_way_seconds(transport, floats, repeats));
    sums.emplace_back(bytes, sum_seconds(transport, floats, repeats));
    // Below 64 KiB a started sum costs next to nothing beside the work: its latency is hidden,
    // and such figures would only add noise to the fit.
    if (floats >= 16384) started_sums.emplace_back(bytes, started_sum_seconds(transport, floats, repeats, sums.back().second));
  }
  const bool say = transport.rank() == 0;
  loom::search::Link link = fit_link(messages, "messages", say);
  const loom::search::Link sum = fit_link(sums, "sums", say), started = fit_link(started_sums, "started sums", say);
  link.allreduce = {sum.bandwidth, sum.latency / 2, transfer_table(sums, 0.5)};
  // A started sum's figures spread too widely from run to run (a 64 KiB sum from 3 to 72 us) for
  // each size's to stand alone: its line alone prices it.
  link.started_allreduce = {started.bandwidth, started.latency / 2};
  link.messages = transfer_table(messages, 1);
  if (say)
    for (std::size_t i = 0; i < messages.size(); ++i) {  // the sums' sizes are the messages'
      const double bytes = messages[i].first;
      std::cerr << "link: " << bytes << " bytes: a message " << messages[i].second * 1e6 << " us (the fit "
                << (link.latency + bytes / link.bandwidth) * 1e6 << "), a sum " << sums[i].second * 1e6 << " us (the fit "
                << (sum.latency + bytes / sum.bandwidth) * 1e6 << ")\n";
    }
  if (say)
    for (const auto& [bytes, seconds] : started_sums)
      std::cerr << "link: " << bytes << " bytes: a started sum " << seconds * 1e6 << " us (the fit "
                << (started.latency + bytes / started.bandwidth) * 1e6 << ")\n";
  return link;
}

// Tasks of each kernel shape at the sizes small models train with, measured to calibrate the
// roofline; other sizes than the accuracy bench's models.
const std::vector<loom::runtime::CalibrationTask>& calibration_tasks() {
  static const std::vector<loom::runtime::CalibrationTask> tasks = {
      {"matmul", {}, {{128, 384}, {384, 256}}},
      {"matmul", {}, {{32, 1024}, {1024, 128}}},
      {"linear", {}, {{96, 512}, {512, 384}, {384}}},
      {"batch_matmul", {}, {{8, 48, 32}, {8, 32, 48}}},
      {"conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}}, {{4, 16, 12, 12}, {32, 16, 3, 3}}},
      {"conv2d", {{"stride_h", 2}, {"stride_w", 2}, {"pad_h", 2}, {"pad_w", 2}, {"act", 0}}, {{4, 3, 40, 40}, {12, 3, 5, 5}}},
      {"softmax", {}, {{96, 384}}},
      {"layer_norm", {}, {{96, 384}, {384}, {384}}},
      {"pool2d_max", {{"kh", 3}, {"kw", 3}, {"stride", 2}, {"pad", 0}}, {{4, 16, 21, 21}}},
      {"relu", {}, {{96, 384}}},
      {"ewadd", {}, {{96, 384}, {96, 384}}},
      {"ewmul", {}, {{64, 512}, {64, 512}}},
      {"gelu", {}, {{96, 384}}},
      {"sigmoid", {}, {{96, 384}}},
      {"tanh", {}, {{64, 512}}},
  };
  return tasks;
}

// Convolutions with one filter and with many over the same windows: AlexNet's first layer (few
// channels, a wide window, stride 4), a 3x3 layer of more channels, a 5x5 of stride 2.
const std::vector<loom::runtime::UnfoldingPair>& unfolding_pairs() {
  const auto conv = [](std::int64_t stride, std::int64_t pad, std::vector<std::int64_t> x, std::vector<std::int64_t> w) {
    return loom::runtime::CalibrationTask{
        "conv2d", {{"stride_h", stride}, {"stride_w", stride}, {"pad_h", pad}, {"pad_w", pad}, {"act", 0}}, {std::move(x), std::move(w)}};
  };
  static const std::vector<loom::runtime::UnfoldingPair> pairs = {
      {conv(4, 2, {8, 3, 63, 63}, {1, 3, 11, 11}), conv(4, 2, {8, 3, 63, 63}, {16, 3, 11, 11})},
      {conv(1, 1, {4, 16, 12, 12}, {1, 16, 3, 3}), conv(1, 1, {4, 16, 12, 12}, {32, 16, 3, 3})},
      {conv(2, 2, {4, 3, 40, 40}, {1, 3, 5, 5}), conv(2, 2, {4, 3, 40, 40}, {24, 3, 5, 5})},
  };
  return pairs;
}

double unfolding_bandwidth(const loom::search::DeviceSpec& device) {
  loom::runtime::LocalTaskMeasurer measurer(loom::bench::library());
  const double rate = loom::runtime::calibrate_unfolding(loom::bench::library(), device, measurer, unfolding_pairs());
  std::cerr << "unfolding: " << device.unfolding_bandwidth / 1e9 << " -> " << rate / 1e9 << " GB/s of unfolded windows\n";
  return rate;
}

std::array<double, loom::pcg::kKernelShapes.size()> achieved_fractions(const loom::search::DeviceSpec& device) {
  loom::runtime::LocalTaskMeasurer measurer(loom::bench::library());
  const loom::runtime::ShapeCalibration c = loom::runtime::calibrate_shapes(loom::bench::library(), device, measurer, calibration_tasks());
  for (loom::pcg::KernelShape shape : loom::pcg::kKernelShapes)
    std::cerr << loom::pcg::kernel_shape_name(shape) << ": " << device.achieved(shape) << " -> "
              << c.achieved_fraction[static_cast<std::size_t>(shape)] << " of the roofline (" << c.tasks[static_cast<std::size_t>(shape)]
              << " tasks)\n";
  return c.achieved_fraction;
}

// Seconds the calibration tasks take on this process, forward and backward, measured alone.
double calibration_tasks_seconds() {
  loom::runtime::LocalTaskMeasurer measurer(loom::bench::library());
  double total = 0;
  for (const loom::runtime::CalibrationTask& task : calibration_tasks()) {
    std::vector<loom::pcg::ParallelShape> inputs;
    for (const auto& dims : task.inputs) inputs.push_back(loom::pcg::ParallelShape::unpartitioned(dims));
    if (const auto t = measurer.measure(loom::search::task_key(task.op, task.attrs, inputs, {}, measurer.device_kind())))
      total += t->forward_seconds + t->backward_seconds.value_or(0);
  }
  return total;
}

// A spell of the work a step does between meetings (about 40 us on this host): a small product,
// then a pass over a buffer beyond the core's first cache.
class WorkSpell {
 public:
  WorkSpell() : a_(Eigen::MatrixXf::Random(64, 64)), b_(Eigen::MatrixXf::Random(64, 64)), c_(64, 64), stream_(std::size_t{1} << 15, 1.f) {}
  void operator()() {
    c_.noalias() = a_ * b_;
    for (float& v : stream_) v = v * 0.999f + c_(0, 0) * 1e-9f;
  }

 private:
  Eigen::MatrixXf a_, b_, c_;
  std::vector<float> stream_;
};

// How far ranks 0 and 1 drift apart while they work (DeviceSpec::drift): both repeat `spells` of
// the same work then meet in a sum of one number, timing each round's work; the two ranks' times
// for the same round differ by what the host did to each. Their mean half-difference is what a
// meeting after that work waits past the mean (search::drift_from_meeting_wait). Over rounds of 1
// to 64 spells (about 40 us to 2.5 ms, the work a step does between its meetings), the median of
// each size's drift, so that short spells of work count as much as long ones; each size's figures
// go to standard error on rank 0.
double meeting_drift(loom::runtime::Transport& transport) {
  const std::vector<int> pair{0, 1};
  WorkSpell spell;
  std::vector<double> drifts;
  for (int spells : {1, 4, 16, 64}) {
    const int rounds = std::clamp(4000 / spells, 100, 1000);
    std::vector<double> worked;
    std::vector<double> meet{0};
    for (int r = 0; r < rounds; ++r) {
      const auto start = Clock::now();
      for (int i = 0; i < spells; ++i) spell();
      worked.push_back(seconds_since(start));
      transport.sum(meet, pair);
    }
    std::vector<double> both = worked;
    transport.all_gather(both, pair);
    double wait = 0, work = 0;
    for (int r = 0; r < rounds; ++r) {
      const double mine = both[static_cast<std::size_t>(r)], theirs = both[static_cast<std::size_t>(rounds + r)];
      wait += std::abs(mine - theirs) / 2;
      work += (mine + theirs) / 2;
    }
    wait /= rounds;
    work /= rounds;
    const double drift = loom::search::drift_from_meeting_wait(wait, work);
    drifts.push_back(drift);
    if (transport.rank() == 0)
      std::cerr << "drift: " << spells << " spells, " << rounds << " rounds: work " << work * 1e6 << " us, waited " << wait * 1e6
                << " us a meeting past the mean, drift " << drift << "\n";
  }
  return loom::pcg::median(drifts);
}

// How many times longer the calibration tasks take on rank 0 while rank 1 runs them too than
// while rank 1 sleeps: the median of three such pairs. Ranks 0 and 1 take part. Rank 1 sleeps
// rather than wait in a sum, since a waiting rank polls its core for a while before it sleeps.
double busy_node_slowdown(loom::runtime::Transport& transport) {
  constexpr double kAloneSpell = 3.0;  // seconds rank 1 sleeps: longer than rank 0 measures
  const std::vector<int> pair_of_ranks = {0, 1};
  std::vector<double> ratios;
  for (int pair = 0; pair < 3; ++pair) {
    std::vector<double> sync{0};
    double alone = 0;
    if (transport.rank() == 0) {
      const auto start = Clock::now();
      alone = calibration_tasks_seconds();
      if (seconds_since(start) > kAloneSpell) alone = 0;  // rank 1 woke before the end: not alone throughout
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(kAloneSpell));
    }
    transport.sum(sync, pair_of_ranks);
    const double busy = calibration_tasks_seconds();
    transport.sum(sync, pair_of_ranks);
    if (alone > 0) ratios.push_back(std::max(1.0, busy / alone));
  }
  if (ratios.empty()) return 1;
  return loom::pcg::median(ratios);
}

// The machine file at `name_or_path` as it is, but for the figures measured here: the achieved
// fractions, and the busy node slowdown and the drift where two ranks measured them.
nlohmann::json recalibrated(const std::string& name_or_path, std::optional<double> slowdown, std::optional<double> drift) {
  const std::string path = loom::search::machine_file_path(name_or_path);
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in);  // load_machine has read it already
  const loom::search::Machine m = loom::search::load_machine(path);
  loom::search::Machine calibrated = m;
  calibrated.device.unfolding_bandwidth = unfolding_bandwidth(m.device);
  calibrated.device.achieved_fraction = achieved_fractions(calibrated.device);
  const nlohmann::json device = loom::search::machine_to_json(calibrated)["device"];
  for (const char* key : {"achieved_fraction", "unfolding_gbps"})
    if (device.contains(key))
      doc["device"][key] = device[key];
    else
      doc["device"].erase(key);
  if (slowdown) doc["device"]["busy_node_slowdown"] = *slowdown;
  if (drift) doc["device"]["drift"] = *drift;
  return doc;
}

}  // namespace

int main(int argc, char** argv) {
  loom::runtime::MpiTransport transport(&argc, &argv);
  const std::string only_for = argc == 3 && std::string(argv[1]) == "--only-for" ? argv[2] : "";
  if (argc > 1 && only_for.empty()) {
    if (transport.rank() == 0) std::cerr << "usage: [mpirun -np 2] loom_calibrate_host [--only-for MACHINE]\n";
    return 1;
  }
  if (!only_for.empty()) {
    try {  // before measuring: a bad file is reported at once
      const loom::search::Machine m = loom::search::load_machine(only_for);
      if (m.device.kind != "cpu")
        throw loom::LoomError(loom::search::machine_file_path(only_for) + ": its devices are " + m.device.kind +
                              ", not this host's cpu: their roofline cannot be calibrated here");
    } catch (const loom::LoomError& e) {
      if (transport.rank() == 0) std::cerr << "loom_calibrate_host: " << e.what() << "\n";
      return 1;
    }
  }
  const bool linked = transport.size() >= 2;
  loom::search::Link measured;
  if (only_for.empty() && linked && transport.rank() < 2) measured = measure_link(transport);
  const double slowdown = linked && transport.rank() < 2 ? busy_node_slowdown(transport) : 1;
  const double drift = linked && transport.rank() < 2 ? meeting_drift(transport) : 0;
  if (transport.rank() != 0) return 0;
  if (!only_for.empty()) {
    try {
      std::cout << recalibrated(only_for, linked ? std::optional<double>(slowdown) : std::nullopt,
                                linked ? std::optional<double>(drift) : std::nullopt)
                       .dump(2)
                << "\n";
      return 0;
    } catch (const loom::LoomError& e) {
      std::cerr << "loom_calibrate_host: " << e.what() << "\n";
      return 1;
    }
  }
  loom::search::Machine m;
  m.name = "cpu_host";
  m.nodes = 1;
  m.sockets_per_node = 1;
  m.devices_per_socket = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  m.device.kind = "cpu";
  m.device.peak_flops = gemm_flops();
  m.device.memory_bandwidth = memcpy_bandwidth();
  m.device.memory_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  m.device.kernel_overhead = kernel_overhead();
  m.device.dispatch_overhead = dispatch_overhead();
  m.device.overlaps_communication = false;  // a rank's core moves its messages and sums itself
  m.device.unfolding_bandwidth = unfolding_bandwidth(m.device);
  m.device.achieved_fraction = achieved_fractions(m.device);
  m.device.busy_node_slowdown = slowdown;
  m.device.drift = drift;
  // Without a second rank, a link is a copy in memory: each byte read once and written once.
  const loom::search::Link link = linked ? measured : loom::search::Link{m.device.memory_bandwidth / 2, 0};
  m.intra_socket = m.inter_socket = m.inter_node = link;
  nlohmann::json doc = loom::search::machine_to_json(m);
  doc["description"] =
      "This host (" + std::to_string(m.devices_per_socket) +
      " cores), one CPU core per rank as a device: single-threaded Eigen float GEMM, memcpy bandwidth (bytes read plus written), the "
      "runtime's per-kernel overhead and its per-task dispatch outside kernels, the rate its convolutions unfold windows at, the fraction "
      "of that "
      "roofline tasks of each kernel shape "
      "achieve (measured alone, median of a few tasks each) and how much slower they run while the other rank runs them too, how far two "
      "ranks' times for the same "
      "work drift apart between meetings, and for every "
      "link ping-pong and sums between two "
      "ranks through the MPI transport, waited in or started beside other work (median times, fitted over 4 B to 4 MiB, started "
      "sums from 64 KiB), with the messages' and the waited sums' times at each size, a sum's halved as the two steps of a ring. "
      "Measured by loom_calibrate_host (mpirun -np 2).";
  std::cout << doc.dump(2) << "\n";
  return 0;
}
