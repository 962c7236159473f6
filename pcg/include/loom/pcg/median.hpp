#pragma once
// The median of figures measured several times: what the benchmarks, calibrations and measured
// task times report, so that one slow run on a shared host moves nothing.
#include <algorithm>
#include <vector>

namespace loom::pcg {

// The median of `values`; 0 when there are none.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace loom::pcg
