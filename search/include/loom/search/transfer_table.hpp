#pragma once
// Seconds a transfer took on a link at the sizes it was measured at. A transport may change its
// protocol with the size (an MPI library sends small messages at once and larger ones only after a
// handshake, a few KiB apart), so no one latency and bandwidth fits every size; between measured
// sizes the time is taken as linear in the bytes.
#include <vector>

namespace loom::search {

struct MeasuredTransfer {
  double bytes = 0;
  double seconds = 0;
};

class TransferTable {
 public:
  TransferTable() = default;
  // Sizes in increasing order, each above 0, times not negative (LoomError otherwise).
  explicit TransferTable(std::vector<MeasuredTransfer> points);

  bool empty() const { return points_.empty(); }
  const std::vector<MeasuredTransfer>& points() const { return points_; }

  // Seconds for `bytes`: between two measured sizes, on the line through them; below the
  // smallest, `latency + bytes / bandwidth` but never more than the smallest took; above the
  // largest, on the line through the two largest (at `bandwidth` past a lone size, or where their
  // times do not rise). With no sizes measured, `latency + bytes / bandwidth`.
  double seconds(double bytes, double bandwidth, double latency) const;

 private:
  std::vector<MeasuredTransfer> points_;
};

}  // namespace loom::search
