// The tests of the tree packing's growing (synth/plans/tree_packing.cpp, build_trees) answered
// without LEMON's max-flow. Growing tree `id` by an arc x -> y asks for the max-flow into y from a
// source that feeds x without bound and every other active tree's source with that tree's copies (a
// tree's source reaches each of its nodes without bound), capped at `others` (those copies) plus
// what the tree may take. Where a flow built of short paths already carries that much, the max-flow
// does, and the tree takes all it may; where a cut already leaves no more than `others`, so does
// the max-flow, and it takes nothing. Either answer is the max-flow's own, so the trees are the
// same (PackingOptions::answer_without_flows; tests/synth/plans/tree_growing_test.cpp). Nearly
// every test carries all it asks (the counts: docs/synthesis.md), so the rest are answered by
// shortest paths that take no flow back (paths_carry: most), then by Dinic's algorithm on arrays,
// stopped at what the test asks (flow_carries); only a test left short asks LEMON's max-flow, for
// the least source side that answers later ones.
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
      : n_(npus),
        cap_(static_cast<size_t>(npus) * npus, 0),
        out_(npus),
        in_(npus),
        holding_(npus),
        flow_(cap_.size(), 0) {
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

  // Whether shortest paths carry `target` into y in the test of tree `id` on x -> y: the copies of
  // the active trees that hold y straight from their sources (their arcs into y carry them whole,
  // so every finite cut does), then, phase by phase as Dinic's algorithm finds them but without
  // taking flow back, paths into y along the NPUs' arcs that bring a node one hop nearer to y over
  // the capacity left (levels by a breadth-first search back from y): from x, up to what the
  // others' copies cannot bring, from each other active tree without y, up to its copies, entering
  // at any NPU it holds, then from x for the rest. Together a flow of the test's graph, so true
  // is the max-flow's answer; false (a phase added nothing) may not be (flow_carries answers
  // then). The capacities are as they were when it returns.
  template <class Trees>
  bool paths_carry(const Trees& trees, const std::vector<char>& active, size_t id, int x, int y,
                   Cap target) {
    return carries(trees, active, id, x, y, target, false);
  }

  // Whether the test of tree `id` on x -> y carries `target` into y, by Dinic's algorithm on
  // arrays: as paths_carry, but the flow sent on the NPUs' arcs may be taken back, and each tree
  // sending is a node of its own (its source) with arcs into its every NPU, reached back where its
  // flow entered the tree. It stops at `target`, or where no path is left: then the max-flow is
  // below it. So the answer is the max-flow's; false leaves the caller to ask the max-flow for its
  // least source side (remember_short).
  template <class Trees>
  bool flow_carries(const Trees& trees, const std::vector<char>& active, size_t id, int x, int y,
                    Cap target) {
    return carries(trees, active, id, x, y, target, true);
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

  // paths_carry (`back` false) or flow_carries (true): the copies of the active trees but `id`
  // that hold y straight in, then the phases: levels, then paths from x for its share (what the
  // trees cannot bring), from each tree sending (from its NPUs, or from its source where `back`),
  // then from x for the rest; until `target`, or a phase that adds nothing. The flow sent is
  // cleared before it returns.
  template <class Trees>
  bool carries(const Trees& trees, const std::vector<char>& active, size_t id, int x, int y,
               Cap target, bool back) {
    Cap carried = 0;
    sources_.clear();  // (the tree's NPUs, copies not yet sent)
    for (size_t j = 0; j < trees.size(); ++j)
      if (j != id && active[j]) {
        if (trees[j].in[y])
          carried += trees[j].copies;
        else
          sources_.emplace_back(&trees[j].bfs, trees[j].copies);
      }
    if (carried >= target) return true;
    back_ = back;
    const size_t sources = back ? sources_.size() : 0;
    if (back) {
      for (std::vector<int>& list : holding_) list.clear();
      for (size_t s = 0; s < sources; ++s)
        for (int v : *sources_[s].first) holding_[v].push_back(static_cast<int>(s));
      if (entered_.size() < sources * n_) entered_.resize(sources * n_, 0);
    }
    level_.resize(static_cast<size_t>(n_) + sources);
    next_.resize(level_.size());
    Cap trees_left = 0;
    for (const auto& [bfs, left] : sources_) trees_left += left;
    for (bool any = true; any && carried < target;) {
      any = false;
      if (!levels(y)) break;
      // Up to `want` from node u (taken from `left`, where given), path by path; whether more is
      // wanted.
      auto send = [&](int u, Cap want, Cap* left) {
        while (want > 0 && carried < target && level_[u] > 0) {
          const Cap d = push(u, y, std::min(want, target - carried));
          if (d <= 0) break;
          want -= d;
          carried += d;
          any = true;
          if (left) {
            *left -= d;
            trees_left -= d;
          }
        }
        return want > 0 && carried < target;
      };
      send(x, target - carried - trees_left, nullptr);
      for (size_t s = 0; s < sources_.size() && carried < target; ++s) {
        auto& [bfs, left] = sources_[s];
        if (back)
          send(n_ + static_cast<int>(s), left, &left);
        else
          for (int v : *bfs)
            if (!send(v, left, &left)) break;
      }
      send(x, target - carried, nullptr);
    }
    for (size_t arc : touched_) flow_[arc] = 0;
    touched_.clear();
    for (size_t e : entries_) entered_[e] = 0;
    entries_.clear();
    return carried >= target;
  }

  // The searches' graph: the NPUs (0 to n - 1), then, where flow may be taken back (back_), the
  // sources of the trees sending (n + s). An NPU's arcs out: to its successors over the capacity
  // left less the flow sent (residual_out); where back_, also back to its predecessors over the
  // flow they sent it, and back to the sources whose flow entered here. A source's: to each NPU of
  // its tree, without bound.
  Cap residual_out(int a, int b) const { return cap(a, b) - flow_[index(a, b)]; }
  Cap& entered(int s, int v) { return entered_[static_cast<size_t>(s) * n_ + v]; }

  // Levels: per node its arcs to y over what they have left (0 at y, -1 where none leads there),
  // and per node its first arc out not yet found closed in this phase. Whether a node but y has
  // one.
  bool levels(int y) {
    std::fill(level_.begin(), level_.end(), -1);
    std::fill(next_.begin(), next_.end(), 0);
    level_[y] = 0;
    todo_.assign(1, y);
    auto reach = [&](int u, int from) {
      if (level_[u] >= 0) return;
      level_[u] = level_[from] + 1;
      todo_.push_back(u);
    };
    for (size_t i = 0; i < todo_.size(); ++i) {
      const int b = todo_[i];
      if (b >= n_) {  // a source: back from the NPUs its flow entered
        const int s = b - n_;
        for (int v : *sources_[s].first)
          if (entered(s, v) > 0) reach(v, b);
        continue;
      }
      for (int a : in_[b])
        if (residual_out(a, b) > 0) reach(a, b);
      if (!back_) continue;
      for (int a : out_[b])
        if (flow_[index(b, a)] > 0) reach(a, b);
      for (int s : holding_[b]) reach(n_ + s, b);
    }
    return todo_.size() > 1;
  }

  // One path from node u down the levels into y carrying at most `most`: what it carries, its
  // flow recorded, or 0 where none is left (u is then closed for the phase: level -1).
  Cap push(int u, int y, Cap most) {
    if (u == y) return most;
    const int down = level_[u] - 1;
    size_t& i = next_[u];
    if (u >= n_) {  // a source: into any NPU of its tree
      const int s = u - n_;
      const std::vector<int>& bfs = *sources_[s].first;
      for (; i < bfs.size(); ++i) {
        const int v = bfs[i];
        if (level_[v] != down) continue;
        if (const Cap d = push(v, y, most); d > 0) {
          Cap& e = entered(s, v);
          if (e == 0) entries_.push_back(static_cast<size_t>(s) * n_ + v);
          e += d;
          return d;
        }
      }
      level_[u] = -1;
      return 0;
    }
    const std::vector<int>& out = out_[u];
    const std::vector<int>& in = in_[u];
    const std::vector<int>& holders = holding_[u];
    const size_t arcs = back_ ? out.size() + in.size() + holders.size() : out.size();
    for (; i < arcs; ++i) {
      if (i < out.size()) {
        const int w = out[i];
        if (level_[w] != down) continue;
        const Cap r = residual_out(u, w);
        if (r <= 0) continue;
        if (const Cap d = push(w, y, std::min(most, r)); d > 0) {
          Cap& f = flow_[index(u, w)];
          if (f == 0) touched_.push_back(index(u, w));
          f += d;
          return d;
        }
      } else if (i < out.size() + in.size()) {  // the flow w sent u, taken back
        const int w = in[i - out.size()];
        if (level_[w] != down) continue;
        Cap& f = flow_[index(w, u)];
        if (f <= 0) continue;
        if (const Cap d = push(w, y, std::min(most, f)); d > 0) {
          f -= d;
          return d;
        }
      } else {  // the flow a source sent into u, taken back
        const int s = holders[i - out.size() - in.size()];
        if (level_[n_ + s] != down) continue;
        Cap& e = entered(s, u);
        if (e <= 0) continue;
        if (const Cap d = push(n_ + s, y, std::min(most, e)); d > 0) {
          e -= d;
          return d;
        }
      }
    }
    level_[u] = -1;
    return 0;
  }

  int n_ = 0;
  std::vector<Cap> cap_;                    // per pair of NPUs, what the trees left of its arc
  std::vector<std::vector<int>> short_;     // sets of NPUs that left a test short, sorted
  std::vector<Cap> rest_;                   // two_hops_carry's copies left per tree, memory reused
  std::vector<std::vector<int>> out_, in_;  // per NPU, the NPUs its arcs lead to (come from)
  // paths_carry's and flow_carries', memory reused: the trees sending (their NPUs, the copies each
  // has left), per NPU the senders whose tree holds it, the flow sent per arc (flow_, per pair of
  // NPUs; entered_, per sender and NPU) and where it is not 0 (to clear), the levels, the next arc
  // out per node, and the search's queue.
  std::vector<std::pair<const std::vector<int>*, Cap>> sources_;
  std::vector<std::vector<int>> holding_;
  std::vector<Cap> flow_, entered_;
  std::vector<size_t> touched_, entries_;
  bool back_ = false;  // whether the search takes flow back (flow_carries)
  std::vector<int> level_, todo_;
  std::vector<size_t> next_;
};

}  // namespace tenet::synth::detail
