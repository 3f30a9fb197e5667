// Compiled as C++17: see flow_graph.hpp.
#include "synth/plans/flow_graph.hpp"

#include <lemon/list_graph.h>
#include <lemon/preflow.h>
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace tenet::synth {

namespace {

using Cap = FlowGraph::Cap;

// The nodes proven to receive `limit` from a source without a flow of their own: those added
// (the source; a node whose own flow reached the limit), and every node into which the nodes so
// proven send at least `limit` over their ways, in all. A cut that separates such a node y from the
// source either separates one of those proven before it too (a cut of `limit` at least) or keeps
// them all on the source's side and cuts each of their ways into y (`limit` in all): by induction,
// every cut before y holds `limit`.
class Receivers {
 public:
  Receivers(size_t nodes, Cap limit) : known_(nodes, 0), into_(nodes, 0), limit_(limit) {}
  Cap limit() const { return limit_; }
  bool known(int x) const { return known_[static_cast<size_t>(x)] != 0; }
  // Adds x, and every node it proves in turn. `ways(x, each)` calls each(y, room) for every way out
  // of x, to node y (-1: none to count) with that room.
  template <class Ways>
  void add(int x, Ways&& ways) {
    if (known(x)) return;
    known_[static_cast<size_t>(x)] = 1;
    todo_.assign(1, x);
    for (size_t i = 0; i < todo_.size(); ++i)
      ways(todo_[i], [&](int y, Cap room) {
        if (y < 0 || known(y)) return;
        Cap& in = into_[static_cast<size_t>(y)];
        in = std::min(limit_, in + std::min(limit_, room));
        if (in < limit_) return;
        known_[static_cast<size_t>(y)] = 1;
        todo_.push_back(y);
      });
  }

 private:
  std::vector<char> known_;
  std::vector<Cap> into_;  // per node: what the nodes proven send into it (at most `limit`)
  Cap limit_;
  std::vector<int> todo_;
};

// The residual graph of a maximum flow (Preflow's, after its second phase), as arrays: per node,
// its ways over arcs either way, all nodes' in one array. flow_into(v, most) is the most flow, up
// to `most`, from the flow's source to v over it, by Dinic's blocking flows (a few levels deep on
// the planning graphs: few phases), the residual graph left as it was. Asked in turn for many v
// with one `most` (FlowGraph::max_flows_freeing), nearly every v takes all of it: those Receivers
// proves are answered unasked.
class Residual {
 public:
  template <class Preflow>
  Residual(const lemon::ListDigraph& g, const lemon::ListDigraph::ArcMap<Cap>& cap,
           const Preflow& preflow, int source)
      : first_(static_cast<size_t>(g.maxNodeId() + 2), 0),
        made_(2 * static_cast<size_t>(g.maxArcId() + 1), 0),
        level_(first_.size() - 1),
        next_(level_.size()),
        source_(source) {
    // Each node's sides one after another (node x's: sides_[first_[x], first_[x + 1])).
    for (lemon::ListDigraph::ArcIt a(g); a != lemon::INVALID; ++a) {
      ++first_[static_cast<size_t>(g.id(g.source(a))) + 1];
      ++first_[static_cast<size_t>(g.id(g.target(a))) + 1];
    }
    for (size_t x = 1; x < first_.size(); ++x) first_[x] += first_[x - 1];
    sides_.resize(first_.back());
    std::vector<size_t> placed(first_.begin(), first_.end() - 1);
    for (lemon::ListDigraph::ArcIt a(g); a != lemon::INVALID; ++a) {
      const auto id = static_cast<size_t>(g.id(a));
      const int x = g.id(g.source(a)), y = g.id(g.target(a));
      made_[2 * id] = cap[a] - preflow.flow(a);
      made_[2 * id + 1] = preflow.flow(a);
      sides_[placed[static_cast<size_t>(x)]++] = {y, 2 * id};
      sides_[placed[static_cast<size_t>(y)]++] = {x, 2 * id + 1};
    }
  }

  Cap flow_into(int v, Cap most) {
    if (!full_ || full_->limit() != most) {
      full_.emplace(level_.size(), most);
      prove(source_);
    }
    if (full_->known(v)) return most;
    room_ = made_;
    to_ = v;
    Cap got = 0;
    while (got < most && levels()) {
      std::copy(first_.begin(), first_.end() - 1, next_.begin());
      while (got < most)
        if (const Cap d = push(source_, most - got); d > 0)
          got += d;
        else
          break;
    }
    if (got == most) prove(v);
    return got;
  }

 private:
  // One way over an arc: to node `to`, its room room_[way] (2a: along arc a, its capacity less its
  // flow; 2a + 1: against it, its flow), the way back room_[way ^ 1].
  struct Side {
    int to;
    size_t way;
  };
  int& level(int x) { return level_[static_cast<size_t>(x)]; }
  // Each node's distance to the target over arcs with room, breadth first back from it, until
  // the source has one: whether it does. A path along decreasing distances never meets a dead end
  // but where this phase filled an arc.
  bool levels() {
    std::fill(level_.begin(), level_.end(), -1);
    level(to_) = 0;
    todo_.assign(1, to_);
    for (size_t i = 0; i < todo_.size() && level(source_) < 0; ++i) {
      const int x = todo_[i];
      const int next = level(x) + 1;
      for (size_t j = first_[static_cast<size_t>(x)]; j < first_[static_cast<size_t>(x) + 1]; ++j) {
        const Side& e = sides_[j];
        // The way from e.to into x: e's way back.
        if (level(e.to) < 0 && room_[e.way ^ 1] > 0) {
          level(e.to) = next;
          todo_.push_back(e.to);
        }
      }
    }
    return level(source_) >= 0;
  }
  // One path from x to the target along decreasing distances, at most `most` (Dinic's: next_[x],
  // x's side to try next, skips those found blocked in this phase).
  Cap push(int x, Cap most) {
    if (x == to_) return most;
    const size_t end = first_[static_cast<size_t>(x) + 1];
    const int below = level(x) - 1;
    for (size_t& i = next_[static_cast<size_t>(x)]; i < end; ++i) {
      const Side& e = sides_[i];
      if (level(e.to) != below) continue;
      const Cap r = room_[e.way];
      if (r <= 0) continue;
      if (const Cap d = push(e.to, std::min(most, r)); d > 0) {
        room_[e.way] -= d;
        room_[e.way ^ 1] += d;
        return d;
      }
    }
    return 0;
  }

  // x, and what it proves in turn, taking `most` (full_), over the residual graph as the max flow
  // left it (made_).
  void prove(int x) {
    full_->add(x, [this](int y, auto&& each) {
      for (size_t j = first_[static_cast<size_t>(y)]; j < first_[static_cast<size_t>(y) + 1]; ++j)
        each(sides_[j].to, made_[sides_[j].way]);
    });
  }

  std::vector<size_t> first_;
  std::vector<Side> sides_;
  std::vector<Cap> made_, room_;   // per way (Side::way): its room after the max flow, and now
  std::optional<Receivers> full_;  // those proven to take the `most` last asked
  std::vector<int> level_, todo_;
  std::vector<size_t> next_;
  int source_, to_ = -1;
};

}  // namespace

struct FlowGraph::Impl {
  using Preflow = lemon::Preflow<lemon::ListDigraph, lemon::ListDigraph::ArcMap<Cap>>;
  lemon::ListDigraph g;
  lemon::ListDigraph::ArcMap<Cap> cap{g};
  std::vector<lemon::ListDigraph::Node> nodes;
  std::map<std::pair<int, int>, lemon::ListDigraph::Arc> arcs;
  // One Preflow for every max-flow while the node set stands: its flow and excess maps follow the
  // graph's arcs and nodes as they come and go, but its elevator is sized to the nodes it first
  // saw, so adding a node drops it. Each run initializes it afresh (Preflow::init), so a reused
  // one computes what a new one would, without allocating its maps each time.
  std::unique_ptr<Preflow> preflow;
  // The source of max_flow(s, t, limit): a node of its own (not one of `nodes`), fed to s by an
  // arc of capacity `limit` for the one run.
  lemon::ListDigraph::Node limiter = lemon::INVALID;

  Cap run(lemon::ListDigraph::Node s, lemon::ListDigraph::Node t) {
    if (!preflow)
      preflow = std::make_unique<Preflow>(g, cap, s, t);
    else
      preflow->source(s).target(t);
    preflow->runMinCut();
    return preflow->flowValue();
  }

  // max_flow(s, t, limit), and where `side` is given and the flow is below `limit`, the least
  // source side into it (FlowGraph::max_flow).
  Cap limited(int s, int t, Cap limit, std::vector<char>* side) {
    if (limit <= 0) return 0;
    if (limiter == lemon::INVALID) {
      preflow.reset();  // (a node more)
      limiter = g.addNode();
    }
    const lemon::ListDigraph::Arc in = g.addArc(limiter, nodes[s]);
    cap[in] = limit;
    const Cap value = run(limiter, nodes[t]);
    if (side && value < limit) least_source_side(*side);
    g.erase(in);
    return value;
  }

  // FlowGraph::max_flows_freeing: the first max-flow by Preflow, then per v the flows into v over
  // that flow's residual graph (Residual).
  void freeing(int s, int t, Cap limit, const std::vector<int>& vs,
               const std::function<bool(int, Cap)>& each) {
    if (limit <= 0) {
      for (int v : vs)
        if (!each(v, 0)) return;
      return;
    }
    if (limiter == lemon::INVALID) {
      preflow.reset();  // (a node more)
      limiter = g.addNode();
    }
    const lemon::ListDigraph::Arc in = g.addArc(limiter, nodes[s]);
    cap[in] = limit;
    struct Erase {  // the limiter's arc goes however this ends (`each` may throw)
      lemon::ListDigraph& g;
      lemon::ListDigraph::Arc a;
      ~Erase() { g.erase(a); }
    } erase{g, in};
    const Cap first = run(limiter, nodes[t]);
    if (first >= limit) {
      for (int v : vs)
        if (!each(v, limit)) return;
      return;
    }
    preflow->startSecondPhase();  // a maximum flow, not a preflow
    Residual r(g, cap, *preflow, g.id(limiter));
    for (int v : vs) {
      const Cap more = v == t ? 0 : r.flow_into(g.id(nodes[static_cast<size_t>(v)]), limit - first);
      if (!each(v, first + more)) return;
    }
  }

  // FlowGraph::max_flows_from: the nodes Receivers proves over the graph's arcs answered `limit`,
  // the others by a limited max-flow each (proving more where it reaches `limit`).
  void from(int s, Cap limit, const std::vector<int>& vs,
            const std::function<bool(int, Cap)>& each) {
    if (limit <= 0) {
      for (int v : vs)
        if (!each(v, 0)) return;
      return;
    }
    std::vector<int> index(static_cast<size_t>(g.maxNodeId() + 1), -1);
    for (size_t i = 0; i < nodes.size(); ++i)
      index[static_cast<size_t>(g.id(nodes[i]))] = static_cast<int>(i);
    Receivers proven(nodes.size(), limit);
    auto prove = [&](int x) {
      proven.add(x, [&](int y, auto&& way) {
        for (lemon::ListDigraph::OutArcIt a(g, nodes[static_cast<size_t>(y)]); a != lemon::INVALID;
             ++a) {
          const auto id = static_cast<size_t>(g.id(g.target(a)));
          way(id < index.size() ? index[id] : -1, cap[a]);  // (not the limiter, if added since)
        }
      });
    };
    prove(s);
    for (int v : vs) {
      Cap value = limit;
      if (!proven.known(v)) {
        value = limited(s, v, limit, nullptr);
        if (value >= limit) prove(v);
      }
      if (!each(v, value)) return;
    }
  }

  // The nodes the limiter (the source of the run just made by `limited`) reaches in the residual
  // graph of a maximum flow (the second phase turns the first one's preflow into one).
  void least_source_side(std::vector<char>& side) {
    preflow->startSecondPhase();
    lemon::ListDigraph::NodeMap<char> seen(g, 0);
    std::vector<lemon::ListDigraph::Node> todo{limiter};
    seen[todo.front()] = 1;
    auto reach = [&](lemon::ListDigraph::Node y) {
      if (!seen[y]) {
        seen[y] = 1;
        todo.push_back(y);
      }
    };
    while (!todo.empty()) {
      const lemon::ListDigraph::Node x = todo.back();
      todo.pop_back();
      for (lemon::ListDigraph::OutArcIt a(g, x); a != lemon::INVALID; ++a)
        if (preflow->flow(a) < cap[a]) reach(g.target(a));
      for (lemon::ListDigraph::InArcIt a(g, x); a != lemon::INVALID; ++a)
        if (preflow->flow(a) > 0) reach(g.source(a));
    }
    for (size_t i = 0; i < nodes.size(); ++i) side[i] = seen[nodes[i]];
  }
};

FlowGraph::FlowGraph(int nodes) : impl_(std::make_unique<Impl>()) {
  for (int i = 0; i < nodes; ++i) add_node();
}

FlowGraph::~FlowGraph() = default;

FlowGraph::FlowGraph(const FlowGraph& other) : FlowGraph(other.num_nodes()) {
  for (const auto& [uv, arc] : other.impl_->arcs)
    set_capacity(uv.first, uv.second, other.impl_->cap[arc]);
}

int FlowGraph::add_node() {
  impl_->preflow.reset();
  impl_->nodes.push_back(impl_->g.addNode());
  return static_cast<int>(impl_->nodes.size()) - 1;
}

int64_t FlowGraph::num_arcs() const { return static_cast<int64_t>(impl_->arcs.size()); }

int FlowGraph::num_nodes() const { return static_cast<int>(impl_->nodes.size()); }

FlowGraph::Cap FlowGraph::capacity(int u, int v) const {
  auto it = impl_->arcs.find({u, v});
  return it == impl_->arcs.end() ? 0 : impl_->cap[it->second];
}

void FlowGraph::set_capacity(int u, int v, Cap c) {
  auto it = impl_->arcs.find({u, v});
  if (c <= 0) {
    if (it != impl_->arcs.end()) {
      impl_->g.erase(it->second);
      impl_->arcs.erase(it);
    }
    return;
  }
  if (it == impl_->arcs.end())
    it =
        impl_->arcs.emplace(std::make_pair(u, v), impl_->g.addArc(impl_->nodes[u], impl_->nodes[v]))
            .first;
  impl_->cap[it->second] = std::min(c, kInfinite);
}

std::vector<int> FlowGraph::successors(int u) const {
  std::vector<int> out;
  for (auto it = impl_->arcs.lower_bound({u, -1}); it != impl_->arcs.end() && it->first.first == u;
       ++it)
    out.push_back(it->first.second);
  return out;
}

std::vector<int> FlowGraph::predecessors(int v) const {
  std::vector<int> out;
  for (const auto& [uv, arc] : impl_->arcs)
    if (uv.second == v) out.push_back(uv.first);
  return out;
}

std::vector<std::pair<int, int>> FlowGraph::degrees() const {
  std::vector<std::pair<int, int>> d(impl_->nodes.size(), {0, 0});
  for (const auto& [uv, arc] : impl_->arcs) {
    ++d[static_cast<size_t>(uv.second)].first;
    ++d[static_cast<size_t>(uv.first)].second;
  }
  return d;
}

void FlowGraph::isolate(int u) {
  for (auto it = impl_->arcs.begin(); it != impl_->arcs.end();) {
    if (it->first.first == u || it->first.second == u) {
      impl_->g.erase(it->second);
      it = impl_->arcs.erase(it);
    } else {
      ++it;
    }
  }
}

FlowGraph::Cap FlowGraph::max_flow(int s, int t) {
  return impl_->run(impl_->nodes[s], impl_->nodes[t]);
}

FlowGraph::Cap FlowGraph::max_flow(int s, int t, Cap limit, std::vector<char>& least_source_side) {
  least_source_side.assign(impl_->nodes.size(), 0);
  return impl_->limited(s, t, limit, &least_source_side);
}

void FlowGraph::max_flows_freeing(int s, int t, Cap limit, const std::vector<int>& vs,
                                  const std::function<bool(int, Cap)>& each) {
  impl_->freeing(s, t, limit, vs, each);
}

void FlowGraph::max_flows_from(int s, Cap limit, const std::vector<int>& vs,
                               const std::function<bool(int, Cap)>& each) {
  impl_->from(s, limit, vs, each);
}

FlowGraph::Cap FlowGraph::max_flow(int s, int t, Cap limit) {
  return impl_->limited(s, t, limit, nullptr);
}

}  // namespace tenet::synth
