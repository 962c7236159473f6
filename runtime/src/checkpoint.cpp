#include "loom/runtime/checkpoint.hpp"

#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"

namespace loom::runtime {
namespace {

using nlohmann::json;

template <class T>
constexpr const char* dtype_name() {
  return std::is_same_v<T, float> ? "float" : "double";
}

template <class T>
json tensors_to_json(const NamedTensors<T>& tensors) {
  json out = json::object();
  for (const auto& [name, t] : tensors) {
    std::vector<std::uint8_t> bytes(t.size() * sizeof(T));
    std::memcpy(bytes.data(), t.data.data(), bytes.size());
    out[name] = {{"dims", t.dims}, {"data", json::binary(std::move(bytes))}};
  }
  return out;
}

template <class T>
NamedTensors<T> tensors_from_json(const json& j, const std::string& where) {
  NamedTensors<T> out;
  for (const auto& [name, entry] : j.items()) {
    Tensor<T> t(entry.at("dims").template get<std::vector<std::int64_t>>());
    const auto& bytes = entry.at("data").get_binary();
    if (bytes.size() != t.size() * sizeof(T)) throw LoomError(where + ": tensor '" + name + "' holds the wrong number of bytes");
    std::memcpy(t.data.data(), bytes.data(), bytes.size());
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace

template <class T>
void save_checkpoint(const std::string& path, const Checkpoint<T>& c) {
  const json j = {{"format", "loom-checkpoint"},
                  {"version", 1},
                  {"dtype", dtype_name<T>()},
                  {"run", c.run},
                  {"step", c.step},
                  {"losses", c.losses},
                  {"weights", tensors_to_json(c.weights)},
                  {"optimizer",
                   {{"steps", c.optimizer.steps},
                    {"first_moment", tensors_to_json(c.optimizer.first_moment)},
                    {"second_moment", tensors_to_json(c.optimizer.second_moment)}}}};
  const std::vector<std::uint8_t> bytes = json::to_cbor(j);
  pcg::write_file_atomically(path, std::string(bytes.begin(), bytes.end()));
}

namespace {

// The checkpoint's CBOR document, checked to be a Loom checkpoint of a version this reads.
json checkpoint_document(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LoomError(path + ": cannot open the checkpoint");
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    json j = json::from_cbor(bytes);
    if (j.value("format", "") != "loom-checkpoint") throw LoomError(path + ": not a Loom checkpoint");
    if (j.at("version") != 1) throw LoomError(path + ": checkpoint version " + j.at("version").dump() + " is not supported");
    return j;
  } catch (const json::exception& e) {
    throw LoomError(path + ": not a readable checkpoint: " + e.what());
  }
}

template <class T>
Checkpoint<T> checkpoint_from(const json& j, const std::string& path) {
  try {
    if (j.at("dtype") != dtype_name<T>())
      throw LoomError(path + ": the checkpoint holds " + j.at("dtype").get<std::string>() + " values; this run uses " + dtype_name<T>());
    Checkpoint<T> c;
    c.run = j.at("run").get<std::string>();
    c.step = j.at("step").get<std::int64_t>();
    c.losses = j.at("losses").get<std::vector<double>>();
    c.weights = tensors_from_json<T>(j.at("weights"), path);
    c.optimizer.steps = j.at("optimizer").at("steps").get<std::int64_t>();
    c.optimizer.first_moment = tensors_from_json<T>(j.at("optimizer").at("first_moment"), path);
    c.optimizer.second_moment = tensors_from_json<T>(j.at("optimizer").at("second_moment"), path);
    return c;
  } catch (const json::exception& e) {
    throw LoomError(path + ": not a readable checkpoint: " + e.what());
  }
}

}  // namespace

template <class T>
Checkpoint<T> load_checkpoint(const std::string& path) {
  return checkpoint_from<T>(checkpoint_document(path), path);
}

NamedTensors<double> checkpoint_weights(const std::string& path) {
  const json j = checkpoint_document(path);
  if (j.value("dtype", "") == dtype_name<float>()) return convert<double>(checkpoint_from<float>(j, path).weights);
  return checkpoint_from<double>(j, path).weights;
}

template void save_checkpoint<float>(const std::string&, const Checkpoint<float>&);
template void save_checkpoint<double>(const std::string&, const Checkpoint<double>&);
template Checkpoint<float> load_checkpoint<float>(const std::string&);
template Checkpoint<double> load_checkpoint<double>(const std::string&);

}  // namespace loom::runtime
