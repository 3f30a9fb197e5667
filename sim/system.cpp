#include "sim/system.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "sim/algorithm_source.hpp"
#include "sim/comm_groups.hpp"
#include "sim/comm_types.hpp"
#include "sim/et_checks.hpp"
#include "sim/intervals.hpp"
#include "sim/meetings.hpp"
#include "topo/error.hpp"
#include "topo/routing.hpp"

namespace tenet::sim {
namespace {

using chakra::Node;
using detail::measure;

class Simulator {
 public:
  Simulator(const topo::Topology& t, const std::vector<chakra::EtFile>& w, const SimConfig& c,
            std::string name)
      : t_(t),
        w_(w),
        cfg_(c),
        name_(std::move(name)),
        router_(t),
        p_(static_cast<int>(w.size())),
        total_(c.workload_ranks > 0 ? c.workload_ranks : p_),
        groups_(name_, total_, p_),
        source_(t, c, name_) {}

  SimResult run() {
    validate();
    net_ = make_network(cfg_.network, t_, events_, cfg_.packet);
    net_->keep_activity(cfg_.link_activity || cfg_.trace);
    meetings_ = std::make_unique<detail::Meetings>(
        t_, cfg_, total_, groups_, source_, *net_, events_,
        [this](int r, size_t i, const CollectiveRow* row) { complete_comm(r, i, row); });
    stats_.assign(p_, {});
    compute_.assign(p_, {});
    cpu_.assign(p_, {});
    comm_.assign(p_, {});
    for (int r = 0; r < p_; ++r)
      for (size_t i = 0; i < ranks_[r].nodes.size(); ++i)
        if (ranks_[r].pending[i] == 0) events_.schedule(0, [this, r, i] { begin(r, i); });
    events_.run();
    net_->check_drained();
    report_stuck();
    SimResult out;
    for (int r = 0; r < p_; ++r) {
      RankStats& s = stats_[r];
      s.compute = measure(compute_[r]);
      s.cpu = measure(cpu_[r]);
      s.communication = measure(comm_[r]);
      // Exposed: communication in flight while the compute stream is idle.
      std::vector<std::pair<Time, Time>> both = comm_[r];
      both.insert(both.end(), compute_[r].begin(), compute_[r].end());
      s.exposed = measure(both) - s.compute;
      out.iteration = std::max(out.iteration, s.finish);
    }
    out.ranks = stats_;
    out.link_busy = net_->link_busy();
    out.network = net_->report();
    out.warnings = source_.warnings();
    if (auto overload = detail::overload_warning(out.network))
      out.warnings.push_back(std::move(*overload));
    out.events = events_.executed();
    out.collectives = meetings_->collectives();
    out.collective_rows = meetings_->rows(compute_);
    out.message_rows = messages_.rows(compute_);
    out.algorithms_renamed = source_.renamed();
    out.algorithms_made = source_.made();
    out.ring_plans = source_.ring_plans();
    out.flops = flops_;
    out.trace = std::move(trace_);
    return out;
  }

 private:
  // A rank: its graph (sim/et_checks.hpp), and the state of its nodes and streams.
  struct Rank : detail::RankGraph {
    std::vector<char> done;
    std::vector<Time> started;
    std::deque<size_t> ready_compute, ready_cpu;
    bool computing = false, cpu_busy = false;
    std::deque<size_t> waiting_comm;  // sends and collectives waiting for the in-flight limit
    std::vector<char> counts_in_flight;
    int in_flight = 0;
  };

  void validate() {
    if (cfg_.workload_ranks > 0) {
      if (cfg_.network != NetworkKind::Analytical)
        throw Error(fmt::format(
            "{}: simulating one data-parallel replica for all needs the analytical network, where "
            "replicas do not meet each other's traffic; on the {} network run every replica",
            name_, to_string(cfg_.network)));
      if (cfg_.workload_ranks < p_ || cfg_.workload_ranks > t_.num_npus())
        throw Error(fmt::format("{}: a workload of {} ranks, {} of them with files, on {} NPUs",
                                name_, cfg_.workload_ranks, p_, t_.num_npus()));
    }
    std::vector<detail::RankGraph> graphs = detail::read_workload(t_, w_, name_, groups_);
    ranks_.resize(p_);
    for (int r = 0; r < p_; ++r) {
      Rank& rk = ranks_[r];
      static_cast<detail::RankGraph&>(rk) = std::move(graphs[r]);
      const size_t n = rk.nodes.size();
      rk.done.assign(n, 0);
      rk.started.assign(n, 0);
      rk.counts_in_flight.assign(n, 0);
      total_nodes_ += n;
    }
  }

  void begin(int r, size_t i) {
    Rank& rk = ranks_[r];
    const Node& n = *rk.nodes[i];
    rk.started[i] = events_.now();
    switch (n.type()) {
      case ChakraProtoMsg::COMP_NODE:
        if (chakra::int_attr(n, "is_cpu_op").value_or(0) != 0) {
          rk.ready_cpu.push_back(i);
          next_cpu(r);
          break;
        }
        [[fallthrough]];
      case ChakraProtoMsg::MEM_LOAD_NODE:
      case ChakraProtoMsg::MEM_STORE_NODE:
        if (cfg_.remote_memory && n.type() != ChakraProtoMsg::COMP_NODE) {
          remote_access(r, i);
          break;
        }
        rk.ready_compute.push_back(i);
        next_compute(r);
        break;
      case ChakraProtoMsg::METADATA_NODE:
      case ChakraProtoMsg::INVALID_NODE:
        finish(r, i);
        break;
      case ChakraProtoMsg::COMM_RECV_NODE:
        receive(r, i, n);
        break;
      case ChakraProtoMsg::COMM_SEND_NODE:
      case ChakraProtoMsg::COMM_COLL_NODE:
        rk.waiting_comm.push_back(i);
        next_comm(r);
        break;
      default:
        break;
    }
  }

  // Starts waiting sends and collectives while the rank's in-flight limit allows.
  void next_comm(int r) {
    Rank& rk = ranks_[r];
    while (!rk.waiting_comm.empty() &&
           (cfg_.max_in_flight == 0 || rk.in_flight < cfg_.max_in_flight)) {
      const size_t i = rk.waiting_comm.front();
      rk.waiting_comm.pop_front();
      ++rk.in_flight;
      rk.counts_in_flight[i] = 1;
      rk.started[i] = events_.now();
      const Node& n = *rk.nodes[i];
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE)
        send(r, i, n);
      else
        meet(r, i, n);
    }
  }

  // Node `n` of rank `r` on the compute stream: its duration (checked by check_node), or the
  // roofline of its operations at peak_flops and its bytes at the memory bandwidth, in whole
  // picoseconds. A roofline term past what a Time holds (2^63 ps: a tiny peak-perf, a huge
  // num_ops) is an error naming the node and the term: a double past 2^63 has no integer value.
  Time compute_time(int r, const Node& n) const {
    if (n.type() == ChakraProtoMsg::COMP_NODE && n.duration_micros() > 0)
      return static_cast<Time>(n.duration_micros()) * 1'000'000;
    const int64_t ops = chakra::int_attr(n, "num_ops").value_or(0);
    const int64_t bytes = chakra::int_attr(n, "tensor_size").value_or(0);
    constexpr double kLongest = static_cast<double>(std::numeric_limits<Time>::max());
    auto too_long = [&](double seconds, const std::string& term) {
      return detail::node_error(
          name_, r, n,
          fmt::format("{} takes {:.4g} s, past the 2^63 ps (106 days) a simulated time holds", term,
                      seconds));
    };
    const double memory_s = static_cast<double>(bytes) /
                            (static_cast<double>(cfg_.memory_bandwidth) * cfg_.memory_efficiency);
    const double memory_ps = std::ceil(memory_s * static_cast<double>(kPicosPerSecond));
    if (!(memory_ps < kLongest))
      throw too_long(memory_s, fmt::format("tensor_size {} B at a memory bandwidth of {}", bytes,
                                           format_bandwidth(cfg_.memory_bandwidth)));
    if (n.type() != ChakraProtoMsg::COMP_NODE) return static_cast<Time>(memory_ps);
    if (!cfg_.roofline) return 1000;  // ASTRA-sim replays it: 0 means 1 ns
    const double rate = cfg_.peak_flops * cfg_.compute_efficiency;
    const double compute_s = static_cast<double>(ops) / rate;
    const double compute_ps = std::ceil(compute_s * static_cast<double>(kPicosPerSecond));
    if (!(compute_ps < kLongest))
      throw too_long(compute_s,
                     fmt::format("num_ops {} at {:.4g} TFLOP/s (peak-perf x compute efficiency)",
                                 ops, rate / 1e12));
    return std::max<Time>({static_cast<Time>(compute_ps), static_cast<Time>(memory_ps),
                           1000});  // ASTRA-sim: 0 means 1 ns
  }

  void next_compute(int r) {
    Rank& rk = ranks_[r];
    if (rk.computing || rk.ready_compute.empty()) return;
    const size_t i = rk.ready_compute.front();
    rk.ready_compute.pop_front();
    rk.computing = true;
    const Time start = events_.now(), d = compute_time(r, *rk.nodes[i]);
    if (rk.nodes[i]->type() == ChakraProtoMsg::COMP_NODE)
      flops_ += static_cast<double>(chakra::int_attr(*rk.nodes[i], "num_ops").value_or(0));
    events_.schedule_after(d, [this, r, i, start] {
      ranks_[r].computing = false;
      compute_[r].emplace_back(start, events_.now());
      record(r, i, Stream::Compute, start);
      finish(r, i);
      next_compute(r);
    });
  }

  // A remote-memory access: its memory serves requests one at a time, in arrival order.
  void remote_access(int r, size_t i) {
    const RemoteMemory& m = *cfg_.remote_memory;
    Time& free_at = memory_free_at_[m.memory_of(r)];
    const Bytes bytes = chakra::int_attr(*ranks_[r].nodes[i], "tensor_size").value_or(0);
    const Time start = std::max(free_at, events_.now());
    const Time serve = transfer_time(bytes, m.bandwidth);  // throws past 2^63 ps
    if (serve > std::numeric_limits<Time>::max() - start - m.latency)
      throw detail::node_error(name_, r, *ranks_[r].nodes[i],
                               "the remote-memory access would end past 2^63 ps");
    const Time end = start + m.latency + serve;
    free_at = end;
    events_.schedule(end, [this, r, i, start] {
      record(r, i, Stream::Memory, start);
      finish(r, i);
    });
  }

  // A host operator replays its recorded duration (ASTRA-sim: Workload::issue_replay, 0 as 1 ns).
  void next_cpu(int r) {
    Rank& rk = ranks_[r];
    if (rk.cpu_busy || rk.ready_cpu.empty()) return;
    const size_t i = rk.ready_cpu.front();
    rk.ready_cpu.pop_front();
    rk.cpu_busy = true;
    const Time start = events_.now();
    const uint64_t micros = rk.nodes[i]->duration_micros();
    events_.schedule_after(micros > 0 ? static_cast<Time>(micros) * 1'000'000 : 1000,
                           [this, r, i, start] {
                             ranks_[r].cpu_busy = false;
                             cpu_[r].emplace_back(start, events_.now());
                             record(r, i, Stream::Cpu, start);
                             finish(r, i);
                             next_cpu(r);
                           });
  }

  const std::vector<topo::LinkId>& route(topo::NodeId a, topo::NodeId b) {
    const uint64_t k = (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b);
    auto it = routes_.find(k);
    if (it != routes_.end()) return it->second;
    std::vector<topo::LinkId> r;
    for (topo::LinkId l : t_.out_links(a))
      if (t_.link(l).dst == b) {
        r = {l};
        break;
      }
    if (r.empty()) {
      if (auto via = router_.route(a, b)) {
        r = via->links;
      } else {
        // NPUs that are neither linked nor joined through switches: the shortest path through any
        // nodes, as if the NPUs on the way forwarded the message.
        std::vector<topo::LinkId> into(t_.num_nodes(), -1);
        std::vector<topo::NodeId> q{a};
        std::vector<char> seen(t_.num_nodes(), 0);
        seen[a] = 1;
        for (size_t h = 0; h < q.size() && !seen[b]; ++h)
          for (topo::LinkId l : t_.out_links(q[h]))
            if (!seen[t_.link(l).dst]) {
              seen[t_.link(l).dst] = 1;
              into[t_.link(l).dst] = l;
              q.push_back(t_.link(l).dst);
            }
        for (topo::NodeId at = b; at != a; at = t_.link(into[at]).src) r.push_back(into[at]);
        std::reverse(r.begin(), r.end());
      }
    }
    return routes_.emplace(k, r).first->second;
  }

  // ASTRA-sim's analytical frontend pairs a send with a receive by all four (its ChunkIdGenerator
  // and CallbackTracker): a receive of another size waits for a send of its own size.
  using MsgKey = std::tuple<int64_t, int, int, int64_t>;  // tag, source, destination rank, bytes

  void send(int r, size_t i, const Node& n) {
    const int dst = static_cast<int>(*chakra::int_attr(n, "comm_dst"));
    const MsgKey key{*chakra::int_attr(n, "comm_tag"), r, dst, *chakra::int_attr(n, "comm_size")};
    const Time start = events_.now();
    net_->send(
        {r, dst, *chakra::int_attr(n, "comm_size"), route(r, dst)}, [] {},
        [this, r, i, key, start] {
          comm_[r].emplace_back(start, events_.now());
          record(r, i, Stream::Communication, start);
          finish(r, i);
          auto& waiting = receivers_[key];
          if (waiting.empty()) {
            ++delivered_[key];
          } else {
            auto [rr, ri] = waiting.front();
            waiting.pop_front();
            received(rr, ri, start);
            complete_comm(rr, ri);
          }
        });
  }

  void receive(int r, size_t i, const Node& n) {
    const MsgKey key{*chakra::int_attr(n, "comm_tag"),
                     static_cast<int>(*chakra::int_attr(n, "comm_src")), r,
                     *chakra::int_attr(n, "comm_size")};
    if (delivered_[key] > 0) {
      --delivered_[key];
      received(r, i, events_.now());
      complete_comm(r, i);
    } else {
      receivers_[key].emplace_back(r, i);
    }
  }

  // Receive `i` of rank `r` got its message now, sent at `sent`: the message kept the receiver
  // waiting from the later of the two starts (SimResult::message_rows).
  void received(int r, size_t i, Time sent) {
    const Node& n = *ranks_[r].nodes[i];
    messages_.add(chakra::string_attr(n, "tenet_group").value_or("p2p"), r,
                  chakra::int_attr(n, "comm_size").value_or(0),
                  std::max(sent, ranks_[r].started[i]), events_.now());
  }

  // A receive, or a member of a collective, is done: its time since it started was communication.
  // `row`: a collective's (null for a receive or a barrier).
  void complete_comm(int r, size_t i, const CollectiveRow* row = nullptr) {
    comm_[r].emplace_back(ranks_[r].started[i], events_.now());
    record(r, i, Stream::Communication, ranks_[r].started[i], row);
    finish(r, i);
  }

  void meet(int r, size_t i, const Node& n) { meetings_->arrive(r, i, n); }

  void record(int r, size_t i, Stream stream, Time start, const CollectiveRow* row = nullptr) {
    if (!cfg_.trace) return;
    const Node& n = *ranks_[r].nodes[i];
    TraceSlice& s = trace_.emplace_back();
    s.rank = r;
    s.stream = stream;
    s.name = n.name().empty() ? ChakraProtoMsg::NodeType_Name(n.type()) : n.name();
    s.start = start;
    s.end = events_.now();
    if (stream != Stream::Communication) return;
    if (row) {
      s.bytes = row->bytes;
      s.group = row->group;
      s.algorithm = row->algorithm;
      s.method = row->method;
      s.chunks_per_npu = row->chunks_per_npu;
    } else if (n.type() != ChakraProtoMsg::COMM_COLL_NODE) {
      s.bytes = chakra::int_attr(n, "comm_size").value_or(0);
    }
  }

  void finish(int r, size_t i) {
    Rank& rk = ranks_[r];
    rk.done[i] = 1;
    stats_[r].finish = std::max(stats_[r].finish, events_.now());
    if (cfg_.progress && ++done_nodes_ % (total_nodes_ / 100 + 1) == 0)
      cfg_.progress(static_cast<double>(done_nodes_) / static_cast<double>(total_nodes_));
    if (rk.counts_in_flight[i]) {
      rk.counts_in_flight[i] = 0;
      --rk.in_flight;
      next_comm(r);
    }
    for (size_t u : rk.users[i])
      if (--rk.pending[u] == 0) begin(r, u);
  }

  void report_stuck() {
    std::vector<std::string> stuck;
    size_t count = 0;
    for (int r = 0; r < p_; ++r)
      for (size_t i = 0; i < ranks_[r].nodes.size(); ++i) {
        if (ranks_[r].done[i] || ranks_[r].pending[i] > 0) continue;
        ++count;
        const Node& n = *ranks_[r].nodes[i];
        if (stuck.size() >= 5) continue;
        std::string why;
        if (n.type() == ChakraProtoMsg::COMM_RECV_NODE)
          why = fmt::format(
              "a receive of {} B from rank {} with tag {} that no send matches (a send pairs with "
              "a receive of the same tag and size)",
              *chakra::int_attr(n, "comm_size"), *chakra::int_attr(n, "comm_src"),
              *chakra::int_attr(n, "comm_tag"));
        else if (std::find(ranks_[r].waiting_comm.begin(), ranks_[r].waiting_comm.end(), i) !=
                 ranks_[r].waiting_comm.end())
          why = fmt::format(
              "waits for the in-flight limit ({}) while the operations in flight wait for others",
              cfg_.max_in_flight);
        else if (n.type() == ChakraProtoMsg::COMM_COLL_NODE)
          why = "a collective that not every member of its group reaches";
        else
          why = "never finishes";
        stuck.push_back(fmt::format("rank {} node {} ('{}'): {}", r, n.id(), n.name(), why));
      }
    if (count == 0) return;
    throw Error(fmt::format("{}: the workload cannot finish: {} node{} wait forever, e.g. {}",
                            name_, count, count == 1 ? "" : "s", fmt::join(stuck, "; ")));
  }

  const topo::Topology& t_;
  const std::vector<chakra::EtFile>& w_;
  const SimConfig& cfg_;
  std::string name_;
  topo::Router router_;
  const int p_;      // ranks with a file
  const int total_;  // the workload's ranks (SimConfig::workload_ranks)
  EventQueue events_;
  std::unique_ptr<Network> net_;
  std::vector<Rank> ranks_;
  std::vector<RankStats> stats_;
  std::vector<std::vector<std::pair<Time, Time>>> compute_, cpu_, comm_;
  std::map<int, Time> memory_free_at_;  // per remote memory: when it is free
  std::map<MsgKey, int> delivered_;
  std::map<MsgKey, std::deque<std::pair<int, size_t>>> receivers_;
  detail::CommGroups groups_;
  detail::AlgorithmSource source_;
  std::unique_ptr<detail::Meetings> meetings_;
  detail::MessageLog messages_;
  std::unordered_map<uint64_t, std::vector<topo::LinkId>> routes_;
  std::vector<TraceSlice> trace_;
  size_t total_nodes_ = 0, done_nodes_ = 0;
  double flops_ = 0;  // SimResult::flops
};

}  // namespace

uint64_t estimate_packets(const std::vector<chakra::EtFile>& workload, Bytes mtu) {
  const double p_all = static_cast<double>(workload.size());
  double packets = 0;
  for (const chakra::EtFile& f : workload)
    for (const Node& n : f.nodes) {
      const double size =
          static_cast<double>(std::max<int64_t>(0, chakra::int_attr(n, "comm_size").value_or(0)));
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) {
        packets += std::ceil(size / static_cast<double>(mtu));
      } else if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
        const auto kind = collective_of_comm_type(
            chakra::int_attr(n, "comm_type").value_or(ChakraProtoMsg::BARRIER));
        if (!kind) continue;
        double p = p_all;
        if (auto ranks = chakra::string_attr(n, "tenet_ranks"))
          p = static_cast<double>(std::count(ranks->begin(), ranks->end(), ',') + 1);
        if (p < 2) continue;
        const double share = (*kind == synth::CollectiveKind::AllReduce ? 2.0 : 1.0) *
                             (comm_size_is_per_rank(*kind) ? size * p : size) * (p - 1) / p;
        packets += std::ceil(share / static_cast<double>(mtu));
      }
    }
  return packets >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(packets);
}

double model_flops_utilization(const SimResult& r, double peak_flops) {
  const double could = static_cast<double>(r.iteration) / static_cast<double>(kPicosPerSecond) *
                       static_cast<double>(r.ranks.size()) * peak_flops;
  return could > 0 ? r.flops / could : 0;
}

SimResult simulate(const topo::Topology& t, const std::vector<chakra::EtFile>& workload,
                   const SimConfig& config, const std::string& name) {
  if (workload.empty()) throw Error(fmt::format("{}: the workload has no ranks", name));
  // The roofline divides by both (compute_time).
  if (!(config.peak_flops > 0 && std::isfinite(config.peak_flops)))
    throw Error(
        fmt::format("{}: the peak of {} FLOP/s is not a positive number", name, config.peak_flops));
  if (config.memory_bandwidth <= 0)
    throw Error(fmt::format("{}: the memory bandwidth of {} B/s is not positive", name,
                            config.memory_bandwidth));
  if (!(config.compute_efficiency > 0 && config.compute_efficiency <= 1))
    throw Error(fmt::format("{}: a compute efficiency of {} is not a share of the peak in (0, 1]",
                            name, config.compute_efficiency));
  if (!(config.memory_efficiency > 0 && config.memory_efficiency <= 1))
    throw Error(
        fmt::format("{}: a memory efficiency of {} is not a share of the bandwidth in (0, 1]", name,
                    config.memory_efficiency));
  if (config.network == NetworkKind::Packet && config.packet.mtu > 0) {
    const uint64_t packets = estimate_packets(workload, config.packet.mtu);
    if (packets > config.packet.max_packets) {
      Bytes mtu = config.packet.mtu;  // the power-of-two multiple of the MTU that fits
      while (mtu < (Bytes{1} << 30) && static_cast<double>(packets) *
                                               static_cast<double>(config.packet.mtu) /
                                               static_cast<double>(mtu) >
                                           static_cast<double>(config.packet.max_packets))
        mtu *= 2;
      throw Error(fmt::format(
          "{}: packet network: about {} packets to simulate at a {} MTU, over the limit of {} "
          "(about {} at {:.0f} million packets a second): raise --mtu to {} (about {} packets), or "
          "--max-packets to run it anyway",
          name, packets, format_bytes(config.packet.mtu), config.packet.max_packets,
          format_time(
              static_cast<Time>(std::min(1e18, static_cast<double>(packets) / kPacketsPerSecond *
                                                   static_cast<double>(kPicosPerSecond)))),
          kPacketsPerSecond / 1e6, format_bytes(mtu),
          static_cast<uint64_t>(static_cast<double>(packets) *
                                static_cast<double>(config.packet.mtu) /
                                static_cast<double>(mtu))));
    }
  }
  return Simulator(t, workload, config, name).run();
}

}  // namespace tenet::sim
