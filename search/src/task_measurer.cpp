#include "loom/search/task_measurer.hpp"

#include <algorithm>
#include <chrono>

namespace loom::search {

template <class Measure>
const ProfileEntry* MeasuringProfiles::find_or(const ProfileKey& key, std::optional<double> roofline, Measure&& measure) {
  if (const ProfileEntry* entry = database_.find(key)) return entry;
  if (key.device != measurer_.device_kind()) return nullptr;
  const std::string text = key.to_string();
  auto refused = std::lower_bound(refused_.begin(), refused_.end(), text);
  if (refused != refused_.end() && *refused == text) return nullptr;
  const auto start = std::chrono::steady_clock::now();
  const std::optional<MeasuredTask> task = measure();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!task || task->samples < 1 || !(task->forward_seconds > 0)) {
    refused_.insert(refused, text);
    return nullptr;
  }
  database_.record(key, task->forward_seconds, roofline, task->samples, /*alone=*/true);
  if (task->backward_seconds && *task->backward_seconds > 0) database_.record_backward(key, *task->backward_seconds, task->samples);
  ++measured_;
  if (on_measured) on_measured(measured_);
  return database_.find(key);
}

const ProfileEntry* MeasuringProfiles::find_or_measure(const ProfileKey& key, double roofline) {
  return find_or(key, roofline, [&] { return measurer_.measure(key); });
}

const ProfileEntry* MeasuringProfiles::find_or_measure_update(const std::string& optimizer, const std::vector<std::int64_t>& box,
                                                              const std::vector<std::int64_t>& whole, const std::string& device,
                                                              double roofline) {
  return find_or(weight_update_key(optimizer, box, whole, device), roofline,
                 [&] { return measurer_.measure_update(optimizer, box, whole); });
}

const ProfileEntry* MeasuringProfiles::find_or_measure_accumulation(const std::vector<std::int64_t>& whole, const std::string& device,
                                                                    double roofline) {
  return find_or(gradient_accumulation_key(whole, device), roofline, [&] { return measurer_.measure_accumulation(whole); });
}

const ProfileEntry* MeasuringProfiles::find_or_measure_loss(const LossTask& loss, const std::string& device, double roofline) {
  return find_or(loss.key(device), roofline, [&] { return measurer_.measure_loss(loss); });
}

const ProfileEntry* MeasuringProfiles::find_or_measure_layout_change(const LayoutChangeTask& change, const std::string& device) {
  const ProfileKey key = change.key(device);
  if (change.ends_chain) return database_.find(key);
  return find_or(key, std::nullopt, [&] { return measurer_.measure_layout_change(change); });
}

}  // namespace loom::search
