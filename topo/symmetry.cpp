#include "topo/symmetry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>

namespace tenet::topo {

NodeId Translations::shift(NodeId x, NodeId s) const {
  NodeId moved = 0;
  for (size_t d = 0; d < dims_.size(); ++d) {
    const int l = dims_[d];
    int c = x / strides_[d] % l + s / strides_[d] % l;
    if (c >= l) c -= l;
    moved += c * strides_[d];
  }
  return moved;
}

bool Translations::reversible() const {
  return std::none_of(reverse_.begin(), reverse_.end(), [](int r) { return r < 0; });
}

std::string Translations::describe() const {
  std::vector<std::string> parts;
  for (int l : dims_) parts.push_back(fmt::format("Z{}", l));
  return fmt::format("{}", fmt::join(parts, " x "));
}

std::optional<Translations> translation_symmetry(const Topology& t) {
  const std::vector<int>& dims = t.levels();
  const int n = t.num_npus();
  if (t.num_switches() != 0 || dims.empty() || n < 2) return std::nullopt;
  int64_t product = 1;
  for (int l : dims) {
    if (l < 1) return std::nullopt;
    product *= l;
    if (product > n) return std::nullopt;
  }
  if (product != n) return std::nullopt;

  Translations tr;
  tr.dims_ = dims;
  tr.npus_ = n;
  int stride = 1;
  for (int l : dims) {
    tr.strides_.push_back(stride);
    stride *= l;
  }
  // Where y lies seen from x: the NPU that x -> 0 moves it to.
  auto offset = [&](NodeId x, NodeId y) {
    NodeId o = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      const int l = dims[d];
      int c = y / tr.strides_[d] % l - x / tr.strides_[d] % l;
      if (c < 0) c += l;
      o += c * tr.strides_[d];
    }
    return o;
  };
  using Key = std::tuple<NodeId, Bandwidth, Time, LinkId>;  // offset, bandwidth, latency, id
  auto slots_of = [&](NodeId x) {
    std::vector<Key> keys;
    for (LinkId l : t.out_links(x)) {
      const Link& link = t.link(l);
      keys.emplace_back(offset(x, link.dst), link.bandwidth, link.latency, l);
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  const std::vector<Key> first = slots_of(0);
  tr.slots_ = static_cast<int>(first.size());
  if (tr.slots_ == 0) return std::nullopt;
  tr.links_.resize(static_cast<size_t>(n) * tr.slots_);
  for (NodeId x = 0; x < n; ++x) {
    const std::vector<Key> keys = x == 0 ? first : slots_of(x);
    if (keys.size() != first.size()) return std::nullopt;
    for (int j = 0; j < tr.slots_; ++j) {
      if (std::get<0>(keys[j]) != std::get<0>(first[j]) || std::get<1>(keys[j]) != std::get<1>(first[j]) ||
          std::get<2>(keys[j]) != std::get<2>(first[j]))
        return std::nullopt;
      tr.links_[static_cast<size_t>(x) * tr.slots_ + j] = std::get<3>(keys[j]);
    }
  }
  // Slot j's way back: the slot leading to the opposite offset with the same bandwidth and
  // latency, the p-th of such parallel slots for the p-th.
  auto same = [](const Key& a, const Key& b) {
    return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b) && std::get<2>(a) == std::get<2>(b);
  };
  tr.reverse_.assign(tr.slots_, -1);
  for (int j = 0; j < tr.slots_; ++j) {
    int parallel = 0;
    while (parallel < j && same(first[j - parallel - 1], first[j])) ++parallel;
    const Key back{offset(std::get<0>(first[j]), 0), std::get<1>(first[j]), std::get<2>(first[j]), 0};
    for (int i = 0; i < tr.slots_; ++i)
      if (same(first[i], back) && (i == 0 || !same(first[i - 1], back))) {
        if (i + parallel < tr.slots_ && same(first[i + parallel], back)) tr.reverse_[j] = i + parallel;
        break;
      }
  }
  return tr;
}

}  // namespace tenet::topo
