// Network backends of the simulator, behind one interface (chosen by `--network`):
//   analytical             no contention: a message of b bytes at rate r (by default the narrowest
//                          bandwidth on its route) holds r of its route's links for b / r and
//                          arrives the summed latency after that (ASTRA-sim's congestion-unaware
//                          backend, and the shared link model).
//   analytical-congestion  flow level: concurrent messages share every link of their routes
//                          max-min fairly (a message never above its own rate), recomputed
//                          whenever a message starts or ends; the summed latency is added once,
//                          after the last byte (pipelined across hops, not store-and-forward).
//   packet                 packet level (sim/packet_network.hpp): messages split into packets
//                          that cross the route hop by hop through finite, credit-controlled
//                          buffers, with arbitration at every contended output port.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <map>
#include <utility>

#include "sim/event_queue.hpp"
#include "topo/routing.hpp"
#include "topo/topology.hpp"

namespace tenet::sim {

struct Message {
  topo::NodeId src = 0, dst = 0;
  Bytes bytes = 0;
  std::span<const topo::LinkId> route;  // valid during send(); a backend copies what it keeps
  // Bytes per second it moves at, at most the route's narrowest bandwidth; 0: that bandwidth.
  Bandwidth rate = 0;
  // Its per-step cost (synth::RouteCost::step): on the analytical network it holds its rate of
  // the route for step + bytes / rate, as synth::time charges it; the congestion-aware and packet
  // networks start moving it a step later, the links free for others meanwhile.
  Time step = 0;
};

// Options of the packet-level backend (the others ignore them).
struct PacketConfig {
  enum class Routing { Source, Ecmp };
  enum class Arbitration { RoundRobin, FixedPriority };
  Bytes mtu = 4096;  // payload bytes per packet
  Bytes header = 0;  // bytes added to every packet on the wire
  // Per input port, unless the topology gives the link its own (topo::Link::buffer); 0: enough
  // for the port's credit round trip (see PacketNetwork).
  Bytes buffer = 0;
  bool cut_through = false;  // forward a packet once its header has arrived
  // Source: the route each message carries (the algorithm's, or the topology layer's deterministic
  // shortest path). Ecmp: each message is a flow hashed onto one of the least-cost routes. Also
  // read by analytical-congestion.
  Routing routing = Routing::Source;
  Arbitration arbitration = Arbitration::RoundRobin;
  // Packets a run may cut in all (about 7 million a second on one core): past it the run stops with
  // an error naming the MTU, instead of running for hours (a 1 B MTU on a training iteration).
  uint64_t max_packets = uint64_t{1} << 28;
};
PacketConfig::Routing parse_routing(std::string_view name);
PacketConfig::Arbitration parse_arbitration(std::string_view name);
std::string_view to_string(PacketConfig::Routing r);
std::string_view to_string(PacketConfig::Arbitration a);

// Per-flow ECMP: message number `flow` from src to dst hashed onto one of the least-cost routes
// between them (topo::Router::equal_cost_routes, cached per pair); a message without a route, or
// between nodes with no route through switches, keeps its own.
class EcmpRoutes {
 public:
  explicit EcmpRoutes(const topo::Topology& t) : router_(t) {}
  std::vector<topo::LinkId> pick(const Message& m, uint64_t flow);

 private:
  topo::Router router_;
  std::map<std::pair<topo::NodeId, topo::NodeId>, std::vector<topo::Route>> routes_;
};

struct Interval {
  Time start = 0, end = 0;
  double share = 1.0;  // of the link's bandwidth in use (below 1 only on analytical-congestion)
};

struct LinkReport {
  std::string name;            // "link 3 (npu0 -> sw0)"
  Time busy = 0;               // time it carried data
  uint64_t packets = 0;        // packets it carried (packet backend)
  Bytes buffer = 0;            // its receiving port's buffer (packet backend)
  Bytes deepest_queue = 0;     // the most that buffer ever held
  uint64_t credit_stalls = 0;  // times the port had a packet to send but no credit for it
  Time stall_time = 0;         // time spent so
  std::vector<Interval>
      activity;  // busy intervals in time order, when kept (Network::keep_activity)
  // analytical only: the most bandwidth asked of the link at once, as a share of its own (above 1:
  // the contention-free model let concurrent messages overrun it), and when that first happened.
  double peak_demand = 0;
  Time peak_demand_at = 0;
};

struct NetworkReport {
  bool packet_level = false;
  // 0: every link's activity is its exact busy intervals. Otherwise the run kept more than
  // Network::kExactActivity of them and summed each link's into slices of this width instead (at
  // most Network::kActivitySlices over the run, so a utilization over 24 slices of the run rests on
  // at least 21 of them each): each interval of activity is then one such slice, its share the
  // slice's mean utilization.
  Time activity_slice = 0;
  uint64_t messages = 0, packets = 0, packet_hops = 0, credit_stalls = 0;
  std::vector<LinkReport> links;
};

// Per each of `bins` equal slices of [0, end): the fraction of the link's bandwidth `activity` used
// (each interval weighted by its share), at most 1.
std::vector<double> utilization_over_time(const std::vector<Interval>& activity, Time end,
                                          int bins);

class Network {
 public:
  Network(const topo::Topology& t, EventQueue& events)
      : topo_(t), events_(events), busy_(t.num_links(), 0) {}
  virtual ~Network() = default;
  virtual std::string_view name() const = 0;
  // Whether it shares the links past a sender's port among the flows on them (the
  // congestion-aware and packet networks), so that a collective reserves its senders' ports alone
  // (synth::BasicLinkAdmission's ports_only); the analytical network replays Tenet's reservations.
  virtual bool shares_links() const { return true; }
  const topo::Topology& topology() const { return topo_; }
  // Starts `m` now. `on_release` runs when its last byte has left the route's links (the next
  // message in order may use them); `on_arrival` when it has fully arrived at m.dst.
  virtual void send(Message m, std::function<void()> on_release,
                    std::function<void()> on_arrival) = 0;
  // Per link, the time it carried data (for a shared link: the bytes it carried over its
  // bandwidth).
  virtual std::vector<Time> link_busy() const { return busy_; }
  size_t num_links() const { return busy_.size(); }
  // Keep every link's busy intervals for report() (off by default): exactly up to `exact`
  // intervals in all (24 B each; kExactActivity), then summed per link into at most kActivitySlices
  // slices of the run (8 KiB per link), widening as the run goes on (a 4096-rank ring All-Reduce
  // made 33 million intervals, 800 MB).
  void keep_activity(bool on, size_t exact = kExactActivity) {
    activity_.assign(on ? busy_.size() : 0, {});
    exact_ = exact;
    slices_.clear();
    pending_.clear();
    flushes_.clear();
    slice_ = 0;
    shift_ = 0;
    kept_ = 0;
    latest_ = 0;
  }
  static constexpr size_t kExactActivity = size_t{1} << 21;
  static constexpr int kActivitySlices = 1024;
  // Per-link and total statistics so far. The activity kept is handed over, not copied (a 4096-rank
  // ring All-Reduce keeps 800 MB of it): a later report holds only what came after.
  virtual NetworkReport report();
  // Throws tenet::Error when messages are still in the network although nothing is left to
  // happen (a deadlock); call after the event queue ran dry.
  virtual void check_drained() const {}

 protected:
  // For backends that share links as they are used: a message with a per-step cost is sent again
  // (with none) a step from now, and true is returned; false for one without.
  bool deferred_by_step(const Message& m, std::function<void()>& on_release,
                        std::function<void()>& on_arrival);
  // Adjacent intervals of equal share merge, and overlapping ones of the whole link; starts must
  // not decrease. (Concurrent transfers sharing a link overlap and add up.)
  void record_activity(topo::LinkId l, Time start, Time end, double share = 1.0) {
    if (activity_.empty() || end <= start || share <= 0) return;
    if (slice_ > 0) return add_to_slices(l, start, end, share);
    latest_ = std::max(latest_, end);
    std::vector<Interval>& a = activity_[l];
    if (!a.empty() && a.back().share == share &&
        (a.back().end == start || (share >= 1.0 && a.back().end > start))) {
      a.back().end = std::max(a.back().end, end);
    } else {
      a.push_back({start, end, share});
      if (++kept_ > exact_) to_slices();
    }
  }

  const topo::Topology& topo_;
  EventQueue& events_;
  std::vector<Time> busy_;
  std::vector<std::vector<Interval>> activity_;

 private:
  void to_slices();  // from exact intervals to slices
  void add_to_slices(topo::LinkId l, Time start, Time end, double share);
  void flush_slice(topo::LinkId l);  // queues the link's pending sum for its slice
  void drain_slices();               // adds the queued sums to slices_
  size_t kept_ = 0;                  // exact intervals kept
  size_t exact_ = kExactActivity;
  Time latest_ = 0;  // the latest end of them
  Time slice_ = 0;   // 0: exact; else the slices' width, 2^shift_ picoseconds
  int shift_ = 0;
  std::vector<std::vector<double>>
      slices_;  // per link (empty until used): busy time x share per slice
  // Per link, the slice its latest intervals fell in and their sum, not yet added to slices_: a
  // link's intervals come in time order, so most land in the slice of the one before, and the
  // slices (8 KiB per link, 64 MB for a 4096-NPU switch) are touched once per link and slice
  // instead of missing the cache on every interval.
  struct Pending {
    Time slice = -1;
    double sum = 0;
  };
  std::vector<Pending> pending_;
  // Sums on their way to slices_, added a few thousand at a time with the rows they touch asked for
  // ahead: one at a time, each waited for its row (8 KiB per link, 64 MB for a 4096-NPU switch).
  struct Flush {
    topo::LinkId link;
    int32_t slice;
    double sum;
  };
  std::vector<Flush> flushes_;
};

enum class NetworkKind { Analytical, AnalyticalCongestion, Packet };
NetworkKind parse_network(std::string_view name);
std::string_view to_string(NetworkKind k);
std::unique_ptr<Network> make_network(NetworkKind kind, const topo::Topology& t, EventQueue& events,
                                      const PacketConfig& packet = {});

}  // namespace tenet::sim
