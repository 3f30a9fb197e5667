#include "synth/cost/link_ledger.hpp"

#include <algorithm>

namespace tenet::synth {
namespace {

bool later(const auto& a, const auto& b) { return a.end > b.end; }  // min-heap order

}  // namespace

LinkLedger::LinkLedger(const topo::Topology& t)
    : capacity_(t.num_links()),
      busy_until_(t.num_links(), 0),
      whole_until_(t.num_links(), 0),
      lane_of_(t.num_links(), -1) {
  for (topo::LinkId l = 0; l < t.num_links(); ++l) capacity_[l] = t.link(l).bandwidth;
}

void LinkLedger::retire_until(Lane& lane, Time t) {
  while (!lane.holders.empty() && lane.holders.front().end <= t) {
    lane.used -= lane.holders.front().rate;
    std::pop_heap(lane.holders.begin(), lane.holders.end(), later<Holder, Holder>);
    lane.holders.pop_back();
  }
}

Time LinkLedger::earliest_shared(topo::LinkId l, Time t, Bandwidth rate) {
  if (rate >= capacity_[l]) {  // the whole link: wait until every holder has finished
    t = std::max(t, busy_until_[l]);
    if (lane_of_[l] >= 0) {
      Lane& lane = lanes_[lane_of_[l]];
      lane.holders.clear();
      lane.used = 0;
    }
    return t;
  }
  // Part of it: after every transfer that took all of it, and after the latest admission.
  t = std::max(t, whole_until_[l]);
  if (lane_of_[l] < 0) return t;
  Lane& lane = lanes_[lane_of_[l]];
  t = std::max(t, lane.last_admit);
  retire_until(lane, t);
  while (lane.used + rate > capacity_[l]) {
    t = lane.holders.front().end;
    retire_until(lane, t);
  }
  return t;
}

void LinkLedger::admit_shared(topo::LinkId l, Time start, Time end, Bandwidth rate) {
  if (lane_of_[l] < 0) {
    lane_of_[l] = static_cast<int32_t>(lanes_.size());
    lanes_.emplace_back();
  }
  Lane& lane = lanes_[lane_of_[l]];
  lane.last_admit = start;
  if (end <= start) return;  // holds nothing
  lane.used += rate;
  lane.holders.push_back({end, rate});
  std::push_heap(lane.holders.begin(), lane.holders.end(), later<Holder, Holder>);
}

}  // namespace tenet::synth
