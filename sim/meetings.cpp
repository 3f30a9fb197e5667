#include "sim/meetings.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/comm_types.hpp"
#include "sim/et_checks.hpp"
#include "topo/units.hpp"

namespace tenet::sim::detail {
namespace {

// How a collective runs as ASTRA-sim's dataset splits: `count` pieces of `size` bytes each (Tenet's
// convention), at most `active` at once.
struct Pieces {
  size_t count = 1;
  Bytes size = 0;
  int active = 1;
};

// `workload_ranks`: the ranks of the whole workload (at least a byte per NPU of the system).
Pieces split(const Meeting& m, const SimConfig::Splits& s, int workload_ranks) {
  Pieces out{1, m.size, 1};
  if (s.splits <= 1) return out;
  const int p = static_cast<int>(m.members.size());
  const bool all_gather = m.kind == synth::CollectiveKind::AllGather;
  // Sys::generate_collective and determine_chunk_size upstream: pieces of comm_size / splits
  // (at least a byte per NPU of the system, All-Gather aside), as many as cover comm_size.
  Bytes comm =
      comm_size_is_per_rank(m.kind) ? m.size / p : m.size;  // an uneven All-Gather rounds down
  Bytes chunk = comm / s.splits;
  if (!all_gather && chunk < workload_ranks) {
    chunk = workload_ranks;
    comm = chunk * s.splits;
  }
  chunk = std::max<Bytes>(chunk, 1);
  out.count = static_cast<size_t>((comm + chunk - 1) / chunk);
  out.size = collective_bytes_of_comm_size(m.kind, chunk, p);
  out.active = std::max(1, s.active);
  return out;
}

}  // namespace

void Meetings::arrive(int r, size_t i, const chakra::Node& n) {
  Meeting& meeting = meeting_of(r, n);
  if (meeting.arrived.empty()) meeting.first_arrival = events_.now();
  meeting.arrived.emplace_back(r, i);
  if (meeting.arrived.size() < meeting.present.size()) return;
  ++collectives_;
  Meeting* m = &meeting;
  m->began = events_.now();
  if (m->barrier || m->members.size() < 2 || m->size == 0) {
    events_.schedule_after(0, [this, m] { done(*m); });
    return;
  }
  start(m);
}

// The meeting rank `r` joins with node `n`: its group's next one for `r`, made by the first member
// to arrive.
Meeting& Meetings::meeting_of(int r, const chakra::Node& n) {
  const Group& group = groups_.of(r, n);
  const std::vector<int>& members = group.members;
  const int k = seen_[{group.id, r}]++;
  auto& meeting = meetings_[{group.id, k}];
  if (meeting) {
    check_same(*meeting, r, n);
  } else {
    meeting = std::make_unique<Meeting>();
    meeting->first = &n;
    meeting->k = k;
    meeting->members = members;
    meeting->present = group.present;
    meeting->group = group.id;
    meeting->group_kind =
        chakra::string_attr(n, "tenet_group").value_or(synth::format_ranks(members));
    const auto kind = collective_of_comm_type(*chakra::int_attr(n, "comm_type"));
    meeting->barrier = !kind;
    if (kind) meeting->kind = *kind;
    meeting->size = kind ? collective_bytes_of_comm_size(*kind, *chakra::int_attr(n, "comm_size"),
                                                         static_cast<int>(members.size()))
                         : 0;
    meeting->root = static_cast<int>(chakra::int_attr(n, "root").value_or(0));
    if (kind == synth::CollectiveKind::AllToAll)
      meeting->traffic = chakra::string_attr(n, "tenet_traffic").value_or("");
  }
  return *meeting;
}

// Every member describes the same collective: ASTRA-sim runs the one its first member issues, so a
// member asking for another type, size or root would silently get that one.
void Meetings::check_same(const Meeting& m, int r, const chakra::Node& n) const {
  const chakra::Node& first = *m.first;
  const auto type = chakra::int_attr(n, "comm_type"),
             first_type = chakra::int_attr(first, "comm_type");
  const auto size = chakra::int_attr(n, "comm_size"),
             first_size = chakra::int_attr(first, "comm_size");
  const auto kind = collective_of_comm_type(*type);
  const bool rooted = kind && synth::is_rooted(*kind);
  const int64_t root = chakra::int_attr(n, "root").value_or(0),
                first_root = chakra::int_attr(first, "root").value_or(0);
  // A barrier moves nothing: its comm_size means nothing either.
  if (type == first_type && (!kind || (size == first_size && (!rooted || root == first_root))))
    return;
  auto describe = [](int64_t t, int64_t bytes, int64_t at) {
    const auto k = collective_of_comm_type(t);
    if (!k) return std::string("a barrier");
    const std::string_view name = synth::to_string(*k);
    return fmt::format("{} {} of {}{}", name.front() == 'a' ? "an" : "a", name, format_bytes(bytes),
                       synth::is_rooted(*k) ? fmt::format(" with root {}", at) : "");
  };
  throw node_error(
      groups_.workload_name(), r, n,
      fmt::format("{}, but rank {} node {} ('{}') joined this collective (its group's collective "
                  "#{}) as {}: the members of a collective must agree on its type, comm_size "
                  "and root",
                  describe(*type, *size, root), m.arrived.front().first, first.id(), first.name(),
                  m.k + 1, describe(*first_type, *first_size, first_root)));
}

// Replays the meeting's algorithm; the members finish when every piece is done.
void Meetings::start(Meeting* m) {
  // ASTRA-sim's dataset splits: pieces of the collective one after another (`active` at once).
  auto split_of = cfg_.dataset_splits.find(m->kind);
  const Pieces pieces = split_of != cfg_.dataset_splits.end() ? split(*m, split_of->second, p_)
                                                              : Pieces{1, m->size, 1};
  const synth::RingPlan* plan = source_.ring_plan(*m, pieces.size);
  const synth::Algorithm* a = plan ? nullptr : &source_.algorithm(*m, pieces.size);
  m->row = calls_.row(m->group_kind, m->group, m->kind, m->size, {a, plan, pieces.count});
  // Endpoint costs belong to ASTRA-sim's native collectives (MemBus, PacketBundle); a custom one
  // sends straight from the NPU (CustomAlgorithm::issue upstream), and so does one given by --coll.
  const EndpointModel endpoints =
      split_of != cfg_.dataset_splits.end() ? cfg_.endpoints : EndpointModel{};
  // A native collective over several dimensions: its pieces through the dimensions' queues.
  if (const std::vector<DimensionPhase>* phases =
          a && split_of != cfg_.dataset_splits.end() ? &phases_of(*a) : nullptr;
      phases && !phases->empty()) {
    std::vector<int> dimensions;
    for (const DimensionPhase& phase : *phases) dimensions.push_back(phase.dimension);
    m->queues = std::make_unique<PieceQueues>(
        pieces.count, std::move(dimensions), pieces.active, split_of->second.newest_first,
        [this, m, phases, endpoints](size_t, size_t phase, std::function<void()> phase_done) {
          m->runs.push_back(std::make_unique<CollectiveRun>(list_of((*phases)[phase].algorithm),
                                                            net_, events_, std::move(phase_done),
                                                            endpoints));
          m->runs.back()->start();
        },
        [this, m] { done(*m); });
    m->queues->start();
    return;
  }
  for (size_t i = 0; i < pieces.count; ++i) {
    auto on_done = [this, m] {
      if (++m->finished == m->runs.size())
        done(*m);
      else if (m->started < m->runs.size())
        m->runs[m->started++]->start();
    };
    m->runs.push_back(
        plan ? std::make_unique<CollectiveRun>(*plan, net_, events_, on_done, endpoints)
             : std::make_unique<CollectiveRun>(list_of(*a), net_, events_, on_done, endpoints));
  }
  while (m->started < m->runs.size() && m->started < static_cast<size_t>(pieces.active))
    m->runs[m->started++]->start();
}

const std::vector<DimensionPhase>& Meetings::phases_of(const synth::Algorithm& a) {
  auto found = phases_.find(&a);
  if (found == phases_.end()) found = phases_.emplace(&a, dimension_phases(a, t_)).first;
  return found->second;
}

const ReplayList& Meetings::list_of(const synth::Algorithm& a) {
  std::unique_ptr<ReplayList>& list = lists_[&a];
  if (!list) list = std::make_unique<ReplayList>(net_.topology(), a);
  return *list;
}

void Meetings::done(Meeting& m) {
  const CollectiveRow* row = nullptr;
  if (!m.runs.empty()) {
    calls_.add(m.row, m.present, m.first_arrival, m.began, events_.now());
    row = &calls_.at(m.row);
  }
  for (auto [rr, ri] : m.arrived) finish_(rr, ri, row);
  // Its runs hold their admission's per-link state (a few hundred KB on a cluster of thousands of
  // links): released once done, after the run that called here has returned.
  events_.schedule_after(0, [&m] {
    m.runs.clear();
    m.queues.reset();
  });
}

std::optional<std::string> overload_warning(const NetworkReport& n) {
  size_t over = 0, worst = 0;
  for (size_t l = 0; l < n.links.size(); ++l)
    if (n.links[l].peak_demand > 1.0) {
      ++over;
      if (n.links[l].peak_demand > n.links[worst].peak_demand || n.links[worst].peak_demand <= 1.0)
        worst = l;
    }
  if (over == 0) return std::nullopt;
  const LinkReport& k = n.links[worst];
  return fmt::format(
      "analytical network: {} link{} asked for more than {} bandwidth at once (most: {} at "
      "{:.0f} %, first over at {}); this network does not share links, so the time is "
      "optimistic: --network analytical-congestion shares them",
      over, over == 1 ? " was" : "s were", over == 1 ? "its" : "their", k.name, 100 * k.peak_demand,
      format_time(k.peak_demand_at));
}

}  // namespace tenet::sim::detail
