// Translation symmetry: topologies that look the same from every NPU.
//
// A torus, a ring or a hypercube is a Cayley graph of an abelian group: its NPUs are the elements
// of Z_{l1} x ... x Z_{lm} (Topology::levels, the first dimension counting fastest), and moving
// every node by the same s (x -> x + s, coordinate by coordinate) carries every link to a link of
// the same bandwidth and latency. Such a move is a translation. Each NPU's links out, sorted by
// where they lead (relative to it), then bandwidth, latency and id, are its slots: slot j of every
// NPU is the same link moved.
//
// Nothing here is assumed from a generator's name: translation_symmetry checks every link.
#pragma once

#include <optional>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::topo {

class Translations {
 public:
  // The group's dimensions (Topology::levels).
  const std::vector<int>& dims() const { return dims_; }
  int num_npus() const { return npus_; }
  // Links out of every NPU.
  int num_slots() const { return slots_; }
  // NPU x's slot j.
  LinkId link(NodeId x, int slot) const { return links_[static_cast<size_t>(x) * slots_ + slot]; }
  // x + s: NPU x moved by the translation that takes NPU 0 to NPU s.
  NodeId shift(NodeId x, NodeId s) const;
  // f(s, x + s) for every NPU s in order, stepping coordinates (no division per NPU).
  template <class F>
  void for_each_shift(NodeId x, F&& f) const;
  // The slot whose links go back along slot j's (the same bandwidth and latency), or -1 when some
  // slot has none: a Reduce-Scatter reversing an All-Gather needs every slot's.
  int reverse(int slot) const { return reverse_[slot]; }
  bool reversible() const;
  // "Z64 x Z64".
  std::string describe() const;

 private:
  friend std::optional<Translations> translation_symmetry(const Topology& t);
  std::vector<int> dims_, strides_;
  int npus_ = 0, slots_ = 0;
  std::vector<LinkId> links_;  // npus x slots
  std::vector<int> reverse_;
};

template <class F>
void Translations::for_each_shift(NodeId x, F&& f) const {
  const size_t m = dims_.size();
  std::vector<int> step(m, 0), moved(m);  // s's coordinates; x + s's
  for (size_t d = 0; d < m; ++d) moved[d] = x / strides_[d] % dims_[d];
  NodeId to = x;
  for (NodeId s = 0; s < npus_; ++s) {
    f(s, to);
    for (size_t d = 0; d < m; ++d) {
      if (++moved[d] == dims_[d]) {
        moved[d] = 0;
        to -= (dims_[d] - 1) * strides_[d];
      } else {
        to += strides_[d];
      }
      if (++step[d] < dims_[d]) break;
      step[d] = 0;  // back where it began: carry into the next dimension
    }
  }
}

// The topology's translations, when it has them: no switches, NPUs numbered as the elements of the
// group of its levels (their product is the NPU count, two or more), and every link moved by every
// translation a link of the same bandwidth and latency. Nothing otherwise. O(links log degree).
std::optional<Translations> translation_symmetry(const Topology& t);

}  // namespace tenet::topo
