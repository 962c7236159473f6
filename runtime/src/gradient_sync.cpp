#include "loom/runtime/gradient_sync.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "piece_regions.hpp"

namespace loom::runtime {

template <class T>
GradientSync<T>::GradientSync(const pcg::Graph& graph, Transport& transport, const std::map<pcg::NodeId, pcg::InputReads>& reads)
    : graph_(graph), transport_(transport) {
  std::map<std::string, const pcg::InputReads*> by_name;
  for (const auto& [id, r] : reads) by_name.emplace(graph_.node(id).name, &r);
  for (const auto& [name, r] : by_name) {
    complete_after_[r->first_reader].push_back(name);
    Shares& shares = shares_[name];
    for (const auto& [box, devices] : r->boxes) {
      std::set<int> ranks;
      for (int d : devices) ranks.insert(transport_.size() == 1 ? 0 : d);
      shares.boxes.push_back(box);
      shares.ranks.emplace_back(ranks.begin(), ranks.end());
    }
    shares.overlapping = r->overlapping();
    const pcg::Region all = pcg::whole_region(graph_.node(*graph_.find(name)).output_shapes[0].dims);
    std::vector<ElementRange>& exact = exact_[name];
    for (std::size_t b = 0; b < shares.boxes.size(); ++b) {
      if (!shares.overlapping && !std::binary_search(shares.ranks[b].begin(), shares.ranks[b].end(), transport_.rank())) continue;
      for_each_run_in_box(all, shares.overlapping ? all : shares.boxes[b], [&](std::size_t at, std::size_t, std::size_t n) {
        if (!exact.empty() && exact.back().end == at)
          exact.back().end += n;
        else
          exact.push_back({at, at + n});
      });
      if (shares.overlapping) break;
    }
  }
}

template <class T>
void GradientSync<T>::start_sums_complete_after(pcg::NodeId node, NamedValues<T>& grads) {
  if (auto it = complete_after_.find(node); it != complete_after_.end()) start_sums(it->second, grads);
}

template <class T>
void GradientSync<T>::start_sums(const std::vector<std::string>& complete, NamedValues<T>& grads) {
  if (transport_.size() == 1) return;
  struct Group {
    std::vector<typename StartedSum::Part> packed;
    std::vector<std::vector<T>*> in_place;  // whole gradients summed where they lie
  };
  // Groups are started in one order everywhere, so every process runs a group's collectives in
  // the same order.
  std::map<std::vector<int>, Group> groups;
  std::vector<int> everyone(static_cast<std::size_t>(transport_.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  for (const std::string& name : complete) {
    const Shares& shares = shares_.at(name);
    const std::vector<std::int64_t>& dims = graph_.node(*graph_.find(name)).output_shapes[0].dims;
    const pcg::Region all = pcg::whole_region(dims);
    const auto add_part = [&](const std::vector<int>& ranks, const pcg::Region& box) {
      // Summed through host memory (the transport sends host arrays), and only where summed; zeros
      // where this process computed none of it.
      Value<T>& held = grads[name];
      if (held.empty()) held = Value<T>(Tensor<T>(dims, T(0)));
      Tensor<T>& grad = held.host_mut();
      Group& group = groups[ranks];
      if (pcg::gradient_summed_in_place(box, all))
        group.in_place.push_back(&grad.data);
      else
        group.packed.push_back({&grad, box});
    };
    if (shares.overlapping) {
      add_part(everyone, all);
      continue;
    }
    for (std::size_t b = 0; b < shares.boxes.size(); ++b) {
      const std::vector<int>& ranks = shares.ranks[b];
      if (ranks.size() > 1 && std::binary_search(ranks.begin(), ranks.end(), transport_.rank())) add_part(ranks, shares.boxes[b]);
    }
  }
  for (auto& [ranks, group] : groups) {
    if (!group.packed.empty()) {
      StartedSum& sum = started_.emplace_back();
      std::int64_t elements = 0;
      for (const auto& part : group.packed) elements += part.box.elements();
      sum.buffer.reserve(static_cast<std::size_t>(elements));
      for (const auto& part : group.packed) append_box(*part.grad, pcg::whole_region(part.grad->dims), part.box, sum.buffer);
      sum.parts = std::move(group.packed);
      transport_.start_sum(sum.buffer, ranks);
    }
    for (std::vector<T>* values : group.in_place) transport_.start_sum(*values, ranks);
    in_flight_ = true;
  }
}

template <class T>
void GradientSync<T>::sum_all(NamedValues<T>& grads) {
  std::vector<std::string> every;
  for (const auto& [node, complete] : complete_after_) every.insert(every.end(), complete.begin(), complete.end());
  start_sums(every, grads);
  finish_sums();
}

template <class T>
void GradientSync<T>::finish_sums() {
  transport_.finish_sums();
  for (const StartedSum& sum : started_) {
    const T* next = sum.buffer.data();
    for (const typename StartedSum::Part& p : sum.parts) {
      write_box(*p.grad, pcg::whole_region(p.grad->dims), p.box, next);
      next += p.box.elements();
    }
  }
  started_.clear();
  in_flight_ = false;
}

template <class T>
void GradientSync<T>::assemble(NamedValues<T>& values) {
  if (transport_.size() == 1) return;
  // Each process keeps the boxes it is the first reader of (rank 0 also what nobody reads, and
  // whatever is summed whole), zeroes the rest, and one sum puts the pieces together.
  std::vector<T> all;
  std::vector<Tensor<T>*> order;
  for (auto& [name, held] : values) {
    auto it = shares_.find(name);
    if (it == shares_.end()) continue;
    Tensor<T>& value = held.host_mut();
    const Shares& shares = it->second;
    const pcg::Region whole = pcg::whole_region(value.dims);
    Tensor<T> mine(value.dims, T(0));
    if (transport_.rank() == 0) mine = value;
    if (!shares.overlapping) {
      for (std::size_t b = 0; b < shares.boxes.size(); ++b) {
        const int owner = shares.ranks[b].front();
        if (owner == transport_.rank() && owner != 0)
          write_box(mine, whole, shares.boxes[b], read_box(value, whole, shares.boxes[b]).data());
        else if (owner != transport_.rank() && transport_.rank() == 0)
          write_box(mine, whole, shares.boxes[b], std::vector<T>(static_cast<std::size_t>(shares.boxes[b].elements()), T(0)).data());
      }
    }
    all.insert(all.end(), mine.data.begin(), mine.data.end());
    order.push_back(&value);
  }
  transport_.sum(all);
  auto next = all.begin();
  for (Tensor<T>* value : order) {
    std::copy(next, next + static_cast<std::ptrdiff_t>(value->data.size()), value->data.begin());
    next += static_cast<std::ptrdiff_t>(value->data.size());
  }
}

template class GradientSync<float>;
template class GradientSync<double>;

}  // namespace loom::runtime
