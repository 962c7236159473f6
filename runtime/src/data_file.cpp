#include <cstring>
#include <fstream>
#include <sstream>

#include "loom/interpreter/program.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/runtime/data.hpp"

namespace loom::runtime {
namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'D', 'A', 'T', 'A'};

class Reader {
 public:
  Reader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw LoomError(path + ": cannot open the data file");
  }
  template <class V>
  V read(const char* what) {
    V v{};
    bytes(&v, sizeof v, what);
    return v;
  }
  void bytes(void* out, std::size_t n, const char* what) {
    if (!in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n)))
      throw LoomError(path_ + ": the file ends inside " + what + " (offset " + std::to_string(offset_) + ")");
    offset_ += n;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ifstream in_;
  std::size_t offset_ = 0;
};

// The file's tensors, by name.
NamedTensors<double> read_tensors(const std::string& path) {
  Reader r(path);
  char magic[8];
  r.bytes(magic, 8, "the header");
  if (std::memcmp(magic, kMagic, 8) != 0) throw LoomError(path + ": not a Loom data file (it does not start with LOOMDATA)");
  if (const auto version = r.read<std::uint32_t>("the header"); version != 1)
    throw LoomError(path + ": data format version " + std::to_string(version) + " is not supported (expected 1)");
  const auto count = r.read<std::uint32_t>("the header");
  NamedTensors<double> tensors;
  for (std::uint32_t t = 0; t < count; ++t) {
    std::string name(r.read<std::uint32_t>("a tensor name"), '\0');
    r.bytes(name.data(), name.size(), "a tensor name");
    const auto rank = r.read<std::uint32_t>("a tensor header");
    if (rank == 0 || rank > 16) throw LoomError(path + ": tensor '" + name + "' has rank " + std::to_string(rank) + " (expected 1 to 16)");
    std::vector<std::int64_t> dims(rank);
    r.bytes(dims.data(), rank * sizeof(std::int64_t), "a tensor header");
    for (auto d : dims)
      if (d <= 0 || d > (std::int64_t{1} << 40)) throw LoomError(path + ": tensor '" + name + "' has a dimension of " + std::to_string(d));
    Tensor<double> value(dims);
    r.bytes(value.data.data(), value.size() * sizeof(double), ("the values of '" + name + "'").c_str());
    tensors.emplace(std::move(name), std::move(value));
  }
  return tensors;
}

// Rows [first, first + rows) of a tensor whose first dimension counts samples.
Tensor<double> rows_of(const Tensor<double>& t, std::int64_t first, std::int64_t rows) {
  std::vector<std::int64_t> dims = t.dims;
  dims[0] = rows;
  Tensor<double> out(dims);
  const std::size_t row = t.size() / static_cast<std::size_t>(t.dims[0]);
  std::copy_n(t.data.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(first) * row), out.size(), out.data.begin());
  return out;
}

class FileData final : public DataSource {
 public:
  FileData(const std::string& path, const pcg::Graph& graph, LossKind loss) {
    const NamedTensors<double> tensors = read_tensors(path);
    std::int64_t samples = 0, batch_rows = 0;
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> wanted;
    for (const pcg::Node& n : graph.nodes())
      if (n.op == pcg::kInputOp) wanted.emplace_back(n.name, n.output_shapes.front().dims);
    wanted.emplace_back("target", target_dims(graph, loss));
    for (const auto& [name, dims] : wanted) {
      auto it = tensors.find(name);
      if (it == tensors.end()) throw LoomError(path + ": no tensor '" + name + "' (the graph's inputs and \"target\" are needed)");
      const auto& have = it->second.dims;
      std::vector<std::int64_t> per_sample(dims.begin() + (dims.empty() ? 0 : 1), dims.end());
      if (std::vector<std::int64_t>(have.begin() + 1, have.end()) != per_sample || dims.empty())
        throw LoomError(path + ": tensor '" + name + "' has shape " + spec::dims_to_string(have) + "; a batch needs " +
                        spec::dims_to_string(dims) + " (samples first)");
      if (samples == 0) samples = have[0];
      if (have[0] != samples)
        throw LoomError(path + ": tensor '" + name + "' has " + std::to_string(have[0]) + " samples, others " + std::to_string(samples));
      batch_rows = dims[0];
    }
    if (samples < batch_rows)
      throw LoomError(path + ": " + std::to_string(samples) + " samples, fewer than one batch of " + std::to_string(batch_rows));
    // Cut into its batches once, so that a step reads its batch where it lies.
    for (std::int64_t first = 0; first + batch_rows <= samples; first += batch_rows) {
      Batch b;
      for (const auto& [name, dims] : wanted) {
        Tensor<double> part = rows_of(tensors.at(name), first, batch_rows);
        if (name == "target")
          b.target = std::move(part);
        else
          b.inputs.emplace(name, std::move(part));
      }
      batches_.push_back(std::move(b));
    }
  }

  const Batch& batch(std::int64_t step) const override { return batches_[static_cast<std::size_t>(step) % batches_.size()]; }

 private:
  std::vector<Batch> batches_;
};

template <class V>
void append(std::string& out, const V& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

std::unique_ptr<DataSource> load_data_file(const std::string& path, const pcg::Graph& graph, LossKind loss) {
  return std::make_unique<FileData>(path, graph, loss);
}

void save_data_file(const std::string& path, const NamedTensors<double>& tensors) {
  std::string out(kMagic, 8);
  append(out, std::uint32_t{1});
  append(out, static_cast<std::uint32_t>(tensors.size()));
  for (const auto& [name, t] : tensors) {
    append(out, static_cast<std::uint32_t>(name.size()));
    out += name;
    append(out, static_cast<std::uint32_t>(t.rank()));
    for (auto d : t.dims) append(out, d);
    out.append(reinterpret_cast<const char*>(t.data.data()), t.size() * sizeof(double));
  }
  pcg::write_file_atomically(path, out);
}

}  // namespace loom::runtime
