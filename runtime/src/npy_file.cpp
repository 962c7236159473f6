#include "loom/runtime/npy_file.hpp"

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"

namespace loom::runtime {
namespace {

// Where the array's data starts in a .npy file: after the magic string, the version, the header's
// length (2 bytes in version 1, 4 after) and the header.
std::size_t data_offset(const std::string& bytes) {
  if (bytes.size() < 12) throw std::runtime_error("shorter than a .npy header");
  const auto byte = [&](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(bytes[i])); };
  if (byte(6) == 1) return 10 + byte(8) + (byte(9) << 8);
  return 12 + byte(8) + (byte(9) << 8) + (byte(10) << 16) + (byte(11) << 24);
}

// The array as doubles when the file's elements are of type E; none when they are of another type.
template <class E>
std::optional<Tensor<double>> read_as(const std::string& bytes) {
  std::istringstream in(bytes);
  xt::xarray<E, xt::layout_type::row_major> array;
  try {
    array = xt::load_npy<E>(in);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("formats not matching") != std::string::npos) return std::nullopt;
    throw;
  }
  const std::size_t offset = data_offset(bytes);
  if (offset > bytes.size() || (bytes.size() - offset) / sizeof(E) < array.size())
    throw std::runtime_error("the file ends before its " + std::to_string(array.size()) + " elements");
  Tensor<double> out;
  for (std::size_t d : array.shape()) out.dims.push_back(static_cast<std::int64_t>(d));
  out.data.assign(array.begin(), array.end());
  return out;
}

}  // namespace

Tensor<double> read_npy(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw LoomError(path + ": cannot open the file");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  try {
    if (auto t = read_as<float>(bytes.str())) return *t;
    if (auto t = read_as<double>(bytes.str())) return *t;
    if (auto t = read_as<std::int64_t>(bytes.str())) return *t;
    if (auto t = read_as<std::int32_t>(bytes.str())) return *t;
  } catch (const std::exception& e) {
    throw LoomError(path + ": not a readable .npy file (" + e.what() + ")");
  }
  throw LoomError(path + ": the array's elements are not float32, float64, int32 or int64");
}

template <class T>
void write_npy(const std::string& path, const Tensor<T>& t) {
  std::vector<std::size_t> shape;
  for (std::int64_t d : t.dims) shape.push_back(static_cast<std::size_t>(d));
  pcg::write_file_atomically(path, xt::dump_npy(xt::adapt(t.data, shape)));
}

template void write_npy<float>(const std::string&, const Tensor<float>&);
template void write_npy<double>(const std::string&, const Tensor<double>&);

}  // namespace loom::runtime
