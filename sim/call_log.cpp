#include "sim/call_log.hpp"

#include <algorithm>

namespace tenet::sim::detail {

size_t CallLog::row(const std::string& group, int group_id, synth::CollectiveKind kind, Bytes bytes,
                    const RanWith& with) {
  std::string producer, method, protocol;
  int chunks = 0;
  if (with.plan) {
    producer = with.plan->name();
    chunks = with.plan->collective().chunks_per_npu;
  } else {
    const synth::Algorithm& a = *with.algorithm;
    producer = a.name;
    method = synth::method_of(a.provenance, a.name);
    chunks = a.collective.chunks_per_npu;
    protocol = a.protocol;
  }
  const auto key = std::tuple{group, kind, bytes, producer, method, chunks, protocol};
  auto [at, added] = index_.emplace(key, rows_.size());
  if (added) {
    CollectiveRow r;
    r.group = group;
    r.kind = kind;
    r.bytes = bytes;
    r.algorithm = producer;
    r.method = method;
    r.chunks_per_npu = chunks;
    r.protocol = protocol;
    const auto [link, busy] = busiest(with);
    if (link >= 0) r.busiest_link = t_.describe_link(link);
    r.busiest_busy = busy;  // per call; rows() multiplies it by the calls
    rows_.push_back(std::move(r));
    groups_.emplace_back();
  }
  groups_[at->second].insert(group_id);
  return at->second;
}

void CallLog::add(size_t row, const std::vector<int>& members, Time first, Time began, Time end) {
  CollectiveRow& r = rows_[row];
  ++r.calls;
  r.wait += began - first;
  r.time += end - began;
  calls_.push_back({row, &members, began, end});
}

std::pair<topo::LinkId, Time> CallLog::busiest(const RanWith& with) {
  const void* key = with.plan ? static_cast<const void*>(with.plan) : with.algorithm;
  auto [at, added] = busiest_.emplace(key, std::pair<topo::LinkId, Time>{-1, 0});
  if (!added) return {at->second.first, at->second.second * static_cast<Time>(with.pieces)};
  std::vector<int64_t> transfers(t_.num_links(), 0);
  Bytes chunk = 0;
  if (with.plan) {
    chunk = with.plan->chunk_bytes();
    for (synth::TransferId id = 0; id < with.plan->size(); ++id)
      for (topo::LinkId l : with.plan->route(id)) ++transfers[l];
  } else {
    // An algorithm running a protocol carries more bytes on the wire than its data.
    const topo::Protocol* p = t_.protocol(with.algorithm->protocol);
    chunk = p ? p->on_the_wire(with.algorithm->chunk_bytes) : with.algorithm->chunk_bytes;
    for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(with.algorithm->size());
         ++id)
      for (topo::LinkId l : with.algorithm->route(id)) ++transfers[l];
  }
  for (topo::LinkId l = 0; l < t_.num_links(); ++l) {
    if (transfers[l] == 0) continue;
    const Time busy = transfer_time(chunk * transfers[l], t_.link(l).bandwidth);
    if (busy > at->second.second) at->second = {l, busy};
  }
  return {at->second.first, at->second.second * static_cast<Time>(with.pieces)};
}

namespace {

using Intervals = std::vector<std::pair<Time, Time>>;

// Each rank's compute stream, sorted: it runs one node at a time, so its intervals do not overlap.
std::vector<Intervals> sorted(const std::vector<Intervals>& compute) {
  std::vector<Intervals> busy = compute;
  for (auto& intervals : busy) std::sort(intervals.begin(), intervals.end());
  return busy;
}

// The part of [begin, end) disjoint, sorted `busy` does not cover.
Time idle_during(const Intervals& busy, Time begin, Time end) {
  Time covered = 0;
  auto it = std::lower_bound(busy.begin(), busy.end(), std::pair{begin, Time{0}},
                             [](const auto& a, const auto& b) { return a.second <= b.first; });
  for (; it != busy.end() && it->first < end; ++it)
    covered += std::min(it->second, end) - std::max(it->first, begin);
  return end - begin - covered;
}

}  // namespace

void MessageLog::add(const std::string& group, int rank, Bytes bytes, Time start, Time end) {
  auto [at, added] = index_.emplace(group, rows_.size());
  if (added) rows_.push_back({group, 0, 0, 0, 0});
  MessageRow& r = rows_[at->second];
  ++r.messages;
  r.bytes += bytes;
  r.wait += end - start;
  receives_.push_back({at->second, rank, start, end});
}

std::vector<MessageRow> MessageLog::rows(const std::vector<Intervals>& compute) const {
  const std::vector<Intervals> busy = sorted(compute);
  std::vector<MessageRow> out = rows_;
  for (const Receive& r : receives_)
    out[r.row].exposed += idle_during(busy[static_cast<size_t>(r.rank)], r.start, r.end);
  return out;
}

std::vector<CollectiveRow> CallLog::rows(const std::vector<Intervals>& compute) const {
  const std::vector<Intervals> busy = sorted(compute);
  std::vector<CollectiveRow> out = rows_;
  std::vector<double> exposed(out.size(), 0);
  for (const Call& c : calls_) {
    double idle = 0;  // summed over the members
    for (int r : *c.members)
      idle += static_cast<double>(idle_during(busy[static_cast<size_t>(r)], c.began, c.end));
    exposed[c.row] += idle / static_cast<double>(c.members->size());
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].exposed = static_cast<Time>(exposed[i] + 0.5);
    out[i].groups = static_cast<int>(groups_[i].size());
    out[i].busiest_busy *= out[i].calls;
  }
  return out;
}

}  // namespace tenet::sim::detail
