// NumPy files: written by Loom and read back; files written here byte by byte as NumPy lays them
// out (float32, int64, Fortran order) read as the values they hold; broken files are refused,
// naming the file.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../interpreter/test_support.hpp"
#include "../pcg/error_text.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/npy_file.hpp"

namespace loom::runtime {
namespace {

std::string temp_path(const std::string& name) {
  static const spec::test::TempDir dir;
  return (dir.path() / name).string();
}

// A version 1.0 .npy file: magic, version, header length, the header padded to 64 bytes, the data.
template <class E>
std::string npy_bytes(const std::string& descr, const std::string& shape, bool fortran, const std::vector<E>& values) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  std::string data(values.size() * sizeof(E), '\0');
  std::memcpy(data.data(), values.data(), data.size());
  return bytes + data;
}

std::string written(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string error_reading(const std::string& path) {
  return pcg::test_support::error_of([&] { read_npy(path); });
}

TEST(NpyFile, WhatLoomWritesReadsBackInBothPrecisions) {
  Tensor<double> d({2, 3});
  for (std::size_t i = 0; i < d.data.size(); ++i) d.data[i] = 0.1 * static_cast<double>(i) - 0.25;
  const std::string path = temp_path("double.npy");
  write_npy<double>(path, d);
  const Tensor<double> back = read_npy(path);
  EXPECT_EQ(back.dims, d.dims);
  EXPECT_EQ(back.data, d.data);
  Tensor<float> f({4});
  f.data = {1.5f, -2.25f, 3e-7f, 1e6f};
  write_npy<float>(path, f);
  const Tensor<double> fb = read_npy(path);
  EXPECT_EQ(fb.dims, f.dims);
  for (std::size_t i = 0; i < f.data.size(); ++i) EXPECT_EQ(fb.data[i], static_cast<double>(f.data[i]));
  std::filesystem::remove(path);
}

TEST(NpyFile, NumPysLayoutsReadAsTheValuesTheyHold) {
  const std::string f32 = written("f32.npy", npy_bytes<float>("<f4", "(2, 2)", false, {1, 2, 3, 4}));
  EXPECT_EQ(read_npy(f32).data, (std::vector<double>{1, 2, 3, 4}));
  const std::string i64 = written("i64.npy", npy_bytes<std::int64_t>("<i8", "(3,)", false, {7, -1, 40}));
  const Tensor<double> ids = read_npy(i64);
  EXPECT_EQ(ids.dims, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(ids.data, (std::vector<double>{7, -1, 40}));
  // Fortran order stores columns first: [[1, 2, 3], [4, 5, 6]] as 1 4 2 5 3 6.
  const std::string fortran = written("fortran.npy", npy_bytes<double>("<f8", "(2, 3)", true, {1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(read_npy(fortran).data, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  const std::string scalar = written("scalar.npy", npy_bytes<double>("<f8", "()", false, {2.5}));
  EXPECT_TRUE(read_npy(scalar).dims.empty());
  EXPECT_EQ(read_npy(scalar).data, (std::vector<double>{2.5}));
  for (const auto& p : {f32, i64, fortran, scalar}) std::filesystem::remove(p);
}

TEST(NpyFile, BrokenFilesAreRefusedNamingTheFile) {
  const std::string whole = npy_bytes<float>("<f4", "(2, 2)", false, {1, 2, 3, 4});
  const std::string truncated = written("truncated.npy", whole.substr(0, whole.size() - 2 * sizeof(float)));
  EXPECT_NE(error_reading(truncated).find(truncated + ": not a readable .npy file (the file ends before its 4 elements)"),
            std::string::npos)
      << error_reading(truncated);
  const std::string complex = written("complex.npy", npy_bytes<double>("<c16", "(1,)", false, {1, 2}));
  EXPECT_NE(error_reading(complex).find(complex + ": the array's elements are of type '<c16'"), std::string::npos)
      << error_reading(complex);
  const std::string text = written("text.npy", "x,y\n1,2\n");
  EXPECT_NE(error_reading(text).find(text + ": not a readable .npy file"), std::string::npos) << error_reading(text);
  EXPECT_NE(error_reading(temp_path("missing.npy")).find("cannot open the file"), std::string::npos);
  for (const auto& p : {truncated, complex, text}) std::filesystem::remove(p);
}

TEST(NpyFile, AWriteWhereNoFileCanBeMadeIsAnError) {
  const std::string dir = temp_path("dir");
  std::filesystem::create_directories(dir);
  Tensor<double> t({1});
  EXPECT_THROW(write_npy<double>(dir + "/missing/y.npy", t), LoomError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom::runtime
