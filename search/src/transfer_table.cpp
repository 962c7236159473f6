#include "loom/search/transfer_table.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "loom/pcg/diagnostic.hpp"

namespace loom::search {

TransferTable::TransferTable(std::vector<MeasuredTransfer> points) : points_(std::move(points)) {
  for (std::size_t i = 0; i < points_.size(); ++i) {
    const MeasuredTransfer& p = points_[i];
    if (!(p.bytes > 0) || !std::isfinite(p.bytes))
      throw LoomError("measured transfer " + std::to_string(i) + ": expected a size above 0 bytes, got " + std::to_string(p.bytes));
    if (!(p.seconds >= 0) || !std::isfinite(p.seconds))
      throw LoomError("measured transfer " + std::to_string(i) + ": expected a time of at least 0, got " + std::to_string(p.seconds));
    if (i > 0 && !(p.bytes > points_[i - 1].bytes))
      throw LoomError("measured transfer " + std::to_string(i) + ": sizes must increase, got " + std::to_string(p.bytes) + " bytes after " +
                      std::to_string(points_[i - 1].bytes));
  }
}

double TransferTable::seconds(double bytes, double bandwidth, double latency) const {
  if (points_.empty()) return latency + bytes / bandwidth;
  const MeasuredTransfer& first = points_.front();
  const MeasuredTransfer& last = points_.back();
  if (bytes < first.bytes) return std::min(first.seconds, latency + bytes / bandwidth);
  if (bytes >= last.bytes) {
    double per_byte = 1 / bandwidth;
    if (points_.size() >= 2) {
      const MeasuredTransfer& before = points_[points_.size() - 2];
      const double slope = (last.seconds - before.seconds) / (last.bytes - before.bytes);
      if (slope > 0) per_byte = slope;  // not where the two largest times came out level or falling
    }
    return last.seconds + (bytes - last.bytes) * per_byte;
  }
  const auto above =
      std::upper_bound(points_.begin(), points_.end(), bytes, [](double b, const MeasuredTransfer& p) { return b < p.bytes; });
  const MeasuredTransfer& hi = *above;
  const MeasuredTransfer& lo = *(above - 1);
  return lo.seconds + (hi.seconds - lo.seconds) * (bytes - lo.bytes) / (hi.bytes - lo.bytes);
}

}  // namespace loom::search
