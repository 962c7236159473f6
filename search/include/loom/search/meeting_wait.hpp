#pragma once
// What devices that work apart wait for each other where they meet. Each device's arrival at a
// meeting varies about the mean the simulator schedules it at, by a spread in proportion to the
// work it did since it last met another (DeviceSpec::drift); the meeting lasts until the latest
// arrival, whose expected time is Clark's maximum of normal variables, taken two at a time.
#include <vector>

namespace loom::search {

// When a device reaches a meeting: a normal variable (seconds, seconds squared).
struct Arrival {
  double mean = 0;
  double variance = 0;
};

// The mean and variance of the later of two independent arrivals (Clark's moments).
Arrival later_of(const Arrival& a, const Arrival& b);

// How long past the latest mean arrival the latest arrival is expected: for two arrivals exactly,
// at most sqrt((a.variance + b.variance) / 2 pi), when their means meet; for more, Clark's
// approximation taking them two at a time. Nothing when no arrival varies.
double expected_meeting_wait(const std::vector<Arrival>& arrivals);

// The drift that makes two devices, each working `work` seconds between meetings at the same mean
// pace, wait `wait` seconds a meeting past their mean: the inverse of expected_meeting_wait for
// two arrivals of the same mean, each of variance (drift * work)^2.
double drift_from_meeting_wait(double wait, double work);

}  // namespace loom::search
