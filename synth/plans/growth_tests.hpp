// The tests of the tree packing's growing (synth/plans/tree_packing.cpp, build_trees) that need no
// max-flow. Growing tree `id` by an arc x -> y asks for the max-flow into y from a source that
// feeds x without bound and every other active tree's source with that tree's copies (a tree's
// source reaches each of its nodes without bound), capped at `others` (those copies) plus what the
// tree may take. Where a flow built of short paths already carries that much, the max-flow does,
// and the tree takes all it may; where a cut already leaves no more than `others`, so does the
// max-flow, and it takes nothing. Either answer is the max-flow's own, so the trees are the same
// (PackingOptions::answer_without_flows; tests/synth/plans/tree_growing_test.cpp).
//
// `Trees` is build_trees' list: each tree's `in` (per NPU, whether it holds it) and `copies`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "synth/plans/flow_graph.hpp"

namespace tenet::synth::detail {

class GrowthTests {
 public:
  using Cap = FlowGraph::Cap;

  GrowthTests() = default;
  // The capacities between the first `npus` nodes of `f` (the NPUs), as the trees begin to grow.
  GrowthTests(const FlowGraph& f, int npus) : n_(npus), cap_(static_cast<size_t>(npus) * npus, 0) {
    for (int a = 0; a < n_; ++a)
      for (int b : f.successors(a))
        if (b < n_) cap_[index(a, b)] = f.capacity(a, b);
  }

  // A tree took `c` of x -> y (as the flow graph's arc lost it).
  void used(int x, int y, Cap c) { cap_[index(x, y)] -= c; }

  // Whether the test of tree `id` on x -> y carries `target` (the others' copies and what the tree
  // may take): beside the direct arc and the sources of the active trees that hold y, each other
  // NPU z passes on into y (its arc z -> y) what x sends it (x -> z) and what the sources of the
  // active trees without y that hold z send it (their copies, each spent once). Those paths share
  // no arc of limited capacity, so together they are a flow from the test's source into y.
  template <class Trees>
  bool two_hops_carry(const Trees& trees, const std::vector<char>& active, size_t id, int x, int y,
                      Cap target) {
    Cap carried = cap(x, y);
    rest_.assign(trees.size(), 0);  // the copies of each tree without y not yet spent
    for (size_t j = 0; j < trees.size(); ++j)
      if (j != id && active[j]) (trees[j].in[y] ? carried : rest_[j]) += trees[j].copies;
    for (int z = 0; z < n_ && carried < target; ++z) {
      if (z == x || z == y) continue;
      Cap into = cap(z, y);
      if (into <= 0) continue;
      const Cap from_x = std::min(into, cap(x, z));
      carried += from_x;
      into -= from_x;
      for (size_t j = 0; j < trees.size() && into > 0; ++j) {
        if (rest_[j] == 0 || !trees[j].in[z]) continue;
        const Cap take = std::min(into, rest_[j]);
        rest_[j] -= take;
        into -= take;
        carried += take;
      }
    }
    return carried >= target;
  }

  // Whether a set S of NPUs that left a test short before (remember_short) leaves the test of tree
  // `id` on x -> y (y in S, x not) with nothing over `others`: its cut, the NPUs' arcs into S and
  // the copies of the other active trees that hold a node of S (their sources must be inside, as
  // they reach every node of their tree without bound; tree `id`'s is fed nothing in its test), is
  // at most `others`.
  template <class Trees>
  bool tight_cut(const Trees& trees, const std::vector<char>& active, size_t id, int x, int y,
                 Cap others) const {
    for (const std::vector<int>& set : short_) {
      auto inside = [&](int v) { return std::binary_search(set.begin(), set.end(), v); };
      if (!inside(y) || inside(x)) continue;
      Cap cut = 0;
      for (int b : set)
        for (int a = 0; a < n_; ++a)
          if (!inside(a)) cut += cap(a, b);
      for (size_t j = 0; j < trees.size() && cut <= others; ++j)
        if (j != id && active[j] &&
            std::any_of(set.begin(), set.end(), [&](int v) { return trees[j].in[v] != 0; }))
          cut += trees[j].copies;
      if (cut <= others) return true;
    }
    return false;
  }

  // A test just left short: the NPUs off the least source side of its flow (`side`, per node).
  void remember_short(const std::vector<char>& side) {
    std::vector<int> set;
    for (int v = 0; v < n_; ++v)
      if (!side[v]) set.push_back(v);
    if (std::find(short_.begin(), short_.end(), set) == short_.end())
      short_.push_back(std::move(set));
  }

 private:
  size_t index(int a, int b) const { return static_cast<size_t>(a) * n_ + b; }
  Cap cap(int a, int b) const { return cap_[index(a, b)]; }

  int n_ = 0;
  std::vector<Cap> cap_;                 // per pair of NPUs, what the trees left of its arc
  std::vector<std::vector<int>> short_;  // sets of NPUs that left a test short, sorted
  std::vector<Cap> rest_;                // two_hops_carry's copies left per tree, memory reused
};

}  // namespace tenet::synth::detail
