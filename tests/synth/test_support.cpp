#include "tests/synth/test_support.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "synth/cost/timing.hpp"
#include "synth/producers.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/routing.hpp"

namespace tenet::synth::testing {

using topo::Topology;

Topology random_topology(std::mt19937_64& rng, int max_npus, bool steps) {
  const int npus = 3 + static_cast<int>(rng() % (max_npus - 2));
  const int switches = static_cast<int>(rng() % 3);
  topo::TopologyBuilder b("random");
  std::vector<NodeId> nodes;
  for (int i = 0; i < npus; ++i) nodes.push_back(b.add_npu("", rng() % 5 == 0));
  for (int j = 0; j < switches; ++j) nodes.push_back(b.add_switch());
  auto bw = [&] { return Bandwidth{1'000'000'000} * static_cast<Bandwidth>(1 + rng() % 100); };
  auto lat = [&] { return Time{10'000} * static_cast<Time>(rng() % 200); };
  std::vector<NodeId> cycle = nodes;
  std::shuffle(cycle.begin(), cycle.end(), rng);
  LinkId links = 0;
  for (size_t i = 0; i < cycle.size(); ++i, ++links)
    b.add_link(cycle[i], cycle[(i + 1) % cycle.size()], bw(), lat());
  const int extra = static_cast<int>(rng() % (2 * nodes.size() + 1));
  for (int k = 0; k < extra; ++k) {
    NodeId x = nodes[rng() % nodes.size()], y = nodes[rng() % nodes.size()];
    if (x == y) continue;
    if (rng() % 2) {
      b.add_bidirectional(x, y, bw(), lat());
      links += 2;
    } else {
      b.add_link(x, y, bw(), lat());
      ++links;
    }
  }
  if (steps)
    for (LinkId l = 0; l < links; ++l) {
      const Time pick[] = {0, 300'000, 2'600'000, static_cast<Time>(rng() % 3'000'001)};
      b.set_link_step(l, pick[rng() % 4]);
    }
  Topology t = b.build();
  t.set_charges_steps(steps);
  return t;
}

std::vector<Topology> fabrics(std::initializer_list<const char*> specs, std::mt19937_64& rng,
                              int random) {
  std::vector<Topology> out;
  for (const char* spec : specs) out.push_back(topo::generate(spec));
  for (int i = 0; i < random; ++i) out.push_back(random_topology(rng, 8));
  return out;
}

void for_each_producer(const Topology& t, const Collective& c, Bytes chunk,
                       const std::function<void(const Algorithm&, const std::string& who)>& f) {
  std::vector<std::pair<std::string, SynthOptions>> producers;
  for (SynthMethod m : {SynthMethod::Auto, SynthMethod::Matcher, SynthMethod::PlanMatcher,
                        SynthMethod::PlanPipeline})
    for (LinkModel model : {LinkModel::Pipelined, LinkModel::Hold}) {
      SynthOptions o;
      o.method = m, o.link_model = model;
      producers.emplace_back("tenet", o);
    }
  for (const std::string& name : algorithm_names(c.kind))
    if (name != "tenet") producers.emplace_back(name, SynthOptions{});
  for (const auto& [name, o] : producers) {
    Algorithm a;
    try {
      a = make_algorithm(name, t, c, chunk, o);
    } catch (const NotApplicable&) {
      continue;
    }
    f(a, fmt::format("{} ({}, {})", name, to_string(o.method), to_string(o.link_model)));
  }
}

Collective random_collective(std::mt19937_64& rng, const Topology& t, int max_chunks) {
  Collective c;
  c.kind = kAllCollectives[rng() % kAllCollectives.size()];
  c.chunks_per_npu = 1 + static_cast<int>(rng() % max_chunks);
  for (NodeId v = 0; v < t.num_npus(); ++v) c.ranks.push_back(v);
  if (!reduces(c.kind) && t.num_npus() > 2 && rng() % 2) {
    std::shuffle(c.ranks.begin(), c.ranks.end(), rng);
    c.ranks.resize(2 + rng() % (t.num_npus() - 1));
  }
  c.root = static_cast<int>(rng() % c.ranks.size());
  return c;
}

Topology charging(Topology t) {
  t.set_charges_steps(true);
  return t;
}

Topology example_with_steps(const std::string& file) {
  return charging(topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/" + file));
}

bool each_owner_sends_as_reduced(const Algorithm& reduced, const Algorithm& gathered) {
  const Collective& c = gathered.collective;
  const auto chunks = static_cast<size_t>(c.num_chunks());
  std::vector<TransferId> last_in(chunks, -1);
  std::vector<TransferId> first_out(chunks, std::numeric_limits<TransferId>::max());
  auto owner = [&](ChunkId ch) { return c.ranks[c.origin(ch)]; };
  for (TransferId i = 0; i < static_cast<TransferId>(reduced.size()); ++i) {
    const Transfer& x = reduced[i];
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch)
      if (x.op == Op::Reduce && x.dst == owner(ch)) last_in[ch] = i;
  }
  for (TransferId i = static_cast<TransferId>(gathered.size()) - 1; i >= 0; --i) {
    const Transfer& x = gathered[i];
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch)
      if (x.op == Op::Copy && x.src == owner(ch)) first_out[ch] = i;
  }
  std::map<std::tuple<int, TransferId, TransferId>, ChunkId> in_order;
  for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
    // (Every chunk is reduced into and sent from its owner: else the order says nothing.)
    if (last_in[ch] < 0 || first_out[ch] == std::numeric_limits<TransferId>::max()) return false;
    in_order.emplace(std::tuple(c.origin(ch), first_out[ch], last_in[ch]), ch);
  }
  int previous_owner = -1;
  TransferId last = -1;
  for (const auto& [key, ch] : in_order) {
    const auto [o, out, in] = key;
    if (o == previous_owner && in < last) return false;
    previous_owner = o;
    last = in;
  }
  return true;
}

LinkId link_between(const Topology& t, NodeId u, NodeId v) {
  for (LinkId l : t.out_links(u))
    if (t.link(l).dst == v) return l;
  throw std::logic_error("no link between the nodes");
}

Algorithm in_serial_channel(const Topology& t, const Algorithm& a, Bandwidth rate) {
  std::vector<TransferSpec> specs;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    specs.push_back(a.spec(id));
    specs.back().rate = rate;
    specs.back().channel = 1;
  }
  Algorithm b = with_transfers(a, specs);
  b.serial_channels = true;
  time(t, b);
  return b;
}

namespace {

struct Hop {
  NodeId to;
  std::vector<LinkId> route;
};

// NPU-level graph: u -> v when a route joins them through pass-through nodes only.
std::vector<std::vector<Hop>> npu_graph(const Topology& t) {
  topo::Router router(t);
  std::vector<std::vector<Hop>> g(t.num_npus());
  for (NodeId u = 0; u < t.num_npus(); ++u)
    for (NodeId v = 0; v < t.num_npus(); ++v)
      if (u != v)
        if (auto r = router.route(u, v)) g[u].push_back({v, r->links});
  return g;
}

struct Tree {
  std::vector<NodeId> parent;  // toward the root (reverse) or from the root (forward)
  std::vector<std::vector<LinkId>> route;
  std::vector<int> depth;
  std::vector<NodeId> order;  // breadth-first
};

// forward: routes lead parent -> child; reverse: child -> parent (towards the root).
Tree bfs(const std::vector<std::vector<Hop>>& g, NodeId root, bool forward) {
  const int n = static_cast<int>(g.size());
  std::vector<std::vector<std::pair<NodeId, const std::vector<LinkId>*>>> into(n);
  if (!forward)
    for (NodeId u = 0; u < n; ++u)
      for (const Hop& h : g[u]) into[h.to].push_back({u, &h.route});
  Tree tr{
      std::vector<NodeId>(n, -1), std::vector<std::vector<LinkId>>(n), std::vector<int>(n, -1), {}};
  tr.depth[root] = 0;
  std::queue<NodeId> q;
  q.push(root);
  while (!q.empty()) {
    NodeId u = q.front();
    q.pop();
    tr.order.push_back(u);
    auto visit = [&](NodeId v, const std::vector<LinkId>& r) {
      if (tr.depth[v] >= 0) return;
      tr.depth[v] = tr.depth[u] + 1;
      tr.parent[v] = u;
      tr.route[v] = r;
      q.push(v);
    };
    if (forward)
      for (const Hop& h : g[u]) visit(h.to, h.route);
    else
      for (auto& [v, r] : into[u]) visit(v, *r);
  }
  return tr;
}

// Nodes on the tree paths from each of `targets` up to the root.
std::vector<char> needed_nodes(const Tree& tr, const std::vector<NodeId>& targets) {
  std::vector<char> keep(tr.parent.size(), 0);
  for (NodeId v : targets)
    for (NodeId at = v; at >= 0 && !keep[at]; at = tr.parent[at]) keep[at] = 1;
  return keep;
}

void broadcast_chunk(Algorithm& a, const std::vector<std::vector<Hop>>& g, ChunkId c, NodeId from,
                     const std::vector<NodeId>& targets) {
  const Tree tr = bfs(g, from, true);
  const std::vector<char> keep = needed_nodes(tr, targets);
  std::vector<TransferId> brought(g.size(), -1);
  for (NodeId v : tr.order) {
    if (v == from || !keep[v]) continue;
    std::vector<TransferId> deps;
    if (brought[tr.parent[v]] >= 0) deps.push_back(brought[tr.parent[v]]);
    brought[v] = a.add(c, tr.parent[v], v, tr.route[v], Op::Copy, deps);
  }
}

void reduce_chunk(Algorithm& a, const std::vector<std::vector<Hop>>& g, ChunkId c, NodeId owner,
                  const std::vector<NodeId>& members) {
  const Tree tr = bfs(g, owner, false);
  const std::vector<char> keep = needed_nodes(tr, members);
  std::vector<char> is_member(g.size(), 0);
  for (NodeId v : members) is_member[v] = 1;
  std::vector<NodeId> nodes;
  for (NodeId v : tr.order)
    if (keep[v] && v != owner) nodes.push_back(v);
  std::stable_sort(nodes.begin(), nodes.end(),
                   [&](NodeId x, NodeId y) { return tr.depth[x] > tr.depth[y]; });
  std::vector<std::vector<TransferId>> arrivals(g.size());
  for (NodeId v : nodes) {
    const NodeId up = tr.parent[v];
    // A node that holds nothing yet takes the first partial as a copy; later ones reduce into it
    // and wait for that copy.
    const bool empty = !is_member[up] && arrivals[up].empty();
    std::vector<TransferId> deps = arrivals[v];
    if (!is_member[up] && !arrivals[up].empty()) deps.push_back(arrivals[up].front());
    arrivals[up].push_back(a.add(c, v, up, tr.route[v], empty ? Op::Copy : Op::Reduce, deps));
  }
}

}  // namespace

Algorithm tree_algorithm(const Topology& t, const Collective& c, Bytes chunk_bytes,
                         LinkModel model) {
  Algorithm a;
  a.name = "tree";
  a.collective = c;
  a.topology_fingerprint = t.fingerprint();
  a.topology_name = t.name();
  a.chunk_bytes = chunk_bytes;
  a.link_model = model;
  const auto g = npu_graph(t);
  const int p = c.num_ranks();
  auto ranks_needing = [&](ChunkId ch) {
    std::vector<NodeId> v;
    for (int r = 0; r < p; ++r)
      if (c.finally_needs(r, ch)) v.push_back(c.ranks[r]);
    return v;
  };
  const ChunkId chunks = c.num_chunks();
  if (!reduces(c.kind)) {
    for (ChunkId ch = 0; ch < chunks; ++ch)
      broadcast_chunk(a, g, ch, c.ranks[c.origin(ch)], ranks_needing(ch));
  } else {
    for (ChunkId ch = 0; ch < chunks; ++ch) {
      const int owner = c.kind == CollectiveKind::Reduce ? c.root : c.origin(ch);
      reduce_chunk(a, g, ch, c.ranks[owner], c.ranks);
    }
    if (c.kind == CollectiveKind::AllReduce)
      for (ChunkId ch = 0; ch < chunks; ++ch)
        broadcast_chunk(a, g, ch, c.ranks[c.origin(ch)], c.ranks);
  }
  time(t, a);
  return a;
}

std::string replaced(std::string text, std::string_view from, std::string_view to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) throw std::logic_error("test fixture: text to replace not found");
  return text.substr(0, at) + std::string(to) + text.substr(at + from.size());
}

std::string violation_text(const Report& r) {
  std::string s;
  for (const Violation& v : r.violations) s += "\n  " + v.message;
  for (const Warning& w : r.warnings) s += "\n  warning: " + w.message;
  return s;
}

}  // namespace tenet::synth::testing
