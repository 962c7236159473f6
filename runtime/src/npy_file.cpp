#include "loom/runtime/npy_file.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
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

// The header's element type, e.g. "<f4".
std::string element_type(const std::string& bytes) {
  if (bytes.rfind("\x93NUMPY", 0) != 0) throw std::runtime_error("it does not start as a .npy file does");
  const std::string header = bytes.substr(0, std::min(data_offset(bytes), bytes.size()));
  const auto key = header.find("'descr'");
  const auto open = key == std::string::npos ? key : header.find('\'', header.find(':', key));
  const auto close = open == std::string::npos ? open : header.find('\'', open + 1);
  if (close == std::string::npos) throw std::runtime_error("its header names no element type");
  return header.substr(open + 1, close - open - 1);
}

// The array of elements of type E as doubles in row-major order.
template <class E>
Tensor<double> read_as(const std::string& bytes) {
  std::istringstream in(bytes);
  const xt::xarray<E, xt::layout_type::row_major> array = xt::load_npy<E>(in);
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
  std::string type;
  try {
    type = element_type(bytes.str());
    if (type == "<f4") return read_as<float>(bytes.str());
    if (type == "<f8") return read_as<double>(bytes.str());
    if (type == "<i8") return read_as<std::int64_t>(bytes.str());
    if (type == "<i4") return read_as<std::int32_t>(bytes.str());
  } catch (const std::exception& e) {
    throw LoomError(path + ": not a readable .npy file (" + e.what() + ")");
  }
  throw LoomError(path + ": the array's elements are of type '" + type +
                  "'; little-endian float32, float64, int32 and int64 ('<f4', '<f8', '<i4', '<i8') are read");
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
