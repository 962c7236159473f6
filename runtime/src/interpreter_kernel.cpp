#include "loom/runtime/interpreter_kernel.hpp"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/gradient.hpp"
#include "loom/interpreter/native_program.hpp"
#include "loom/interpreter/piece_program.hpp"

namespace loom::runtime {
namespace {

template <class T>
std::vector<Tensor<double>> to_double(const std::vector<const Tensor<T>*>& tensors) {
  std::vector<Tensor<double>> out;
  for (const Tensor<T>* t : tensors) out.push_back(convert<double>(*t));
  return out;
}

template <class T>
std::vector<Tensor<T>> from_double(std::vector<Tensor<double>> tensors) {
  std::vector<Tensor<T>> out;
  for (auto& t : tensors) out.push_back(convert<T>(t));
  return out;
}

// Tells on stderr, once per operator and process, why it runs through the interpreter.
void say_once_interpreted(const std::string& op, const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> told;
  const std::lock_guard<std::mutex> lock(mutex);
  if (told.insert(op).second) std::cerr << "loom: " << op << " runs through the interpreter: " << why << "\n";
}

bool at_origin(const pcg::Region& r) {
  return std::all_of(r.lo.begin(), r.lo.end(), [](std::int64_t v) { return v == 0; });
}

// Whether some piece of the call is not its whole logical value.
template <class T>
bool split_call(const OpCall<T>& call) {
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    if (!call.regions.empty() && !at_origin(call.regions.at(i))) return true;
    if (!call.logical_dims.empty() && call.logical_dims.at(i) != call.input(i).dims) return true;
  }
  return !std::all_of(call.output_regions.begin(), call.output_regions.end(), at_origin);
}

// The program to run a call with: for an op whose body reads sizes or positions, on split pieces,
// the logical program restricted to the call's regions (placed once per distinct placement: a
// task meets the same one every step); else the program of the pieces' shapes.
class Programs {
 public:
  Programs(const spec::Library& library, std::string op, pcg::AttrMap attrs)
      : library_(&library), op_(std::move(op)), attrs_(std::move(attrs)) {}

  std::shared_ptr<const spec::Program> pieces;   // null when the pieces' shapes do not compile
  std::shared_ptr<const spec::Program> logical;  // null: compiled from each split call's logical dims
  bool positional = false;                       // the body reads sizes or positions
  bool compile = false;                          // build programs to machine code where the toolchain can

  // `program` as machine code in T, built once; null where it cannot be built (said on stderr once
  // per operator and process), and then the interpreter runs it.
  template <class T>
  std::shared_ptr<const spec::NativeProgram> native(const std::shared_ptr<const spec::Program>& program) const {
    if (!compile) return nullptr;
    const std::lock_guard<std::mutex> lock(mutex_);
    auto [it, fresh] = native_.try_emplace(program.get());
    if (!fresh) return it->second;
    spec::NativeBuild built = spec::build_native(*program, spec::native_type_of<T>());
    if (!built.program) say_once_interpreted(op_, built.why_not);
    it->second = built.program;
    return it->second;
  }

  template <class T>
  std::shared_ptr<const spec::Program> for_call(const OpCall<T>& call) const {
    if (!positional || !split_call(call)) {
      if (!pieces) throw LoomError(op_ + ": a call on split pieces carries no regions");
      return pieces;
    }
    std::vector<std::int64_t> key;
    const auto append = [&key](const std::vector<std::int64_t>& v) {
      key.push_back(static_cast<std::int64_t>(v.size()));
      key.insert(key.end(), v.begin(), v.end());
    };
    for (const pcg::Region& r : call.regions) append(r.lo), append(r.hi);
    for (const pcg::Region& r : call.output_regions) append(r.lo), append(r.hi);
    if (!logical)
      for (const auto& dims : call.logical_dims) append(dims);
    const std::lock_guard<std::mutex> lock(mutex_);
    auto& placed = placed_[key];
    if (!placed) {
      const spec::PiecePlacement where{call.regions, call.output_regions};
      placed = std::make_shared<const spec::Program>(
          spec::place_piece(logical ? *logical : library_->instantiate(op_, attrs_, call.logical_dims), where));
    }
    return placed;
  }

 private:
  const spec::Library* library_;
  std::string op_;
  pcg::AttrMap attrs_;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<std::int64_t>, std::shared_ptr<const spec::Program>> placed_;
  mutable std::map<const spec::Program*, std::shared_ptr<const spec::NativeProgram>> native_;
};

}  // namespace

template <class T>
Kernel<T> interpreter_kernel(const spec::Library& library, const std::string& op, const pcg::AttrMap& attrs,
                             const std::vector<std::vector<std::int64_t>>& input_dims,
                             const std::vector<std::vector<std::int64_t>>& logical_input_dims, bool compile) {
  auto programs = std::make_shared<Programs>(library, op, attrs);
  Programs& p = *programs;
  p.compile = compile && !spec::NativeToolchain::from_environment().compiler.empty();
  if (!logical_input_dims.empty() && logical_input_dims != input_dims) {
    p.logical = std::make_shared<const spec::Program>(library.instantiate(op, attrs, logical_input_dims));
    p.positional = spec::reads_sizes_or_positions(*p.logical);
  }
  // Pieces of a positional op need not satisfy its shape equations (rows of square scores): its
  // calls on them run the placed logical program instead.
  if (!p.positional) {
    p.pieces = std::make_shared<const spec::Program>(library.instantiate(op, attrs, input_dims));
    p.positional = spec::reads_sizes_or_positions(*p.pieces);
  }
  Kernel<T> k;
  // A program built here tells whether this op's kernels build at all (for an op that reads
  // positions, the logical program stands for the placed ones its calls build).
  const auto probe = p.pieces ? p.pieces : p.logical;
  k.route = p.compile && probe && p.native<T>(probe) ? KernelRoute::Compiled : KernelRoute::Interpreted;
  k.forward = [programs](const OpCall<T>& call) {
    const auto program = programs->for_call(call);
    if (const auto native = programs->native<T>(program)) return native->evaluate(call.inputs);
    const auto inputs = to_double(call.inputs);
    return from_double<T>(spec::evaluate<spec::RealDomain>(*program, pointers(inputs)));
  };
  k.backward = [programs](const GradCall<T>& g) {
    const auto program = programs->for_call(g.call);
    if (const auto native = programs->native<T>(program)) return native->gradient(g.call.inputs, g.output_grads, g.outputs);
    const auto inputs = to_double(g.call.inputs);
    const auto grads = to_double(g.output_grads);
    return from_double<T>(spec::evaluate_gradient(*program, pointers(inputs), pointers(grads)));
  };
  return k;
}

template Kernel<float> interpreter_kernel<float>(const spec::Library&, const std::string&, const pcg::AttrMap&,
                                                 const std::vector<std::vector<std::int64_t>>&,
                                                 const std::vector<std::vector<std::int64_t>>&, bool);
template Kernel<double> interpreter_kernel<double>(const spec::Library&, const std::string&, const pcg::AttrMap&,
                                                   const std::vector<std::vector<std::int64_t>>&,
                                                   const std::vector<std::vector<std::int64_t>>&, bool);

}  // namespace loom::runtime
