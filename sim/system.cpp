#include "sim/system.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <deque>
#include <limits>
#include <set>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "chakra/algorithm_files.hpp"
#include "sim/collective_engine.hpp"
#include "synth/group_map.hpp"
#include "synth/producers.hpp"
#include "synth/traffic.hpp"
#include "topo/analysis.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"
#include "topo/routing.hpp"

namespace tenet::sim {
namespace {

using chakra::Node;

constexpr uint64_t kMaxNodeMicros = 86'400'000'000;  // one day: 2^63 ps is 106 days for the whole run
constexpr int64_t kMaxBytes = int64_t{1} << 50;

// Measure of the union of intervals, and of `a` minus `b` (both lists of [start, end)).
Time measure(std::vector<std::pair<Time, Time>> v) {
  std::sort(v.begin(), v.end());
  Time total = 0, reach = std::numeric_limits<Time>::min();
  for (auto [s, e] : v) {
    if (e <= reach) continue;
    total += e - std::max(s, reach);
    reach = e;
  }
  return total;
}

class Simulator {
 public:
  Simulator(const topo::Topology& t, const std::vector<chakra::EtFile>& w, const SimConfig& c, std::string name)
      : t_(t), w_(w), cfg_(c), name_(std::move(name)), router_(t), p_(static_cast<int>(w.size())) {}

  SimResult run() {
    validate();
    net_ = make_network(cfg_.network, t_, events_, cfg_.packet);
    net_->keep_activity(cfg_.link_activity || cfg_.trace);
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
    warn_overload(out.network);
    out.events = events_.executed();
    out.collectives = collectives_;
    out.algorithms_renamed = renamed_;
    out.algorithms_made = static_cast<int64_t>(cache_.size()) - renamed_;
    out.ring_plans = std::count_if(plans_.begin(), plans_.end(), [](const auto& p) { return p.second != nullptr; });
    out.warnings = warnings_;
    out.trace = std::move(trace_);
    return out;
  }

 private:
  struct Rank {
    std::vector<const Node*> nodes;
    std::unordered_map<uint64_t, size_t> index;
    std::vector<std::vector<size_t>> users;
    std::vector<int> pending;
    std::vector<char> done;
    std::vector<Time> started;
    std::deque<size_t> ready_compute, ready_cpu;
    bool computing = false, cpu_busy = false;
    std::deque<size_t> waiting_comm;  // sends and collectives waiting for the in-flight limit
    std::vector<char> counts_in_flight;
    int in_flight = 0;
  };
  struct Meeting {  // one collective of one group
    std::vector<int> members;
    std::vector<std::pair<int, size_t>> arrived;  // (rank, node)
    synth::CollectiveKind kind{};
    bool barrier = false;
    Bytes size = 0;
    int root = 0;
    std::string traffic;  // an All-to-All's uneven traffic (tenet_traffic: zipf:S, hot:K), or empty
    std::vector<std::unique_ptr<CollectiveRun>> runs;  // one per dataset split
    size_t started = 0, finished = 0;
  };

  Error error(int r, const Node& n, const std::string& what) const {
    return Error(fmt::format("{}: rank {} node {} ('{}'): {}", name_, r, n.id(), n.name(), what));
  }

  void validate() {
    if (p_ > t_.num_npus())
      throw Error(fmt::format("{}: {} ranks, but the topology has {} NPUs", name_, p_, t_.num_npus()));
    ranks_.resize(p_);
    for (int r = 0; r < p_; ++r) {
      Rank& rk = ranks_[r];
      for (const Node& n : w_[r].nodes) {
        if (!rk.index.emplace(n.id(), rk.nodes.size()).second) throw error(r, n, "node id used twice");
        rk.nodes.push_back(&n);
      }
      const size_t n = rk.nodes.size();
      rk.users.assign(n, {});
      rk.pending.assign(n, 0);
      rk.done.assign(n, 0);
      rk.started.assign(n, 0);
      rk.counts_in_flight.assign(n, 0);
      total_nodes_ += n;
      for (size_t i = 0; i < n; ++i) {
        const Node& node = *rk.nodes[i];
        for (const auto& deps : {node.data_deps(), node.ctrl_deps()})
          for (uint64_t d : deps) {
            auto it = rk.index.find(d);
            if (it == rk.index.end()) throw error(r, node, fmt::format("depends on node {}, which is not in this rank's graph", d));
            rk.users[it->second].push_back(i);
            ++rk.pending[i];
          }
        check_node(r, node);
      }
      // A cycle would leave nodes waiting forever: find it up front.
      std::vector<int> indegree = rk.pending;
      std::vector<size_t> queue;
      for (size_t i = 0; i < n; ++i)
        if (indegree[i] == 0) queue.push_back(i);
      for (size_t q = 0; q < queue.size(); ++q)
        for (size_t u : rk.users[queue[q]])
          if (--indegree[u] == 0) queue.push_back(u);
      if (queue.size() < n) {
        size_t stuck = 0;
        while (indegree[stuck] == 0) ++stuck;
        throw error(r, *rk.nodes[stuck], fmt::format("is on a dependency cycle ({} nodes of rank {} can never run)",
                                                     n - queue.size(), r));
      }
    }
  }

  void check_node(int r, const Node& n) {
    auto peer = [&](const char* attr) {
      auto v = chakra::int_attr(n, attr);
      if (!v) throw error(r, n, fmt::format("{} needs the attribute {}", ChakraProtoMsg::NodeType_Name(n.type()), attr));
      if (*v < 0 || *v >= p_) throw error(r, n, fmt::format("{} {} is not a rank of the workload (0..{})", attr, *v, p_ - 1));
    };
    // Sizes and durations checked before any time is computed from them: a comm_size of 2^64 - 1
    // reads as -1, and duration_micros near 2^63 wraps when turned into picoseconds.
    if (n.duration_micros() > kMaxNodeMicros)
      throw error(r, n, fmt::format("duration_micros {} is over the limit of {} (a day)", n.duration_micros(), kMaxNodeMicros));
    for (const char* attr : {"comm_size", "tensor_size"})
      if (const auto v = chakra::int_attr(n, attr); v && (*v < 0 || *v > kMaxBytes))
        throw error(r, n, fmt::format("{} {} is outside [0, 2^50] bytes", attr, static_cast<uint64_t>(*v)));
    switch (n.type()) {
      case ChakraProtoMsg::COMP_NODE:
      case ChakraProtoMsg::MEM_LOAD_NODE:
      case ChakraProtoMsg::MEM_STORE_NODE:
      case ChakraProtoMsg::METADATA_NODE:
      case ChakraProtoMsg::INVALID_NODE: break;
      case ChakraProtoMsg::COMM_SEND_NODE:
        peer("comm_dst");
        if (!chakra::int_attr(n, "comm_tag") || !chakra::int_attr(n, "comm_size")) throw error(r, n, "a send needs comm_tag and comm_size");
        break;
      case ChakraProtoMsg::COMM_RECV_NODE:
        peer("comm_src");
        if (!chakra::int_attr(n, "comm_tag") || !chakra::int_attr(n, "comm_size")) throw error(r, n, "a receive needs comm_tag and comm_size");
        break;
      case ChakraProtoMsg::COMM_COLL_NODE:
        if (!chakra::int_attr(n, "comm_type") || !chakra::int_attr(n, "comm_size"))
          throw error(r, n, "a collective needs comm_type and comm_size");
        if (const int64_t type = *chakra::int_attr(n, "comm_type");
            type != ChakraProtoMsg::BARRIER && !collective_of_comm_type(type))
          throw error(r, n, fmt::format("comm_type {} is no Chakra collective (ALL_REDUCE 0 ... BARRIER 9)", type));
        (void)group_of(r, n);
        break;
      default: throw error(r, n, fmt::format("cannot run a node of type {}", ChakraProtoMsg::NodeType_Name(n.type())));
    }
  }

  // A collective's group: its ranks in the node's order, and an id for the meetings (the same
  // ranks written another way are the same group). Parsed once per distinct tenet_ranks text:
  // every rank of a 16,384-rank collective names the same 16,384, and parsing them per rank was
  // minutes of work before the first event.
  struct Group {
    int id = 0;
    std::vector<int> members, sorted;
  };
  const Group& group_of(int r, const Node& n) const {
    const auto text = chakra::string_attr(n, "tenet_ranks");  // none: every rank
    auto known = group_texts_.find(text);
    if (known == group_texts_.end()) {
      std::vector<int> members;
      if (text) {
        std::stringstream in(*text);
        for (std::string item; std::getline(in, item, ',');) {
          int m = -1;
          try {
            m = std::stoi(item);
          } catch (const std::exception&) {
          }
          if (m < 0 || m >= p_) throw error(r, n, fmt::format("group member '{}' is not a rank of the workload", item));
          members.push_back(m);
        }
      } else {
        for (int m = 0; m < p_; ++m) members.push_back(m);
      }
      auto [it, fresh] = groups_.try_emplace(members);
      Group& g = it->second;
      if (fresh) {
        g.id = static_cast<int>(groups_.size()) - 1;
        g.members = std::move(members);
        g.sorted = g.members;
        std::sort(g.sorted.begin(), g.sorted.end());
      }
      known = group_texts_.emplace(text, &g).first;
    }
    const Group& g = *known->second;
    if (!std::binary_search(g.sorted.begin(), g.sorted.end(), r))
      throw error(r, n, "the collective's group does not include this rank");
    return g;
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
      case ChakraProtoMsg::INVALID_NODE: finish(r, i); break;
      case ChakraProtoMsg::COMM_RECV_NODE: receive(r, i, n); break;
      case ChakraProtoMsg::COMM_SEND_NODE:
      case ChakraProtoMsg::COMM_COLL_NODE:
        rk.waiting_comm.push_back(i);
        next_comm(r);
        break;
      default: break;
    }
  }

  // Starts waiting sends and collectives while the rank's in-flight limit allows.
  void next_comm(int r) {
    Rank& rk = ranks_[r];
    while (!rk.waiting_comm.empty() && (cfg_.max_in_flight == 0 || rk.in_flight < cfg_.max_in_flight)) {
      const size_t i = rk.waiting_comm.front();
      rk.waiting_comm.pop_front();
      ++rk.in_flight;
      rk.counts_in_flight[i] = 1;
      rk.started[i] = events_.now();
      const Node& n = *rk.nodes[i];
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) send(r, i, n);
      else meet(r, i, n);
    }
  }

  Time compute_time(const Node& n) const {
    if (n.type() == ChakraProtoMsg::COMP_NODE && n.duration_micros() > 0)
      return static_cast<Time>(n.duration_micros()) * 1'000'000;
    const double ops = static_cast<double>(chakra::int_attr(n, "num_ops").value_or(0));
    const double bytes = static_cast<double>(chakra::int_attr(n, "tensor_size").value_or(0));
    const double seconds = n.type() == ChakraProtoMsg::COMP_NODE
                               ? std::max(ops / cfg_.peak_flops, bytes / static_cast<double>(cfg_.memory_bandwidth))
                               : bytes / static_cast<double>(cfg_.memory_bandwidth);
    return std::max<Time>(static_cast<Time>(std::ceil(seconds * static_cast<double>(kPicosPerSecond))),
                          n.type() == ChakraProtoMsg::COMP_NODE ? 1000 : 0);  // ASTRA-sim: 0 means 1 ns
  }

  void next_compute(int r) {
    Rank& rk = ranks_[r];
    if (rk.computing || rk.ready_compute.empty()) return;
    const size_t i = rk.ready_compute.front();
    rk.ready_compute.pop_front();
    rk.computing = true;
    const Time start = events_.now(), d = compute_time(*rk.nodes[i]);
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
      throw error(r, *ranks_[r].nodes[i], "the remote-memory access would end past 2^63 ps");
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
    events_.schedule_after(micros > 0 ? static_cast<Time>(micros) * 1'000'000 : 1000, [this, r, i, start] {
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

  using MsgKey = std::tuple<int64_t, int, int>;  // tag, source rank, destination rank

  void send(int r, size_t i, const Node& n) {
    const int dst = static_cast<int>(*chakra::int_attr(n, "comm_dst"));
    const MsgKey key{*chakra::int_attr(n, "comm_tag"), r, dst};
    const Time start = events_.now();
    net_->send({r, dst, *chakra::int_attr(n, "comm_size"), route(r, dst)}, [] {},
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
                   complete_receive(rr, ri);
                 }
               });
  }

  void receive(int r, size_t i, const Node& n) {
    const MsgKey key{*chakra::int_attr(n, "comm_tag"), static_cast<int>(*chakra::int_attr(n, "comm_src")), r};
    if (delivered_[key] > 0) {
      --delivered_[key];
      complete_receive(r, i);
    } else {
      receivers_[key].emplace_back(r, i);
    }
  }

  void complete_receive(int r, size_t i) {
    comm_[r].emplace_back(ranks_[r].started[i], events_.now());
    record(r, i, Stream::Communication, ranks_[r].started[i]);
    finish(r, i);
  }

  void meet(int r, size_t i, const Node& n) {
    const Group& group = group_of(r, n);
    const std::vector<int>& members = group.members;
    const int k = seen_[{group.id, r}]++;
    auto& meeting = meetings_[{group.id, k}];
    if (!meeting) {
      meeting = std::make_unique<Meeting>();
      meeting->members = members;
      const auto kind = collective_of_comm_type(*chakra::int_attr(n, "comm_type"));
      meeting->barrier = !kind;
      if (kind) meeting->kind = *kind;
      meeting->size = kind ? collective_bytes_of_comm_size(*kind, *chakra::int_attr(n, "comm_size"),
                                                           static_cast<int>(members.size()))
                           : 0;
      meeting->root = static_cast<int>(chakra::int_attr(n, "root").value_or(0));
      if (kind == synth::CollectiveKind::AllToAll) meeting->traffic = chakra::string_attr(n, "tenet_traffic").value_or("");
    }
    meeting->arrived.emplace_back(r, i);
    if (meeting->arrived.size() < meeting->members.size()) return;
    ++collectives_;
    Meeting* m = meeting.get();
    auto all_done = [this, m] {
      for (auto [rr, ri] : m->arrived) {
        comm_[rr].emplace_back(ranks_[rr].started[ri], events_.now());
        record(rr, ri, Stream::Communication, ranks_[rr].started[ri]);
        finish(rr, ri);
      }
    };
    if (m->barrier || m->members.size() < 2 || m->size == 0) {
      events_.schedule_after(0, all_done);
      return;
    }
    // ASTRA-sim's dataset splits: pieces of the collective one after another (`active` at once).
    auto split = cfg_.dataset_splits.find(m->kind);
    size_t pieces = 1;
    Bytes piece_size = m->size;
    int active = 1;
    if (split != cfg_.dataset_splits.end() && split->second.splits > 1) {
      const int p = static_cast<int>(m->members.size());
      const bool all_gather = m->kind == synth::CollectiveKind::AllGather;
      // Sys::generate_collective and determine_chunk_size upstream: pieces of comm_size / splits
      // (at least a byte per NPU of the system, All-Gather aside), as many as cover comm_size.
      Bytes comm = comm_size_is_per_rank(m->kind) ? m->size / p : m->size;  // an uneven All-Gather rounds down
      Bytes chunk = comm / split->second.splits;
      if (!all_gather && chunk < p_) {
        chunk = p_;
        comm = chunk * split->second.splits;
      }
      chunk = std::max<Bytes>(chunk, 1);
      pieces = static_cast<size_t>((comm + chunk - 1) / chunk);
      piece_size = collective_bytes_of_comm_size(m->kind, chunk, p);
      active = std::max(1, split->second.active);
    }
    const synth::RingPlan* plan = ring_plan(*m, piece_size);
    const synth::Algorithm* a = plan ? nullptr : &algorithm(*m, piece_size);
    // Endpoint costs belong to ASTRA-sim's native collectives (MemBus, PacketBundle); a custom one
    // sends straight from the NPU (CustomAlgorithm::issue upstream), and so does one given by --coll.
    const EndpointModel endpoints = split != cfg_.dataset_splits.end() ? cfg_.endpoints : EndpointModel{};
    for (size_t i = 0; i < pieces; ++i) {
      auto on_done = [this, m, all_done] {
        if (++m->finished == m->runs.size())
          all_done();
        else if (m->started < m->runs.size())
          m->runs[m->started++]->start();
      };
      m->runs.push_back(plan ? std::make_unique<CollectiveRun>(*plan, *net_, events_, on_done, endpoints)
                             : std::make_unique<CollectiveRun>(*a, *net_, events_, on_done, endpoints));
    }
    while (m->started < m->runs.size() && m->started < static_cast<size_t>(active)) m->runs[m->started++]->start();
  }


  // The analytical network lets concurrent messages overrun a link; say where, and how far.
  void warn_overload(const NetworkReport& n) {
    size_t over = 0, worst = 0;
    for (size_t l = 0; l < n.links.size(); ++l)
      if (n.links[l].peak_demand > 1.0) {
        ++over;
        if (n.links[l].peak_demand > n.links[worst].peak_demand || n.links[worst].peak_demand <= 1.0) worst = l;
      }
    if (over == 0) return;
    const LinkReport& k = n.links[worst];
    warnings_.push_back(fmt::format("analytical network: {} link{} asked for more than {} bandwidth at once (most: {} at "
                                    "{:.0f} %, first over at {}); this network does not share links, so the time is "
                                    "optimistic: --network analytical-congestion shares them",
                                    over, over == 1 ? " was" : "s were", over == 1 ? "its" : "their", k.name,
                                    100 * k.peak_demand, format_time(k.peak_demand_at)));
  }

  // The meeting's ring as a plan (SimConfig::lazy_rings), or null: cached per collective, group,
  // root, size and producer, as algorithms are.
  const synth::RingPlan* ring_plan(const Meeting& m, Bytes size) {
    if (!cfg_.lazy_rings || !m.traffic.empty() || cfg_.sized_files.count(m.kind) > 0) return nullptr;
    const bool native = cfg_.dataset_splits.count(m.kind) > 0;
    if (cfg_.chunks_per_npu == 0 && !native) return nullptr;  // -k auto: the chunk search times algorithms
    auto it = cfg_.algorithms.find(m.kind);
    if (it == cfg_.algorithms.end() || chakra::names_algorithm_file(it->second)) return nullptr;
    const std::string& producer = it->second;
    const std::string key = fmt::format("{}|{}|{}|{}|{}", synth::to_string(m.kind), fmt::join(m.members, ","), m.root,
                                        size, producer);
    if (auto cached = plans_.find(key); cached != plans_.end()) return cached->second.get();
    std::unique_ptr<synth::RingPlan> plan;
    synth::BaselineSpec spec;
    try {
      spec = synth::parse_baseline(producer);
    } catch (const Error&) {
      return plans_.emplace(key, nullptr).first->second.get();  // "tenet", or a name algorithm() explains
    }
    const synth::Collective c = collective_of(m);
    if (auto made = synth::ring_plan(spec, t_, c, std::max<Bytes>(1, c.chunk_bytes_for(size)))) {
      // A replay keeps a byte per transfer (BasicLinkAdmission's state), the rest per member.
      topo::check_memory(static_cast<uint64_t>(made->size()),
                         fmt::format("{}: ring plan of {} of {} over {} ranks ({} chunks per NPU: {} transfers)", name_,
                                     synth::to_string(c.kind), format_bytes(size), c.num_ranks(), c.chunks_per_npu,
                                     made->size()),
                         "simulate fewer ranks, or fewer chunks per NPU (-k)");
      plan = std::make_unique<synth::RingPlan>(std::move(*made));
    }
    return plans_.emplace(key, std::move(plan)).first->second.get();
  }

  // The meeting's collective over its members, with the configured chunks per NPU (1 for -k auto,
  // where the chunk search starts).
  synth::Collective collective_of(const Meeting& m) const {
    synth::Collective c;
    c.kind = m.kind;
    for (int r : m.members) c.ranks.push_back(r);
    // ASTRA-sim's native algorithms (kinds with dataset splits) send each piece whole.
    const bool native = cfg_.dataset_splits.count(m.kind) > 0;
    c.chunks_per_npu = native ? 1 : std::max(1, cfg_.chunks_per_npu);
    c.root = std::clamp(m.root, 0, static_cast<int>(m.members.size()) - 1);
    return c;
  }

  const synth::Algorithm& algorithm(const Meeting& m, Bytes size) {
    synth::Collective c = collective_of(m);
    const bool native = cfg_.dataset_splits.count(m.kind) > 0;
    auto it = cfg_.algorithms.find(m.kind);
    std::string producer = it == cfg_.algorithms.end() ? "tenet" : it->second;
    if (auto files = cfg_.sized_files.find(m.kind); files != cfg_.sized_files.end() && !files->second.empty())
      producer = nearest_file(files->second, size);
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", synth::to_string(m.kind), fmt::join(m.members, ","), c.root,
                                        size, producer, m.traffic);
    auto cached = cache_.find(key);
    if (cached != cache_.end()) return *cached->second;
    // Groups of one shape (every tensor-parallel group of a rail cluster, every data-parallel group
    // on one rail) share one algorithm: one made for another group of the shape is renamed to this
    // one when it can be (synth/group_map.hpp: the same transfers over links of the same
    // properties, so it is correct and takes the same time). An algorithm file names its ranks.
    const bool from_file = chakra::names_algorithm_file(producer);
    const std::string shape = fmt::format("{}|{}|{}|{}|{}|{}", synth::to_string(m.kind), m.members.size(), c.root, size,
                                          producer, m.traffic);
    if (!from_file && cfg_.rename_groups)
      if (auto made = shapes_.find(shape); made != shapes_.end())
        for (const synth::Algorithm* other : made->second)
          if (auto renamed = synth::map_to_group(t_, *other, c.ranks)) {
            ++renamed_;
            return *cache_.emplace(key, std::make_unique<synth::Algorithm>(std::move(*renamed))).first->second;
          }
    if (!m.traffic.empty()) {
      // An uneven All-to-All (a mixture-of-experts layer): every rank sends `size` bytes, dealt to
      // the others as the traffic spec says; the producers get a unit's bytes (synth/traffic.hpp).
      try {
        const synth::Traffic traffic = synth::generate_traffic(m.traffic, c.num_ranks(), size, 1);
        const synth::TrafficUnits u = synth::to_units(traffic, synth::default_max_units(c.num_ranks()));
        c.set_pair_units(u.units);
        size = u.unit_bytes;
      } catch (const Error& e) {
        throw Error(fmt::format("{}: all-to-all of {} over {} ranks with traffic '{}': {}", name_, format_bytes(size),
                                c.num_ranks(), m.traffic, e.message()));
      }
    }
    std::unique_ptr<synth::Algorithm> a;
    if (from_file) {
      // An algorithm file is made for one size (as ASTRA-sim's custom collectives are): it runs as
      // it is, whatever comm_size says, but its collective and ranks must be this meeting's.
      a = std::make_unique<synth::Algorithm>(chakra::load_any_algorithm(producer, t_));
      if (a->collective.kind != c.kind || a->collective.ranks != c.ranks)
        throw Error(fmt::format("{}: {} is {} over NPUs {}, but the workload runs {} over ranks {}", name_, producer,
                                a->collective.describe(), fmt::join(a->collective.ranks, ","), synth::to_string(c.kind),
                                fmt::join(c.ranks, ",")));
      const Bytes wanted = std::max<Bytes>(1, a->collective.chunk_bytes_for(size));
      if (std::filesystem::path(producer).extension() == ".xml") {
        // The MSCCL runtime runs an XML algorithm for any size in its range, its chunks scaled to
        // the call: so does the simulator.
        a->chunk_bytes = wanted;
        a->clear_times();
        a->claimed_time = -1;
      } else if (a->chunk_bytes != wanted) {
        // A Tenet JSON or Chakra file is made for one size and runs as it is, as ASTRA-sim runs a
        // custom collective's ET whatever the workload's comm_size: say so.
        warnings_.push_back(fmt::format("{} of {} ran {} as it is: {} chunks of {}, where this size has {} of {} "
                                        "(ASTRA-sim runs custom collectives the same way; export per size to match)",
                                        synth::to_string(c.kind), format_bytes(size), producer,
                                        a->collective.num_chunks(), format_bytes(a->chunk_bytes), a->collective.num_chunks(),
                                        format_bytes(wanted)));
      }
    } else {
      // A group borrowing its idle server mates (synth/team_relay.hpp) keeps thousands of flows in
      // flight: the congestion and packet networks, which share links per flow, take a hundred
      // times longer over it (a gpt3 iteration on nvcluster:2x4: 0.24 s -> 30 s), so only the
      // analytical network gets it.
      synth::SynthOptions o;
      o.team_relay = cfg_.network == NetworkKind::Analytical;
      o.borrow_servers = false;  // every server runs its own group at the same time
      o.auto_chunk_transfers = synth::kSimAutoChunkTransfers;  // as made: relays' hops and hand-overs count
      // An All-Reduce over a cluster too large to synthesize flat is composed per level
      // (synth/composed.hpp): its chunks, and so its size estimate and chunk size, are the composition's.
      if (producer == "tenet") c = synth::as_synthesized(t_, c, o);
      // One such All-Reduce is the whole iteration's traffic: -k auto searches it as `tenet synth` does.
      if (c.all_reduce_chunks > 0) o.auto_chunk_transfers = synth::kAutoChunkTransferBudget;
      // A routed chunk (All-to-All, Scatter, Gather) is a transfer per hop: half the diameter on
      // average.
      const bool routed = synth::one_destination(c.kind);
      if (routed && half_diameter_ == 0) half_diameter_ = std::max(1, topo::npu_diameter(t_).hops / 2);
      const int64_t hops = routed ? half_diameter_ : 1;
      const int64_t transfers = synth::transfer_estimate(c) * hops;  // at the fewest chunks tried
      topo::check_memory(static_cast<uint64_t>(transfers) * synth::kSimBytesPerTransfer,
                         fmt::format("{}: {} of {} over {} ranks ({} chunks per NPU: about {} transfers)", name_,
                                     synth::to_string(c.kind), format_bytes(size), c.num_ranks(), c.chunks_per_npu,
                                     transfers),
                         "simulate fewer ranks, or fewer chunks per NPU (-k)");
      if (cfg_.chunks_per_npu == 0 && !native) {
        int most = 1;  // an iteration builds many collectives: keep each affordable
        for (c.chunks_per_npu = 2; most < 64 && synth::transfer_estimate(c) * hops <= synth::kSimAutoChunkTransfers;
             c.chunks_per_npu *= 2)
          most = c.chunks_per_npu;
        c.chunks_per_npu = 1;
        a = std::make_unique<synth::Algorithm>(
            synth::make_algorithm_auto_chunks(producer, t_, c, std::max<Bytes>(1, size), o, most).algorithm);
      } else {
        o.time_baselines = false;  // replayed below, with everything else in flight
        a = std::make_unique<synth::Algorithm>(
            synth::make_algorithm(producer, t_, c, std::max<Bytes>(1, c.chunk_bytes_for(size)), o));
      }
    }
    const synth::Algorithm& made = *cache_.emplace(key, std::move(a)).first->second;
    // A shape whose groups do not rename into each other keeps a few of its algorithms to try.
    if (std::vector<const synth::Algorithm*>& same = shapes_[shape]; !from_file && cfg_.rename_groups && same.size() < kShapeTries)
      same.push_back(&made);
    return made;
  }

  // Of algorithm files made for one size each, the one whose size is nearest `size` by ratio (the
  // larger on a tie). Each file is read once.
  std::string nearest_file(const std::vector<std::string>& files, Bytes size) {
    std::string best;
    double best_distance = 0;
    Bytes best_size = 0;
    for (const std::string& f : files) {
      auto [it, fresh] = file_sizes_.try_emplace(f, 0);
      if (fresh) {
        const synth::Algorithm a = chakra::load_any_algorithm(f, t_);
        it->second = std::max<Bytes>(1, a.chunk_bytes * a.collective.pieces());
      }
      const double distance = std::abs(std::log(static_cast<double>(it->second) / static_cast<double>(std::max<Bytes>(size, 1))));
      if (best.empty() || distance < best_distance || (distance == best_distance && it->second > best_size))
        best = f, best_distance = distance, best_size = it->second;
    }
    return best;
  }

  void record(int r, size_t i, Stream stream, Time start) {
    if (!cfg_.trace) return;
    const Node& n = *ranks_[r].nodes[i];
    trace_.push_back({r, stream, n.name().empty() ? ChakraProtoMsg::NodeType_Name(n.type()) : n.name(), start, events_.now()});
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
          why = fmt::format("a receive from rank {} with tag {} that no send matches", *chakra::int_attr(n, "comm_src"),
                            *chakra::int_attr(n, "comm_tag"));
        else if (std::find(ranks_[r].waiting_comm.begin(), ranks_[r].waiting_comm.end(), i) != ranks_[r].waiting_comm.end())
          why = fmt::format("waits for the in-flight limit ({}) while the operations in flight wait for others",
                            cfg_.max_in_flight);
        else if (n.type() == ChakraProtoMsg::COMM_COLL_NODE)
          why = "a collective that not every member of its group reaches";
        else
          why = "never finishes";
        stuck.push_back(fmt::format("rank {} node {} ('{}'): {}", r, n.id(), n.name(), why));
      }
    if (count == 0) return;
    throw Error(fmt::format("{}: the workload cannot finish: {} node{} wait forever, e.g. {}", name_, count,
                            count == 1 ? "" : "s", fmt::join(stuck, "; ")));
  }

  const topo::Topology& t_;
  const std::vector<chakra::EtFile>& w_;
  const SimConfig& cfg_;
  std::string name_;
  topo::Router router_;
  const int p_;
  EventQueue events_;
  std::unique_ptr<Network> net_;
  std::vector<Rank> ranks_;
  std::vector<RankStats> stats_;
  std::vector<std::vector<std::pair<Time, Time>>> compute_, cpu_, comm_;
  std::map<int, Time> memory_free_at_;  // per remote memory: when it is free
  std::map<MsgKey, int> delivered_;
  std::map<MsgKey, std::deque<std::pair<int, size_t>>> receivers_;
  mutable std::map<std::vector<int>, Group> groups_;                   // by members, in order
  mutable std::map<std::optional<std::string>, const Group*> group_texts_;  // by tenet_ranks text, if any
  std::map<std::pair<int, int>, int> seen_;                  // (group id, rank) -> its collectives so far
  std::map<std::pair<int, int>, std::unique_ptr<Meeting>> meetings_;  // (group id, k)
  std::unordered_map<std::string, std::unique_ptr<synth::Algorithm>> cache_;
  std::unordered_map<std::string, std::unique_ptr<synth::RingPlan>> plans_;  // null: no plan for it
  static constexpr size_t kShapeTries = 4;
  std::unordered_map<std::string, std::vector<const synth::Algorithm*>> shapes_;  // made, not renamed, per shape
  int64_t renamed_ = 0;  // algorithms renamed from another group's
  int half_diameter_ = 0;  // half the NPUs' hop diameter, once a routed collective needs it
  std::unordered_map<std::string, Bytes> file_sizes_;  // algorithm file -> the size it was made for
  std::unordered_map<uint64_t, std::vector<topo::LinkId>> routes_;
  std::vector<TraceSlice> trace_;
  int collectives_ = 0;
  std::vector<std::string> warnings_;
  size_t total_nodes_ = 0, done_nodes_ = 0;
};

}  // namespace

std::optional<synth::CollectiveKind> collective_of_comm_type(int64_t comm_type) {
  switch (comm_type) {
    case ChakraProtoMsg::ALL_REDUCE: return synth::CollectiveKind::AllReduce;
    case ChakraProtoMsg::REDUCE: return synth::CollectiveKind::Reduce;
    case ChakraProtoMsg::ALL_GATHER: return synth::CollectiveKind::AllGather;
    case ChakraProtoMsg::GATHER: return synth::CollectiveKind::Gather;
    case ChakraProtoMsg::SCATTER: return synth::CollectiveKind::Scatter;
    case ChakraProtoMsg::BROADCAST: return synth::CollectiveKind::Broadcast;
    case ChakraProtoMsg::ALL_TO_ALL: return synth::CollectiveKind::AllToAll;
    case ChakraProtoMsg::REDUCE_SCATTER:
    case ChakraProtoMsg::REDUCE_SCATTER_BLOCK: return synth::CollectiveKind::ReduceScatter;
    default: return std::nullopt;  // BARRIER: no data; handled as a meeting point
  }
}

Bytes collective_bytes_of_comm_size(synth::CollectiveKind kind, Bytes comm_size, int ranks) {
  if (!comm_size_is_per_rank(kind)) return comm_size;
  // Sizes are limited to topo::kMaxBytes (2^60) where they are read; saturate rather than wrap.
  return comm_size > std::numeric_limits<Bytes>::max() / std::max(ranks, 1) ? std::numeric_limits<Bytes>::max()
                                                                            : comm_size * ranks;
}

Bytes comm_size_of_collective_bytes(synth::CollectiveKind kind, Bytes bytes, int ranks) {
  if (!comm_size_is_per_rank(kind)) return bytes;
  if (ranks < 1 || bytes % ranks != 0)
    throw Error(fmt::format("{} of {} over {} ranks: Chakra's comm_size is each rank's input ({}/{}), so the size must "
                            "be a multiple of {}",
                            synth::to_string(kind), format_bytes(bytes), ranks, format_bytes(bytes), ranks, ranks));
  return bytes / ranks;
}

uint64_t estimate_packets(const std::vector<chakra::EtFile>& workload, Bytes mtu) {
  const double p_all = static_cast<double>(workload.size());
  double packets = 0;
  for (const chakra::EtFile& f : workload)
    for (const Node& n : f.nodes) {
      const double size = static_cast<double>(std::max<int64_t>(0, chakra::int_attr(n, "comm_size").value_or(0)));
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) {
        packets += std::ceil(size / static_cast<double>(mtu));
      } else if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
        const auto kind = collective_of_comm_type(chakra::int_attr(n, "comm_type").value_or(ChakraProtoMsg::BARRIER));
        if (!kind) continue;
        double p = p_all;
        if (auto ranks = chakra::string_attr(n, "tenet_ranks"))
          p = static_cast<double>(std::count(ranks->begin(), ranks->end(), ',') + 1);
        if (p < 2) continue;
        const double share =
            (*kind == synth::CollectiveKind::AllReduce ? 2.0 : 1.0) * (comm_size_is_per_rank(*kind) ? size * p : size) * (p - 1) / p;
        packets += std::ceil(share / static_cast<double>(mtu));
      }
    }
  return packets >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(packets);
}

SimResult simulate(const topo::Topology& t, const std::vector<chakra::EtFile>& workload, const SimConfig& config,
                   const std::string& name) {
  if (workload.empty()) throw Error(fmt::format("{}: the workload has no ranks", name));
  if (config.network == NetworkKind::Packet && config.packet.mtu > 0) {
    const uint64_t packets = estimate_packets(workload, config.packet.mtu);
    if (packets > config.packet.max_packets) {
      Bytes mtu = config.packet.mtu;  // the power-of-two multiple of the MTU that fits
      while (mtu < (Bytes{1} << 30) && static_cast<double>(packets) * static_cast<double>(config.packet.mtu) /
                                               static_cast<double>(mtu) > static_cast<double>(config.packet.max_packets))
        mtu *= 2;
      throw Error(fmt::format("{}: packet network: about {} packets to simulate at a {} MTU, over the limit of {} "
                              "(about {} at {:.0f} million packets a second): raise --mtu to {} (about {} packets), or "
                              "--max-packets to run it anyway",
                              name, packets, format_bytes(config.packet.mtu), config.packet.max_packets,
                              format_time(static_cast<Time>(std::min(1e18, static_cast<double>(packets) / kPacketsPerSecond *
                                                                               static_cast<double>(kPicosPerSecond)))),
                              kPacketsPerSecond / 1e6, format_bytes(mtu),
                              static_cast<uint64_t>(static_cast<double>(packets) * static_cast<double>(config.packet.mtu) /
                                                    static_cast<double>(mtu))));
    }
  }
  return Simulator(t, workload, config, name).run();
}

std::string trace_json(const SimResult& r) {
  nlohmann::json events = nlohmann::json::array();
  // Track ids per rank: 0 compute, 1 CPU, 2 remote memory, 3 + k the k-th communication lane. A slice goes to the
  // first lane free at its start, so slices of one lane never overlap (Perfetto nests by time).
  std::vector<size_t> order(r.trace.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(r.trace[a].rank, r.trace[a].start) < std::tie(r.trace[b].rank, r.trace[b].start);
  });
  std::map<int, std::vector<Time>> lanes;  // per rank: when each communication lane is free again
  std::map<int, std::set<int>> tracks;
  for (size_t i : order) {
    const TraceSlice& s = r.trace[i];
    int tid = s.stream == Stream::Compute ? 0 : s.stream == Stream::Cpu ? 1 : 2;
    if (s.stream == Stream::Communication) {
      std::vector<Time>& free_at = lanes[s.rank];
      size_t lane = 0;
      while (lane < free_at.size() && free_at[lane] > s.start) ++lane;
      if (lane == free_at.size()) free_at.push_back(0);
      free_at[lane] = s.end;
      tid = 3 + static_cast<int>(lane);
    }
    tracks[s.rank].insert(tid);
    events.push_back({{"name", s.name},
                      {"ph", "X"},
                      {"pid", s.rank},
                      {"tid", tid},
                      {"ts", static_cast<double>(s.start) / 1e6},
                      {"dur", static_cast<double>(s.end - s.start) / 1e6}});
  }
  std::set<int> ranks;
  for (const auto& [rank, tids] : tracks) {
    ranks.insert(rank);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", fmt::format("rank {}", rank)}}}});
    for (int tid : tids)
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", rank},
                        {"tid", tid},
                        {"args",
                         {{"name", tid == 0   ? std::string("compute")
                                   : tid == 1 ? std::string("CPU")
                                   : tid == 2 ? std::string("remote memory")
                                   : tid == 3 ? std::string("communication")
                                              : fmt::format("communication {}", tid - 2)}}}});
  }
  // Per-link activity: one process for the network, a thread per link that carried data.
  const int network_pid = ranks.empty() ? 0 : *ranks.rbegin() + 1;
  bool any = false;
  for (size_t l = 0; l < r.network.links.size(); ++l) {
    const LinkReport& k = r.network.links[l];
    if (k.activity.empty()) continue;
    any = true;
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", network_pid}, {"tid", l}, {"args", {{"name", k.name}}}});
    for (const Interval& iv : k.activity)
      events.push_back({{"name", iv.share < 1 ? fmt::format("{:.0f} % busy", 100 * iv.share) : std::string("busy")},
                        {"ph", "X"},
                        {"pid", network_pid},
                        {"tid", l},
                        {"ts", static_cast<double>(iv.start) / 1e6},
                        {"dur", static_cast<double>(iv.end - iv.start) / 1e6}});
  }
  if (any)
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", network_pid}, {"args", {{"name", "network links"}}}});
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() + "\n";
}

}  // namespace tenet::sim
