// A hierarchical flow plan for clusters of servers: the All-Gather of NVSwitch servers joined by a
// slower scale-out network (NIC rails, a leaf/spine fabric).
//
// The spanning-tree plan (synth/plans/tree_packing.hpp) reaches the cut bound in the fluid limit,
// but on such clusters it needs hundreds of trees through two switch levels, whose pipelines lose
// to fill and drain. The structure of the cluster gives a plan directly: every chunk crosses the
// scale-out network once per other server, on its own rail (from its root to the NPU of the same
// position in that server), and then spreads inside each server over the NVSwitch. Per NPU this
// takes S - 1 chunks' worth over its NIC and (S - 1) (G - 1) + G - 1 over its NVSwitch port (S
// servers of G NPUs), the least either level can take: the time is the slower level's, which on
// NIC-bound clusters is the cut bound.
//
// Each NPU pair the plan uses gets one way (a route over the fabric, chosen among the equal-cost
// and the quickest routes to balance the plan's load over the links), and a rate: its share of the
// way's busiest link in proportion to the data it carries (the fluid rates), so that a fat link
// carries all its ways at once, each continuously, instead of one way at a time at full speed. The
// link-chunk matcher then decides when each chunk goes, confined to its ways.
//
// Where no servers are detected but switches join the NPUs (a leaf-spine, a dragonfly, a single
// switch), the plan is *flat*: every NPU is a server of its own, so every chunk goes from its root
// straight to every other NPU, each way at its fluid share. A transfer pays its per-step cost while
// holding only its share of the links (docs/model.md), so the N - 1 ways out of an NPU pay their
// steps side by side, where a schedule of full-rate transfers pays them one after another. Where
// the links out of a group of switches would hold that back (a dragonfly's global links carry
// every pair of its groups' NPUs), the groups (pods) stand for servers: a chunk crosses to each
// other pod once and spreads inside it (plan_groups).
#pragma once

#include <optional>
#include <vector>

#include "synth/auto/deadline.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/routing.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

struct ServerWay {
  NodeId src = 0, dst = 0;
  std::vector<LinkId> route;
  Bandwidth rate = 0;  // 0: the route's narrowest bandwidth (the way is alone on its busiest link)
};

class ServerPlan {
 public:
  const std::vector<std::vector<NodeId>>& servers() const { return servers_; }
  const std::vector<ServerWay>& ways() const { return ways_; }
  // The NPU that hands data of `root` to `v`: root itself (v in its server, or v its rail peer in a
  // server its chunks enter directly), root's rail peer in v's server, or (relayed over server
  // pods) root's rail peer in the server its chunks enter v's pod by.
  NodeId parent(NodeId root, NodeId v) const {
    const int a = server_of_[root], b = server_of_[v];
    if (a == b) return root;
    if (local_of_[v] != local_of_[root]) return servers_[b][local_of_[root]];
    const int e = entry(a, b);
    return e == b ? root : servers_[e][local_of_[root]];
  }
  // The server through which server a's chunks enter server b (b itself: directly, on their rails).
  int entry(int a, int b) const {
    return entry_.empty() ? b : entry_[static_cast<size_t>(a) * servers_.size() + b];
  }
  // Relayed over pods of servers (relayed_over_pods): some server's chunks enter another through a
  // third.
  bool relayed() const { return !entry_.empty(); }
  // The way from parent(root, v) to v (an index into ways()).
  int way(NodeId root, NodeId v) const { return way_between(parent(root, v), v); }
  // The way from u to v, both in one server or at one position (on one rail), or -1.
  int way_between(NodeId u, NodeId v) const {
    if (server_of_[u] == server_of_[v]) return intra_[static_cast<size_t>(u) * per_ + local_of_[v]];
    if (local_of_[u] == local_of_[v])
      return rail_[static_cast<size_t>(u) * servers_.size() + server_of_[v]];
    return -1;
  }
  int server_of(NodeId v) const { return server_of_[v]; }
  // Every NPU a server of its own: every pair joined directly, each way at its share.
  bool flat() const { return per_ == 1; }
  // Its servers are pods of switches (topo::detect_pods), not servers: plan_groups.
  bool pods() const { return pods_; }
  // Over pods: whether the ways inside share what the rails leave of the links (none waits for
  // the rails), or all of it (those that do not fit beside the rails wait for them).
  bool rails_beside() const { return rails_beside_; }
  int position(NodeId v) const { return local_of_[v]; }  // within its server

 private:
  friend std::optional<ServerPlan> plan_servers(const topo::Topology&, Bytes, LinkModel, int,
                                                const GiveUp*, topo::RouteMemo*);
  friend std::optional<ServerPlan> relayed_over_pods(const topo::Topology&, const ServerPlan&,
                                                     LinkModel);
  // This plan over pods (its ways routed, each carrying `way_load` in roots' shares) at its rates:
  // the rails at their shares among the rails alone, the ways inside at theirs among themselves,
  // of all the links' capacity or of what the rails leave, whichever pod_estimate says ends sooner
  // (plan_servers).
  ServerPlan rated_over_pods(const topo::Topology& t, const std::vector<double>& way_load,
                             Bytes chunk_bytes, LinkModel model) const;
  std::vector<std::vector<NodeId>> servers_;
  std::vector<int> server_of_, local_of_;
  size_t per_ = 0;
  bool pods_ = false;
  bool rails_beside_ = false;
  std::vector<ServerWay> ways_;
  std::vector<int> intra_, rail_;  // per NPU and position / server: its way there (-1: itself)
  std::vector<int> entry_;         // per pair of servers a S + b: entry(a, b); empty: b
};

// The plan of `t` for an All-Gather over every NPU, its ways' routes among the least-latency and
// the quickest routes for chunks of `chunk_bytes` (at most `ecmp` of each kind per pair; in a flat
// plan at least kFlatPlanRoutes), or nothing when some way has no route or `t` has neither servers
// nor switches. Its servers are topo::detect_servers'; where there are none and `t` has switches,
// the plan is flat (ServerPlan::flat). Under `hold` a transfer holds its links whole, so the ways
// keep their full rate. A `give_up` is polled once per source's routes (a flat plan of 1024 NPUs
// is seconds of work). `routes`: route searches kept from plans of `t` at other chunk sizes (the
// least-latency routes do not depend on it), or none.
std::optional<ServerPlan> plan_servers(const topo::Topology& t, Bytes chunk_bytes, LinkModel model,
                                       int ecmp = 8, const GiveUp* give_up = nullptr,
                                       topo::RouteMemo* routes = nullptr);

// `plan` relayed over pods of servers: where servers hang off the same switches outside them (a
// leaf's servers: `topo::detect_servers`' servers grouped by the switches their NPUs reach
// outside their own), each server's chunks cross into another pod once, on their rails to the
// server at their server's index in its pod (modulo the pod's size), which hands them on along its
// rails to the other servers of its pod: the links between pods carry each chunk once per other
// pod, not once per server beyond them (2:1 spines, which carried twice what the NICs under them
// send). Same ways and routes, each at its fluid share of what it carries now. Nothing where
// there are fewer than two pods or every pod holds one server, over pods or flat.
std::optional<ServerPlan> relayed_over_pods(const topo::Topology& t, const ServerPlan& plan,
                                            LinkModel model);

// `plan`'s ways for an All-Gather of `chunks_per_npu` chunks of `chunk_bytes` per NPU, its rail
// ways staggered. At their fluid shares the S - 1 rail ways out of an NPU deliver their chunks all
// at once at the end of each round, and the server's NVSwitch forwards them only then: the levels
// run one after another. Run g at a time instead (each at 1 / g of its NIC, in (S - 1) k / g
// rounds), and a round's chunks are forwarded while the next ones cross the rails. Each round pays
// the rail's per-step cost s once, and the forwarding of the last round is left over:
//   overhead(g) = (S - 1) k s / g + g T_intra / ((S - 1) k),
// least at g = (S - 1) k sqrt(s / T_intra), where T_intra is the NPU's forwarding inside its
// server (its busiest way's S k chunks at its rate, steps included). The rails then move at their
// narrowest link's bandwidth / g (never below their plan's rate), so that the matcher's event loop
// admits g at a time. The plan's own rates stay where neither integer next to that g beats the
// fluid shares (g = S - 1); where a rail's fluid share is less than its NIC's (S - 1)-th part (a
// spine the rails share is the narrower, and g at a time would not fill it); in flat plans
// (nothing to forward), relayed ones (the model's rails are direct); under `hold`.
std::vector<ServerWay> staggered_ways(const topo::Topology& t, const ServerPlan& plan,
                                      int chunks_per_npu, Bytes chunk_bytes, LinkModel model);

// The overhead model's time for that All-Gather on staggered_ways' ways: per NPU, the NIC's rounds
// and the last round's forwarding, or the first round's arrival and all the forwarding, whichever
// is longer, plus the latency of a rail and of a way inside the server; the slowest NPU's. Where
// the rails pay steps and a way's chunks make fewer messages (synth/plans/rail_messages.hpp), and
// `messages` (PortfolioOptions::rail_messages), per NPU the less of that and the same in messages
// (a step per message at the fluid shares, one round's forwarding over), as the server plan keeps
// the faster of the two. An
// estimate, not a bound: it leaves out the matcher's choices and every other link. Nothing where
// staggered_ways would leave some NPU's rails at the plan's rates for want of the model (a flat or
// relayed plan, `hold`, rails sharing links, nothing to forward). It models the rails as
// staggered_ways runs them: not where the chunks are dealt over unequal rails
// (synth/plans/rail_deal.hpp).
std::optional<Time> staggered_estimate(const topo::Topology& t, const ServerPlan& plan,
                                       int chunks_per_npu, Bytes chunk_bytes, LinkModel model,
                                       bool messages = true);

// The fluid model's time for an All-Gather of `chunks_per_npu` chunks of `chunk_bytes` per NPU on a
// flat `plan`: every way carries its root's chunks one after another, each holding the way's share
// of its links for its per-step cost and its bytes at the way's rate (nothing contends: the fluid
// shares fill every link at most once), and the last arrives a route latency later; the slowest
// way's. A doubling of the count adds a step to every way and takes nothing off. An estimate, not a
// bound: the matcher may hold a way back. Nothing where the plan is not flat, or under `hold`.
std::optional<Time> flat_estimate(const topo::Topology& t, const ServerPlan& plan,
                                  int chunks_per_npu, Bytes chunk_bytes, LinkModel model);

// The time for that All-Gather on a plan over pods (ServerPlan::pods): an NPU's rails and the ways
// inside its pod share its own links, the rails taking their shares among the rails alone. Where
// the ways inside share what the rails leave (ServerPlan::rails_beside), per NPU the longer of its
// slowest rail's k chunks in a row and its slowest way inside's S k; else the ways that do not
// fit beside the rails wait until they are through, and the two add up. Each with its latency;
// the slowest NPU's. A doubling of the count takes nothing off the rails' time (each carries the
// same bytes, a step more). An estimate, not a bound: which ways wait is the matcher's choice.
// Nothing where the plan is not over pods, or under `hold`.
std::optional<Time> pod_estimate(const topo::Topology& t, const ServerPlan& plan,
                                 int chunks_per_npu, Bytes chunk_bytes, LinkModel model);

// The estimate that fits `plan`: flat_estimate, pod_estimate or staggered_estimate.
std::optional<Time> plan_estimate(const topo::Topology& t, const ServerPlan& plan,
                                  int chunks_per_npu, Bytes chunk_bytes, LinkModel model,
                                  bool messages = true);

// Whether plan_servers makes a plan of `t` without servers, if any: it has switches and no
// servers. The plan is flat, or over pods (plan_groups).
bool flat_servers(const topo::Topology& t);

// The groups plan_servers makes its plan over: `t`'s servers (topo::detect_servers); where there
// are none and switches join the NPUs, its pods (topo::detect_pods) where the links out of a pod
// would hold a flat plan back (a pod's NPUs send every NPU outside it their chunk, |pod| (N -
// |pod|) chunks, through them, in longer than an NPU's N - 1 through its own links: a dragonfly's
// global links, an oversubscribed leaf-spine's spines), else every NPU a group of its own (flat);
// empty where there is no plan. Over pods a chunk crosses to each other pod once, to the NPU at
// its root's position there, and spreads inside it through its switches.
std::vector<std::vector<NodeId>> plan_groups(const topo::Topology& t);

// Fluid rates under `pipelined`: each way its share of its busiest link in proportion to the data
// it carries (`load[i]`, in any unit), 0 where that is the route's narrowest bandwidth or the way
// carries nothing. Under `hold` a transfer holds its links whole, so every way keeps its full rate
// (0). `capacity`, when given: what each link has to share (bytes per second), in place of its
// bandwidth.
void set_fluid_rates(const topo::Topology& t, LinkModel model, std::vector<ServerWay>& ways,
                     const std::vector<double>& load,
                     const std::vector<double>* capacity = nullptr);

}  // namespace tenet::synth
