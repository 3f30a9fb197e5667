// The tests of the tree packing's growing (synth/plans/tree_packing.cpp, build_trees) that need no
// max-flow. Growing tree `id` by an arc x -> y asks for the max-flow into y from a source that
// feeds x without bound and every other active tree's source with that tree's copies (a tree's
// source reaches each of its nodes without bound), capped at `others` (those copies) plus what the
// tree may take. Where a flow built of short paths already carries that much, the max-flow does,
// and the tree takes all it may; where a cut already leaves no more than `others`, so does the
// max-flow, and it takes nothing. Either answer is the max-flow's own, so the trees are the same
// (PackingOptions::answer_without_flows; tests/synth/plans/tree_growing_test.cpp). Nearly every
// test carries all it asks (torus2d:8x8: 4,327 of its 4,331 max-flows), so a flow that is not
// always a maximum one but is found on arrays, without a max-flow's work (paths_carry), answers
// most of what paths of two hops leave open.
//
// `Trees` is build_trees' list: each tree's `in` (per NPU, whether it holds it), `bfs` (its
// NPUs) and `copies`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "synth/plans/flow_graph.hpp"

namespace tenet::synth::detail {

class GrowthTests {
 public:
  using Cap = FlowGraph::Cap;

  GrowthTests() = default;
  // The capacities between the first `npus` nodes of `f` (the NPUs), as the trees begin to grow.
  GrowthTests(const FlowGraph& f, int npus)
      : n_(npus), cap_(static_cast<size_t>(npus) * npus, 0), out_(npus), in_(npus) {
    for (int a = 0; a < n_; ++a)
      for (int b : f.successors(a))
        if (b < n_) {
          cap_[index(a, b)] = f.capacity(a, b);
          out_[a].push_back(b);
          in_[b].push_back(a);
        }
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

  // Whether flows along shortest paths carry `target` into y in the test of tree `id` on x -> y:
  // the copies of the active trees that hold y straight from their sources, then in phases, as
  // Dinic's algorithm finds them but without cancelling flow, paths into y along the arcs that
  // bring a node one hop nearer to y over the capacity left (levels by a breadth-first search
  // back from y): from x, up to what the others' copies cannot bring, and from each other active
  // tree without y, up to its copies, entering at any node it holds; then from x for what the
  // trees could not send. Each path keeps to the arcs' capacity and each tree to its copies, so
  // together they are a flow of the test's graph, and a max-flow carries at least as much: true is
  // the max-flow's answer. False (a phase added nothing) may not be, and the caller asks the
  // max-flow. The capacities are as they were when it returns.
  template <class Trees>
  bool paths_carry(const Trees& trees, const std::vector<char>& active, size_t id, int x, int y,
                   Cap target) {
    Cap carried = 0;
    sources_.clear();  // (tree, copies not yet sent)
    for (size_t j = 0; j < trees.size(); ++j)
      if (j != id && active[j]) {
        if (trees[j].in[y])
          carried += trees[j].copies;
        else
          sources_.emplace_back(j, trees[j].copies);
      }
    if (carried >= target) return true;
    Cap trees_left = 0;
    for (const auto& [j, left] : sources_) trees_left += left;
    level_.resize(static_cast<size_t>(n_));
    next_.resize(static_cast<size_t>(n_));
    for (bool any = true; any && carried < target;) {
      any = false;
      if (!levels(y)) break;
      // Up to `want` from v (taken from `left`, where given), path by path.
      auto send = [&](int v, Cap want, Cap* left) {
        while (want > 0 && carried < target && level_[v] > 0) {
          const Cap d = push(v, y, std::min(want, target - carried));
          if (d <= 0) return;
          want -= d;
          carried += d;
          any = true;
          if (left) {
            *left -= d;
            trees_left -= d;
          }
        }
      };
      send(x, target - carried - trees_left, nullptr);
      for (auto& [j, left] : sources_)
        for (size_t i = 0; left > 0 && carried < target && i < trees[j].bfs.size(); ++i)
          send(trees[j].bfs[i], left, &left);
      send(x, target - carried, nullptr);
    }
    for (const auto& [arc, amount] : sent_) cap_[arc] += amount;
    sent_.clear();
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

  // paths_carry's levels: per NPU its hops to y over the arcs with capacity left (0 at y, -1 where
  // none leads there), and per NPU its first arc out not yet found closed in this phase. Whether
  // an NPU but y has one.
  bool levels(int y) {
    std::fill(level_.begin(), level_.end(), -1);
    std::fill(next_.begin(), next_.end(), 0);
    level_[y] = 0;
    todo_.assign(1, y);
    for (size_t i = 0; i < todo_.size(); ++i) {
      const int b = todo_[i];
      for (int a : in_[b])
        if (level_[a] < 0 && cap(a, b) > 0) {
          level_[a] = level_[b] + 1;
          todo_.push_back(a);
        }
    }
    return todo_.size() > 1;
  }
  // One path from v down the levels into y carrying at most `most`: what it carries, its capacity
  // taken (and logged in sent_, to be given back), or 0 where none is left (v is then closed for
  // the phase: level -1).
  Cap push(int v, int y, Cap most) {
    if (v == y) return most;
    for (; next_[v] < out_[v].size(); ++next_[v]) {
      const int w = out_[v][next_[v]];
      if (level_[w] != level_[v] - 1) continue;
      const size_t vw = index(v, w);
      if (cap_[vw] <= 0) continue;
      if (const Cap d = push(w, y, std::min(most, cap_[vw])); d > 0) {
        cap_[vw] -= d;
        sent_.emplace_back(vw, d);
        return d;
      }
    }
    level_[v] = -1;
    return 0;
  }

  int n_ = 0;
  std::vector<Cap> cap_;                    // per pair of NPUs, what the trees left of its arc
  std::vector<std::vector<int>> short_;     // sets of NPUs that left a test short, sorted
  std::vector<Cap> rest_;                   // two_hops_carry's copies left per tree, memory reused
  std::vector<std::vector<int>> out_, in_;  // per NPU, the NPUs its arcs lead to (come from)
  // paths_carry's, memory reused: the trees sending and the copies each has left, the levels, the
  // next arc out per NPU, the search's queue, and the capacity taken (arc, amount).
  std::vector<std::pair<size_t, Cap>> sources_;
  std::vector<int> level_, todo_;
  std::vector<size_t> next_;
  std::vector<std::pair<size_t, Cap>> sent_;
};

}  // namespace tenet::synth::detail
