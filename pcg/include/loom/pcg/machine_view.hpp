#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace loom::pcg {

// Where an operator's tasks run: devices[t] is the device id of task t.
struct MachineView {
  std::vector<int> devices;

  // Tasks first_device, first_device + 1, ... one per task.
  static MachineView contiguous(int first_device, std::int64_t tasks);

  std::size_t tasks() const { return devices.size(); }

  // e.g. "0-3" or "0,2,4-5".
  std::string to_string() const;

  bool operator==(const MachineView&) const = default;
};

void to_json(nlohmann::json& j, const MachineView& v);
void from_json(const nlohmann::json& j, MachineView& v);

}  // namespace loom::pcg

template <>
struct std::hash<loom::pcg::MachineView> {
  std::size_t operator()(const loom::pcg::MachineView& view) const noexcept;
};
