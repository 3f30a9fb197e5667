// Translation symmetry: topologies that look the same from every NPU.
//
// A torus, a ring or a hypercube is a Cayley graph of an abelian group: its NPUs are the elements
// of Z_{l1} x ... x Z_{lm} (the first dimension counting fastest), and moving every NPU by the same
// s (x -> x + s, coordinate by coordinate) carries every link to a link of the same bandwidth and
// latency. Such a move is a translation. Clusters of servers on rails are too, with the switches
// moved along: Z_G x Z_S for S servers of G NPUs (GPU i of server n to GPU i + a of server n + b;
// its NVSwitch to server n + b's, its rail to rail i + a).
//
// Every link here has an NPU at one end (switches link only to NPUs), so it is one of NPU 0's
// links moved: NPU x's links out (to NPUs or switches), sorted by where they lead as seen from x,
// then bandwidth, latency and id, are its out-slots; the links into x from switches, sorted the
// same way, its in-slots. Slot j of every NPU is the same link moved. A link's orbit (all its
// moves) is its slot: out-slot j is orbit j, in-slot j orbit num_out_slots() + j.
//
// Nothing here is assumed from a generator's name: translation_symmetry checks every link.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::topo {

class Translations {
 public:
  // The group's dimensions.
  const std::vector<int>& dims() const { return dims_; }
  int num_npus() const { return npus_; }
  // Links out of every NPU; links into every NPU from a switch.
  int num_out_slots() const { return out_; }
  int num_in_slots() const { return in_; }
  int num_orbits() const { return out_ + in_; }
  // NPU x's out-slot j; its in-slot j.
  LinkId out_link(NodeId x, int slot) const {
    return out_links_[static_cast<size_t>(x) * out_ + slot];
  }
  LinkId in_link(NodeId x, int slot) const {
    return in_links_[static_cast<size_t>(x) * in_ + slot];
  }
  // The orbit of link l, and the NPU it is that orbit's slot of (its source when that is an NPU,
  // else its destination).
  int orbit(LinkId l) const { return orbit_[l]; }
  NodeId anchor(const Topology& t, LinkId l) const {
    return t.is_npu(t.link(l).src) ? t.link(l).src : t.link(l).dst;
  }
  // Orbit o's link at NPU x: out-slot or in-slot.
  LinkId link_of(int orbit, NodeId x) const {
    return orbit < out_ ? out_link(x, orbit) : in_link(x, orbit - out_);
  }
  // x + s: NPU x moved by the translation that takes NPU 0 to NPU s.
  NodeId shift(NodeId x, NodeId s) const;
  // -x: shift(x, negate(x)) is NPU 0.
  NodeId negate(NodeId x) const;
  // Walks x + s for s = 0, 1, ... stepping coordinates (no division per NPU).
  class Walker {
   public:
    Walker(const Translations& tr, NodeId x);
    NodeId at() const { return at_; }
    void step();

   private:
    const Translations* tr_;
    std::vector<int> step_, moved_;  // s's coordinates; x + s's
    NodeId at_;
  };
  // A link back along link l, of the same bandwidth and latency (the p-th of such parallel links
  // for the p-th), or -1; and whether every link has one (a Reduce-Scatter reversing an
  // All-Gather needs them).
  LinkId reverse(LinkId l) const { return reverse_[l]; }
  bool reversible() const;
  // "Z64 x Z64".
  std::string describe() const;

 private:
  friend std::optional<Translations> translation_symmetry(const Topology& t);
  // The translations of `t` over the group of `dims`, or nothing.
  static std::optional<Translations> over(const Topology& t, const std::vector<int>& dims);
  std::vector<int> dims_, strides_;
  int npus_ = 0, out_ = 0, in_ = 0;
  std::vector<LinkId> out_links_, in_links_;  // npus x out slots; npus x in slots
  std::vector<int> orbit_;                    // per link
  std::vector<LinkId> reverse_;               // per link
};

// The topology's translations, when it has them: every link with an NPU at one end, and the NPUs
// numbered as the elements of the group of the topology's levels (their product the NPU count), or
// of Z_G x Z_S where topo::detect_servers finds S servers of G consecutive NPUs; every switch
// moved onto a switch (the one whose NPUs are its NPUs moved) and every link onto a link of the
// same bandwidth and latency. Nothing otherwise. O(links x switch degree).
std::optional<Translations> translation_symmetry(const Topology& t);

}  // namespace tenet::topo
