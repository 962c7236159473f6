#pragma once
// Measured operator times, keyed by operator, attributes, per-task input shapes and device kind.
// The runtime fills it; the cost model prefers a measured figure to its roofline estimate.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::search {

struct ProfileKey {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<pcg::ParallelShape> inputs;
  std::string device;

  // e.g. `matmul{} [64/2, 512] [512, 10]{R2} on V100`: the stable text the database is keyed by.
  std::string to_string() const;
};

class ProfileDatabase {
 public:
  // File form: {"format": "loom-profile", "version": 1, "entries": [{"key", "op", "device",
  // "seconds"}, ...]}. A missing file is an empty database; a malformed one throws LoomError naming
  // the file and the JSON path.
  static ProfileDatabase load(const std::string& path);
  // Writes to a temporary file first, so an interrupted write loses nothing already there.
  void save(const std::string& path) const;

  std::optional<double> seconds(const ProfileKey& key) const;
  void record(const ProfileKey& key, double seconds);
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string op, device;
    double seconds = 0;
  };
  std::map<std::string, Entry> entries_;
};

}  // namespace loom::search
