#include "synth/verify/verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "synth/cost/protocol_view.hpp"
#include "synth/cost/timing.hpp"
#include "synth/ir/rank_set.hpp"
#include "synth/ir/references.hpp"
#include "synth/verify/time_order.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"

namespace tenet::synth {

namespace {

// Content of a (node, chunk) slot during the replay, for the reducing collectives.
constexpr int32_t kNothing = -1;  // holds no copy
constexpr int32_t kOwnData = -2;  // holds its own contribution only (the precondition)

class Verifier {
 public:
  // `t`: what `a` is timed on (under its protocol); `described`: the topology as described, whose
  // fingerprint `a` records.
  Verifier(const topo::Topology& t, const topo::Topology& described, const Algorithm& a,
           const VerifyOptions& o, Report& r)
      : t_(t),
        described_(described),
        a_(a),
        opt_(o),
        r_(r),
        n_(static_cast<TransferId>(a.size())),
        chunks_(a.collective.num_chunks()),
        reduction_(a.reduce_bandwidth > 0 ? a.reduction_time() : 0) {}

  void run() {
    r_.transfers = a_.size();
    r_.claimed_time = a_.claimed_time;
    try {
      a_.collective.validate(t_);
    } catch (const Error& e) {
      violate(ViolationKind::BadReference, -1, -1, -1, -1, -1, [&] {
        return fmt::format("the collective is not valid on this topology: {}", e.message());
      });
      return;
    }
    if (a_.topology_fingerprint != 0 && a_.topology_fingerprint != described_.fingerprint())
      warn(WarningKind::FingerprintMismatch, -1, [&] {
        return fmt::format(
            "the algorithm was made for topology {:016x} ('{}'), not this one ({:016x})",
            a_.topology_fingerprint, a_.topology_name, described_.fingerprint());
      });
    if (a_.reduce_bandwidth < 0)
      violate(ViolationKind::BadReference, -1, -1, -1, -1, -1, [&] {
        return fmt::format("the reduction bandwidth is negative ({} B/s)", a_.reduce_bandwidth);
      });
    const bool structure_ok = check_structure();
    const bool order_ok = check_dependency_order();
    if (!establish_times(structure_ok && order_ok)) return;
    check_durations_and_dependencies();
    check_links();
    if (a_.serial_channels) check_serial_channels();
    simulate();
    check_postconditions();
    summarize(structure_ok && order_ok && opt_.model_time);
  }

 private:
  template <typename F>
  void violate(ViolationKind k, TransferId id, ChunkId c, LinkId l, NodeId node, Time time,
               F&& msg) {
    ++r_.violation_count;
    ++r_.counts[static_cast<int>(k)];
    if (r_.violations.size() < opt_.max_reported)
      r_.violations.push_back({k, id, c, l, node, time, msg()});
  }
  template <typename F>
  void warn(WarningKind k, TransferId id, F&& msg) {
    ++r_.warning_count;
    if (r_.warnings.size() < opt_.max_reported) r_.warnings.push_back({k, id, msg()});
  }

  std::string node_name(NodeId v) const {
    return v >= 0 && v < t_.num_nodes() ? t_.node(v).name : fmt::format("#{}", v);
  }
  std::string who(TransferId id) const {
    const Transfer& x = a_[id];
    if (x.count != 1)
      return fmt::format("transfer {} (chunks {}..{}, {} -> {})", id, x.chunk,
                         x.chunk + x.count - 1, node_name(x.src), node_name(x.dst));
    return fmt::format("transfer {} (chunk {}, {} -> {})", id, x.chunk, node_name(x.src),
                       node_name(x.dst));
  }
  size_t slot(NodeId v, ChunkId c) const { return static_cast<size_t>(v) * chunks_ + c; }

  // Ids in range, routes contiguous through pass-through nodes, endpoints that may hold data.
  bool check_structure() {
    valid_.assign(n_, 1);
    const bool reducing = reduces(a_.collective.kind);
    for (TransferId id = 0; id < n_; ++id) {
      const Transfer& x = a_[id];
      auto bad = [&](ViolationKind k, LinkId l, NodeId v, auto&& text) {
        valid_[id] = 0;
        violate(k, id, x.chunk, l, v, -1, [&] { return fmt::format("{}: {}", who(id), text()); });
      };
      // What the transfer names must exist (synth/ir/references.hpp): a link that does not is a
      // broken route, anything else a bad reference; the route is not walked then.
      for_each_bad_reference(a_, t_, chunks_, id, [&](const BadReference& b) {
        const bool link = b.field == ReferenceField::RouteLink;
        const bool node =
            b.field == ReferenceField::Source || b.field == ReferenceField::Destination;
        bad(link ? ViolationKind::BrokenRoute : ViolationKind::BadReference,
            link ? static_cast<LinkId>(b.value) : -1, node ? static_cast<NodeId>(b.value) : -1,
            [&] { return describe(b); });
      });
      if (!valid_[id]) continue;
      if (x.src == x.dst)
        bad(ViolationKind::BrokenRoute, -1, x.src,
            [&] { return std::string("source and destination are the same node"); });
      for (NodeId v : {x.src, x.dst})
        if (t_.is_switch(v) && !t_.node(v).can_reduce)
          bad(ViolationKind::SwitchCapability, -1, v, [&] {
            return fmt::format(
                "switch '{}' cannot hold or reduce data: it is not marked reduce-capable",
                t_.node(v).name);
          });
      if (x.op == Op::Reduce && !reducing)
        bad(ViolationKind::WrongOperation, -1, x.dst, [&] {
          return fmt::format("reduces, but {} does not reduce", to_string(a_.collective.kind));
        });
      if (x.start >= 0 && x.end >= 0 && x.end < x.start)
        bad(ViolationKind::BadReference, -1, -1, [&] {
          return fmt::format("ends ({}) before it starts ({})", format_time(x.end),
                             format_time(x.start));
        });
      auto route = a_.route(id);
      if (route.empty()) {
        bad(ViolationKind::BrokenRoute, -1, -1, [&] { return std::string("its route is empty"); });
        continue;
      }
      NodeId at = x.src;
      for (size_t i = 0; i < route.size(); ++i) {
        const LinkId l = route[i];
        if (std::find(route.begin(), route.begin() + static_cast<std::ptrdiff_t>(i), l) !=
            route.begin() + static_cast<std::ptrdiff_t>(i)) {
          bad(ViolationKind::BrokenRoute, l, -1,
              [&] { return fmt::format("route crosses link {} twice: a route is a path", l); });
          break;
        }
        const topo::Link& link = t_.link(l);
        if (link.src != at) {
          bad(ViolationKind::BrokenRoute, l, at, [&] {
            return fmt::format("route is not contiguous: {} starts at {}, not at {}",
                               t_.describe_link(l), node_name(link.src), node_name(at));
          });
          break;
        }
        at = link.dst;
        if (i + 1 < route.size() && !t_.passes_through(at)) {
          bad(ViolationKind::BrokenRoute, l, at, [&] {
            return fmt::format(
                "route passes through NPU '{}', which is no router: it must receive the "
                "chunk and send it on in a transfer of its own",
                node_name(at));
          });
          break;
        }
      }
      if (valid_[id] && at != x.dst)
        bad(ViolationKind::BrokenRoute, route.back(), at, [&] {
          return fmt::format("route ends at {}, not at its destination {}", node_name(at),
                             node_name(x.dst));
        });
      if (const Bandwidth rate = a_.rate(id); valid_[id] && rate != 0) {
        Bandwidth narrowest = t_.link(route[0]).bandwidth;
        LinkId where = route[0];
        for (LinkId l : route)
          if (t_.link(l).bandwidth < narrowest) narrowest = t_.link(where = l).bandwidth;
        if (rate < 0 || rate > narrowest)
          bad(ViolationKind::BadRate, where, -1, [&] {
            return rate < 0 ? fmt::format("its rate {} B/s is negative", rate)
                            : fmt::format("moves at {}, faster than {} on its route allows ({})",
                                          format_bandwidth(rate), t_.describe_link(where),
                                          format_bandwidth(narrowest));
          });
      }
    }
    return std::all_of(valid_.begin(), valid_.end(), [](char v) { return v != 0; });
  }

  // Dependencies point to existing, earlier transfers; a cycle is named as such.
  bool check_dependency_order() {
    bool forward = false;
    for (TransferId id = 0; id < n_; ++id)
      for (TransferId d : a_.deps(id)) {
        if (d < 0 || d >= n_) {
          valid_[id] = 0;
          violate(ViolationKind::BadReference, id, a_[id].chunk, -1, -1, -1, [&] {
            return fmt::format("{}: depends on transfer {}, which does not exist", who(id), d);
          });
        } else if (d >= id) {
          forward = true;
        }
      }
    if (!forward) return true;
    // Kahn's algorithm over the dependency graph; what it cannot order lies on or behind a cycle.
    std::vector<int> indegree(n_, 0);
    std::vector<std::vector<TransferId>> users(n_);
    for (TransferId id = 0; id < n_; ++id)
      for (TransferId d : a_.deps(id))
        if (d >= 0 && d < n_) {
          ++indegree[id];
          users[d].push_back(id);
        }
    std::vector<TransferId> queue;
    for (TransferId id = 0; id < n_; ++id)
      if (indegree[id] == 0) queue.push_back(id);
    for (size_t i = 0; i < queue.size(); ++i)
      for (TransferId u : users[queue[i]])
        if (--indegree[u] == 0) queue.push_back(u);
    if (queue.size() < static_cast<size_t>(n_)) {
      // Walk backwards along unresolved dependencies until a transfer repeats: that is a cycle.
      TransferId at = 0;
      while (indegree[at] == 0) ++at;
      std::vector<int> seen_at(n_, -1);
      std::vector<TransferId> path;
      while (seen_at[at] < 0) {
        seen_at[at] = static_cast<int>(path.size());
        path.push_back(at);
        for (TransferId d : a_.deps(at))
          if (d >= 0 && d < n_ && indegree[d] > 0) {
            at = d;
            break;
          }
      }
      std::vector<TransferId> cycle(path.begin() + seen_at[at], path.end());
      std::reverse(cycle.begin(), cycle.end());
      for (TransferId id : cycle) valid_[id] = 0;
      violate(ViolationKind::DependencyCycle, cycle.front(), a_[cycle.front()].chunk, -1, -1, -1,
              [&] {
                std::string chain;
                for (TransferId id : cycle) chain += fmt::format("{} -> ", id);
                return fmt::format(
                    "dependencies form a cycle: transfer {}{} (each waits for the one before it)",
                    chain, cycle.front());
              });
    } else {
      for (TransferId id = 0; id < n_; ++id)
        for (TransferId d : a_.deps(id))
          if (d >= id && d < n_)
            violate(ViolationKind::DependencyOrder, id, a_[id].chunk, -1, -1, -1, [&] {
              return fmt::format(
                  "{}: depends on transfer {}, listed after it; transfers must be listed "
                  "in dependency order",
                  who(id), d);
            });
    }
    return false;
  }

  // The schedule to check: the algorithm's own times, or the timing model's when it has none.
  bool establish_times(bool can_compute) {
    if (a_.fully_timed()) return true;  // read from the algorithm (start_of, end_of), not copied
    if (!can_compute) return false;     // the structural violations already explain why
    start_.resize(n_);
    end_.resize(n_);
    compute_times(t_, a_, start_, end_);
    warn(WarningKind::TimesComputed, -1, [&] {
      return std::string(
          "the algorithm carries no (or incomplete) times: verified the schedule the "
          "timing model gives it");
    });
    return true;
  }

  void check_durations_and_dependencies() {
    RouteCoster coster(t_, a_);
    rate_.assign(n_, 0);
    occupancy_.assign(n_, 0);
    for (TransferId id = 0; id < n_; ++id) {
      if (!valid_[id]) continue;
      const RouteCost c = coster(a_, id);
      rate_[id] = c.rate;
      occupancy_[id] = c.occupancy;
      if (end_of(id) - start_of(id) < c.duration)
        violate(ViolationKind::TooShort, id, a_[id].chunk, a_.route(id)[0], -1, start_of(id), [&] {
          return fmt::format(
              "{}: takes {} but the {} link model needs {} ({} at {} plus {} latency)", who(id),
              format_time(end_of(id) - start_of(id)), to_string(a_.link_model),
              format_time(c.duration), format_bytes(a_.bytes(id)), format_bandwidth(c.rate),
              format_time(c.latency));
        });
      for (TransferId d : a_.deps(id))
        if (d >= 0 && d < n_ && start_of(id) < usable(d))
          violate(ViolationKind::DependencyViolated, id, a_[id].chunk, -1, -1, start_of(id), [&] {
            if (usable(d) != end_of(d))
              return fmt::format(
                  "{}: starts at {}, before transfer {} it depends on has been reduced at {} "
                  "(it arrives at {}; a reduction of {} at {} takes {})",
                  who(id), format_time(start_of(id)), d, format_time(usable(d)),
                  format_time(end_of(d)), format_bytes(a_.chunk_bytes),
                  format_bandwidth(a_.reduce_bandwidth), format_time(reduction_));
            return fmt::format("{}: starts at {}, before transfer {} it depends on ends at {}",
                               who(id), format_time(start_of(id)), d, format_time(end_of(d)));
          });
    }
  }

  // In serial channels (Algorithm::serial_channels), each transfer in a channel other than 0 starts
  // once the one listed before it over the same first link in that channel has left the link.
  void check_serial_channels() {
    RouteCoster coster(t_, a_);
    std::unordered_map<uint64_t, TransferId>
        last;  // per (first link, channel): its latest transfer
    for (TransferId id = 0; id < n_; ++id) {
      if (!valid_[id] || a_[id].channel == 0) continue;
      const uint64_t queue = static_cast<uint64_t>(a_.route(id)[0]) << 16 | a_[id].channel;
      const auto [it, first] = last.try_emplace(queue, id);
      if (first) continue;
      const TransferId before = it->second;
      it->second = id;
      const Time left = start_of(before) + coster(a_, before).occupancy;
      if (start_of(id) < left)
        violate(
            ViolationKind::ChannelOverlap, id, a_[id].chunk, a_.route(id)[0], -1, start_of(id),
            [&] {
              return fmt::format(
                  "{}: starts at {} in serial channel {}, before transfer {} before it there has "
                  "left link {} at {}",
                  who(id), format_time(start_of(id)), a_[id].channel, before, a_.route(id)[0],
                  format_time(left));
            });
    }
  }

  // Per link, at every instant the rates held over [start, start + occupancy) must sum to at most
  // its bandwidth (under `hold` a transfer holds all of it). A sweep over starts and ends, ends
  // first at the same instant. A transfer's occupancy and rate are worked out per link it uses,
  // not kept per transfer (16 B each: 268 MB for a 64x64 torus All-Gather).
  void check_links() {
    std::vector<int64_t> offset(t_.num_links() + 1, 0);
    for (TransferId id = 0; id < n_; ++id)
      if (valid_[id])
        for (LinkId l : a_.route(id)) ++offset[l + 1];
    std::partial_sum(offset.begin(), offset.end(), offset.begin());
    std::vector<TransferId> on_link(offset.back());
    {
      std::vector<int64_t> next(offset.begin(), offset.end() - 1);
      for (TransferId id = 0; id < n_; ++id)
        if (valid_[id])
          for (LinkId l : a_.route(id)) on_link[next[l]++] = id;
    }
    r_.link_busy.assign(t_.num_links(), 0);
    struct Use {
      Time start;
      TransferId id;
      Time occupancy;
      Bandwidth held;
    };
    std::vector<Use> uses;
    std::vector<std::pair<Time, int32_t>> ends;  // (end of occupancy, index in `uses`)
    std::vector<int32_t> position, holding;  // per use, its place in `holders`; per holder, its use
    std::vector<TransferId>& holders = holders_;
    auto by_start = [](const Use& x, const Use& y) {
      return x.start != y.start ? x.start < y.start : x.id < y.id;
    };
    for (LinkId l = 0; l < t_.num_links(); ++l) {
      const Bandwidth capacity = t_.link(l).bandwidth;
      uses.clear();
      bool whole = true;
      for (int64_t i = offset[l]; i < offset[l + 1]; ++i) {
        const TransferId id = on_link[i];
        const Bandwidth held = held_rate(t_, l, rate_[id], a_.link_model);
        r_.link_busy[l] += busy_share(occupancy_[id], held, capacity);
        uses.push_back({start_of(id), id, occupancy_[id], held});
        whole = whole && held >= capacity;
      }
      // In start order (usually already: list order is time order).
      if (!std::is_sorted(uses.begin(), uses.end(), by_start))
        std::sort(uses.begin(), uses.end(), by_start);
      if (whole) {
        // Every transfer takes the whole link (always, on homogeneous topologies): no two may
        // overlap, which one scan in start order checks.
        const Use* busy = nullptr;  // the use whose occupancy ends last so far
        for (const Use& u : uses) {
          if (u.occupancy <= 0) continue;
          if (busy && u.start < busy->start + busy->occupancy) {
            holders.assign(1, busy->id);
            overbooked(l, u.id, capacity, capacity);
          }
          if (!busy || u.start + u.occupancy > busy->start + busy->occupancy) busy = &u;
        }
        holders.clear();
        continue;
      }
      ends.clear();
      for (size_t k = 0; k < uses.size(); ++k)
        if (uses[k].occupancy > 0)
          ends.emplace_back(uses[k].start + uses[k].occupancy, static_cast<int32_t>(k));
      if (!std::is_sorted(ends.begin(), ends.end())) std::sort(ends.begin(), ends.end());
      position.assign(uses.size(), -1);
      holding.clear();
      Bandwidth used = 0;
      size_t i = 0, j = 0;
      while (i < uses.size()) {
        if (uses[i].occupancy <= 0) {  // holds nothing
          ++i;
          continue;
        }
        if (j < ends.size() && ends[j].first <= uses[i].start) {  // ends first at the same instant
          const int32_t k = ends[j++].second;
          used -= uses[k].held;
          const int32_t p = position[k];
          holders[p] = holders.back();
          holding[p] = holding.back();
          position[holding[p]] = p;
          holders.pop_back();
          holding.pop_back();
          position[k] = -1;
          continue;
        }
        const Use& u = uses[i];
        if (used + u.held > capacity) overbooked(l, u.id, used, u.held);
        used += u.held;
        position[i] = static_cast<int32_t>(holders.size());
        holders.push_back(u.id);
        holding.push_back(static_cast<int32_t>(i));
        ++i;
      }
      holders.clear();
    }
  }

  void overbooked(LinkId l, TransferId id, Bandwidth used, Bandwidth rate) {
    violate(ViolationKind::LinkOverbooked, id, a_[id].chunk, l, -1, start_of(id), [&] {
      std::vector<TransferId> others = holders_;
      std::sort(others.begin(), others.end());
      std::string list;
      for (size_t i = 0; i < others.size() && i < 4; ++i)
        list += fmt::format("{}{}", i ? ", " : "", others[i]);
      if (others.size() > 4) list += fmt::format(" and {} more", others.size() - 4);
      if (a_.link_model == LinkModel::Hold)
        return fmt::format(
            "{} starts on {} at {} while transfer{} {} still hold{} it (the hold model gives a "
            "link to one transfer at a time)",
            who(id), t_.describe_link(l), format_time(start_of(id)), others.size() > 1 ? "s" : "",
            list, others.size() > 1 ? "" : "s");
      return fmt::format(
          "{} starts on {} at {} needing {} while transfer{} {} already hold{} {}: {} of its {}",
          who(id), t_.describe_link(l), format_time(start_of(id)), format_bandwidth(rate),
          others.size() > 1 ? "s" : "", list, others.size() > 1 ? "" : "s", format_bandwidth(used),
          format_bandwidth(used + rate), format_bandwidth(t_.link(l).bandwidth));
    });
  }

  // Replays the transfers in time order: arrivals before departures at the same instant.
  void simulate() {
    const Collective& coll = a_.collective;
    reducing_ = reduces(coll.kind);
    rank_of_.assign(t_.num_nodes(), -1);
    for (int r = 0; r < coll.num_ranks(); ++r)
      if (coll.ranks[r] >= 0 && coll.ranks[r] < t_.num_nodes()) rank_of_[coll.ranks[r]] = r;
    const size_t slots = static_cast<size_t>(t_.num_nodes()) * chunks_;
    // A cell per (node, chunk): 5 bytes where chunks reduce, 1 where they are copied. An
    // algorithm file states its chunk count; past the memory it is an error, not a kill.
    topo::check_memory(slots * (reducing_ ? 5 : 1),
                       fmt::format("verifying {} chunks on {} nodes", chunks_, t_.num_nodes()),
                       "an algorithm of fewer chunks can be verified");
    if (reducing_) {
      content_.assign(slots, kNothing);
      for (int r = 0; r < coll.num_ranks(); ++r)
        for (ChunkId c = 0; c < chunks_; ++c) content_[slot(coll.ranks[r], c)] = kOwnData;
      consumed_.assign(slots, false);
      snapshot_.assign(n_, kNothing);
    } else {
      holds_.assign(slots, false);
      for (ChunkId c = 0; c < chunks_; ++c) holds_[slot(coll.ranks[coll.origin(c)], c)] = true;
    }
    started_.assign(n_, 0);

    // Departures in start order and arrivals in usable order (a reduced chunk is there once the
    // reduction is done), ties by id: each a time read once with its id (16 B a transfer, for
    // each order: 538 MB for the 16.8M transfers of a 64x64 torus), sorted where the list is not
    // in that order already, so that neither the sort nor the replay reads a transfer's times
    // where it is.
    std::vector<TimedTransfer> departures, arrivals;
    departures.reserve(n_);
    arrivals.reserve(n_);
    for (TransferId id = 0; id < n_; ++id)
      if (valid_[id]) {
        departures.push_back({start_of(id), id});
        arrivals.push_back({usable(id), id});
      }
    for (std::vector<TimedTransfer>* order : {&departures, &arrivals})
      if (!std::is_sorted(order->begin(), order->end())) sort_by_time(*order);
    size_t i = 0, j = 0;
    while (i < departures.size() || j < arrivals.size()) {
      if (j < arrivals.size() && (i == departures.size() || arrivals[j].at <= departures[i].at))
        arrive(arrivals[j++].id);
      else
        depart(departures[i++].id);
    }
  }

  RankSet set_of(int32_t content, NodeId v) const {
    return content == kOwnData ? RankSet::single(rank_of_[v]) : pool_[content];
  }

  void depart(TransferId id) {
    const Transfer& x = a_[id];
    if (x.from_input) {
      depart_input(id);
      return;
    }
    for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) {
      const size_t s = slot(x.src, c);
      const bool has = reducing_ ? content_[s] != kNothing : holds_[s];
      if (!has) {
        violate(ViolationKind::SourceLacksData, id, c, -1, x.src, start_of(id), [&] {
          return fmt::format("{}: {} does not hold chunk {} when the transfer starts at {}{}",
                             who(id), node_name(x.src), c, format_time(start_of(id)),
                             arrival_hint(id, c));
        });
        return;
      }
    }
    started_[id] = 1;
    if (reducing_) {
      snapshot_[id] = static_cast<int32_t>(in_flight_.size());
      for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) {
        const size_t s = slot(x.src, c);
        in_flight_.push_back(set_of(content_[s], x.src));
        consumed_[s] = true;
      }
    }
  }

  // A transfer that sends its source's input: what the precondition put there (a rank's own
  // contribution; a chunk it starts with), whatever has arrived since. The copy is not consumed.
  void depart_input(TransferId id) {
    const Transfer& x = a_[id];
    const int r = rank_of_[x.src];
    for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c)
      if (r < 0 || !a_.collective.initially_holds(r, c)) {
        violate(ViolationKind::SourceLacksData, id, c, -1, x.src, start_of(id), [&] {
          return fmt::format("{}: sends its input of chunk {}, but {} starts without chunk {}",
                             who(id), c, node_name(x.src), c);
        });
        return;
      }
    started_[id] = 1;
    if (reducing_) {
      snapshot_[id] = static_cast<int32_t>(in_flight_.size());
      in_flight_.insert(in_flight_.end(), x.count, RankSet::single(r));
    }
  }

  // Why the source lacks the chunk: it arrives later, its carrier never had it, or nothing brings
  // it.
  std::string arrival_hint(TransferId id, ChunkId c) const {
    if (++hints_ > 20) return "";
    const Transfer& x = a_[id];
    for (TransferId k = 0; k < n_; ++k) {
      if (!valid_[k] || a_[k].dst != x.src || !carries(k, c)) continue;
      if (usable(k) > start_of(id))
        return fmt::format("; it {} there at {} (transfer {})",
                           usable(k) == end_of(k) ? "arrives" : "is reduced",
                           format_time(usable(k)), k);
      if (!started_[k])
        return fmt::format("; transfer {}, which was to bring it, never had it either", k);
    }
    return "; no transfer ever brings it there";
  }

  void arrive(TransferId id) {
    if (!started_[id]) return;  // its departure was already reported
    const Transfer& x = a_[id];
    for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) arrive(id, c);
  }

  // Chunk c of those transfer `id` carries lands at its destination.
  void arrive(TransferId id, ChunkId c) {
    const Transfer& x = a_[id];
    const size_t d = slot(x.dst, c);
    if (!reducing_) {
      if (holds_[d])
        warn(WarningKind::Redundant, id, [&] {
          return fmt::format("{}: {} already holds chunk {}", who(id), node_name(x.dst), c);
        });
      holds_[d] = true;
      return;
    }
    const RankSet& incoming =
        in_flight_[snapshot_[id] + (c - x.chunk)];  // a separate pool: own() grows pool_
    if (x.op == Op::Copy) {
      if (content_[d] != kNothing) {
        RankSet old = set_of(content_[d], x.dst);
        if (old == incoming) {
          warn(WarningKind::Redundant, id, [&] {
            return fmt::format("{}: {} already holds chunk {} with contributions {}", who(id),
                               node_name(x.dst), c, old.str());
          });
        } else if (!incoming.includes(old) && !consumed_[d]) {
          violate(ViolationKind::Overwrite, id, c, -1, x.dst, end_of(id), [&] {
            return fmt::format(
                "{}: the copy overwrites {}'s chunk {} holding contributions {} with {} "
                "before it was sent on; contributions {} are lost",
                who(id), node_name(x.dst), c, old.str(), incoming.str(), old.minus(incoming).str());
          });
        }
      }
      own(d, x.dst) = incoming;
      consumed_[d] = false;
      return;
    }
    if (content_[d] == kNothing && t_.is_switch(x.dst)) {
      // A reduce-capable switch's accumulator starts empty: the first contribution just lands.
      own(d, x.dst) = incoming;
      consumed_[d] = false;
      return;
    }
    if (content_[d] == kNothing) {
      violate(ViolationKind::ReduceIntoNothing, id, c, -1, x.dst, end_of(id), [&] {
        return fmt::format("{}: reduces into {}, which holds no copy of chunk {} to reduce into",
                           who(id), node_name(x.dst), c);
      });
      return;
    }
    RankSet& mine = own(d, x.dst);
    const int twice = mine.first_common(incoming);
    if (twice >= 0) {
      violate(ViolationKind::DoubleCount, id, c, -1, x.dst, end_of(id), [&] {
        return fmt::format(
            "{}: counts rank {} twice: {} holds chunk {} with contributions {} and the "
            "incoming partial carries {}",
            who(id), twice, node_name(x.dst), c, mine.str(), incoming.str());
      });
      return;
    }
    mine.add(incoming);
    consumed_[d] = false;
  }

  // The (node, chunk) slot's own set in the pool, materialized from kOwnData when needed.
  RankSet& own(size_t d, NodeId v) {
    if (content_[d] < 0) {
      RankSet s = content_[d] == kOwnData ? RankSet::single(rank_of_[v]) : RankSet();
      content_[d] = static_cast<int32_t>(pool_.size());
      pool_.push_back(std::move(s));
    }
    return pool_[content_[d]];
  }

  void check_postconditions() {
    const Collective& coll = a_.collective;
    const int p = coll.num_ranks();
    for (ChunkId c = 0; c < chunks_; ++c) {
      const int only = coll.needed_by(c);
      for (int r = only < 0 ? 0 : only; r < (only < 0 ? p : only + 1); ++r) {
        const NodeId v = coll.ranks[r];
        const size_t s = slot(v, c);
        if (!reducing_) {
          if (!holds_[s])
            violate(ViolationKind::PostconditionUnmet, -1, c, -1, v, -1, [&] {
              return fmt::format("rank {} ({}) never receives chunk {} (rank {}'s data)", r,
                                 node_name(v), c, coll.origin(c));
            });
          continue;
        }
        const RankSet got = content_[s] == kNothing ? RankSet() : set_of(content_[s], v);
        if (!got.is_range(0, p))
          violate(ViolationKind::PostconditionUnmet, -1, c, -1, v, -1, [&] {
            return got.empty()
                       ? fmt::format("rank {} ({}) ends without chunk {}", r, node_name(v), c)
                       : fmt::format(
                             "rank {} ({}) ends with chunk {} reduced over {} only; missing {}", r,
                             node_name(v), c, got.str(), got.missing_from(p).str());
          });
      }
    }
  }

  void summarize(bool can_model) {
    for (TransferId id = 0; id < n_; ++id)
      if (valid_[id]) r_.collective_time = std::max(r_.collective_time, usable(id));
    if (a_.claimed_time >= 0 && a_.claimed_time != r_.collective_time)
      violate(ViolationKind::TimeMismatch, -1, -1, -1, -1, a_.claimed_time, [&] {
        return fmt::format(
            "the algorithm claims a collective time of {} but its transfers finish at {}",
            format_time(a_.claimed_time), format_time(r_.collective_time));
      });
    if (can_model) {
      r_.model_time = model_time(t_, a_);
      if (r_.model_time < r_.collective_time)
        warn(WarningKind::Idle, -1, [&] {
          return fmt::format(
              "the schedule finishes at {}; started as early as the timing model allows, "
              "the same transfers finish at {}",
              format_time(r_.collective_time), format_time(r_.model_time));
        });
    }
    double sum = 0;
    for (Time busy : r_.link_busy)
      if (busy > 0) {
        ++r_.links_used;
        double u = r_.collective_time > 0 ? static_cast<double>(busy) / r_.collective_time : 0;
        sum += u;
        r_.max_utilization = std::max(r_.max_utilization, u);
      }
    r_.mean_utilization = r_.links_used ? sum / r_.links_used : 0;
    if (opt_.lower_bound) {
      try {
        r_.bound =
            lower_bound(described_, a_.collective, a_.chunk_bytes, a_.step_costs, opt_.bounds);
      } catch (const Error&) {
        // An invalid collective (reported by the caller's validation) has no bound.
      }
    }
  }

  // Transfer `id`'s times: the algorithm's own, or the timing model's where it has none.
  Time start_of(TransferId id) const { return start_.empty() ? a_[id].start : start_[id]; }
  Time end_of(TransferId id) const { return end_.empty() ? a_[id].end : end_[id]; }
  bool carries(TransferId id, ChunkId c) const {
    return c >= a_[id].chunk && c < a_[id].chunk + a_[id].count;
  }
  // When transfer `id`'s data is usable where it lands: its arrival, or its reduction's end.
  Time usable(TransferId id) const { return a_.usable_at(id, end_of(id), reduction_); }

  const topo::Topology& t_;
  const topo::Topology& described_;
  const Algorithm& a_;
  const VerifyOptions& opt_;
  Report& r_;
  const TransferId n_;
  const int64_t chunks_;
  const Time reduction_;  // how long a reduction takes (Algorithm::reduce_bandwidth)
  std::vector<char> valid_, started_;
  std::vector<Time> start_, end_;  // the timing model's times, where the algorithm has none
  // Per valid transfer, what it moves at and how long it holds its links (RouteCost), from
  // check_durations_and_dependencies for check_links.
  std::vector<Bandwidth> rate_;
  std::vector<Time> occupancy_;
  std::vector<TransferId> holders_;  // while checking a link: the transfers holding it
  bool reducing_ = false;
  std::vector<int> rank_of_;
  std::vector<bool> holds_, consumed_;
  std::vector<int32_t> content_, snapshot_;
  std::vector<RankSet> pool_;       // contents of (node, chunk) slots
  std::vector<RankSet> in_flight_;  // what each transfer carries, read when it starts
  mutable int hints_ = 0;
};

}  // namespace

Report verify(const topo::Topology& t, const Algorithm& a, const VerifyOptions& options) {
  Report r;
  std::optional<ProtocolView> view;
  try {
    view.emplace(t, a);
  } catch (const Error& e) {
    r.transfers = a.size();
    r.claimed_time = a.claimed_time;
    r.violations.push_back(Violation{ViolationKind::BadReference, -1, -1, -1, -1, -1, e.message()});
    r.violation_count = 1;
    ++r.counts[static_cast<int>(ViolationKind::BadReference)];
    return r;
  }
  Verifier(view->topology(), t, a, options, r).run();
  return r;
}

}  // namespace tenet::synth
