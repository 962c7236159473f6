#include "loom/pcg/machine_view.hpp"

#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/hash_mix.hpp"

namespace loom::pcg {

MachineView MachineView::contiguous(int first_device, std::int64_t tasks) {
  if (first_device < 0) {
    throw LoomError("a machine view cannot start at negative device " + std::to_string(first_device));
  }
  if (tasks < 0 || tasks - 1 > std::numeric_limits<int>::max() - first_device) {
    throw LoomError("a contiguous machine view of " + std::to_string(tasks) + " tasks from device " + std::to_string(first_device) +
                    " does not fit the device id range");
  }
  MachineView view;
  view.devices.reserve(static_cast<std::size_t>(tasks));
  for (std::int64_t t = 0; t < tasks; ++t) view.devices.push_back(first_device + static_cast<int>(t));
  return view;
}

std::string MachineView::to_string() const {
  std::string out;
  std::size_t i = 0;
  while (i < devices.size()) {
    std::size_t end = i;
    while (end + 1 < devices.size() && devices[end + 1] == devices[end] + 1) ++end;
    if (!out.empty()) out += ',';
    out += std::to_string(devices[i]);
    if (end > i) out += "-" + std::to_string(devices[end]);
    i = end + 1;
  }
  return out;
}

void to_json(nlohmann::json& j, const MachineView& v) { j = nlohmann::json{{"devices", v.devices}}; }

void from_json(const nlohmann::json& j, MachineView& v) {
  if (!j.is_object() || !j.contains("devices") || j.size() != 1) {
    throw LoomError("a machine view must be an object {\"devices\": [...]}, got " + j.dump());
  }
  const nlohmann::json& devices = j.at("devices");
  if (!devices.is_array()) {
    throw LoomError("'devices' must be an array of device ids, got " + devices.dump());
  }
  MachineView out;
  out.devices.reserve(devices.size());
  for (std::size_t t = 0; t < devices.size(); ++t) {
    const nlohmann::json& d = devices[t];
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > std::numeric_limits<int>::max()) {
      throw LoomError("'devices[" + std::to_string(t) + "]' must be a non-negative device id, got " + d.dump());
    }
    out.devices.push_back(d.get<int>());
  }
  v = std::move(out);
}

}  // namespace loom::pcg

std::size_t std::hash<loom::pcg::MachineView>::operator()(const loom::pcg::MachineView& view) const noexcept {
  std::uint64_t h = loom::pcg::hash_mix(0, view.devices.size());
  for (int d : view.devices) h = loom::pcg::hash_mix(h, static_cast<std::uint64_t>(d));
  return static_cast<std::size_t>(h);
}
