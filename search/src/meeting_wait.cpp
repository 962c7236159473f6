#include "loom/search/meeting_wait.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace loom::search {

Arrival later_of(const Arrival& a, const Arrival& b) {
  const double spread = std::sqrt(a.variance + b.variance);
  if (!(spread > 0)) return a.mean >= b.mean ? a : b;
  // Moments about the later mean, so that squares of times far from zero do not swamp the variances.
  const double origin = std::max(a.mean, b.mean);
  const double ma = a.mean - origin, mb = b.mean - origin;
  const double alpha = (ma - mb) / spread;
  const double density = std::exp(-0.5 * alpha * alpha) / std::sqrt(2 * std::numbers::pi);
  const double a_later = 0.5 * std::erfc(-alpha / std::numbers::sqrt2), b_later = 0.5 * std::erfc(alpha / std::numbers::sqrt2);
  const double mean = ma * a_later + mb * b_later + spread * density;
  const double second = (ma * ma + a.variance) * a_later + (mb * mb + b.variance) * b_later + (ma + mb) * spread * density;
  return {origin + mean, std::max(0.0, second - mean * mean)};
}

double expected_meeting_wait(const std::vector<Arrival>& arrivals) {
  if (arrivals.empty()) return 0;
  Arrival latest = arrivals.front();
  double latest_mean = latest.mean;
  for (std::size_t i = 1; i < arrivals.size(); ++i) {
    latest = later_of(latest, arrivals[i]);
    latest_mean = std::max(latest_mean, arrivals[i].mean);
  }
  return std::max(0.0, latest.mean - latest_mean);
}

double drift_from_meeting_wait(double wait, double work) {
  if (!(work > 0) || !(wait > 0)) return 0;
  return std::sqrt(std::numbers::pi) * wait / work;
}

}  // namespace loom::search
