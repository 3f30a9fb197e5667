#include "sim/packet_network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "topo/error.hpp"

namespace tenet::sim {
PacketNetwork::PacketNetwork(const topo::Topology& t, EventQueue& events,
                             const PacketConfig& config)
    : Network(t, events), cfg_(config), ecmp_(t) {
  if (cfg_.mtu < 1 || cfg_.mtu > (Bytes{1} << 30))
    throw Error(
        fmt::format("packet network: the MTU must lie between 1 B and 1 GiB, got {} B", cfg_.mtu));
  if (cfg_.header < 0 || cfg_.header > (Bytes{1} << 20))
    throw Error(fmt::format("packet network: the header must lie between 0 B and 1 MiB, got {} B",
                            cfg_.header));
  if (cfg_.buffer < 0)
    throw Error(fmt::format("packet network: negative buffer size {} B", cfg_.buffer));
  const Bytes packet = cfg_.mtu + cfg_.header;
  const size_t links = t.num_links();
  buffer_.resize(links);
  full_serialization_.resize(links);
  for (size_t i = 0; i < links; ++i) {
    const topo::Link& k = t.link(static_cast<topo::LinkId>(i));
    const Bytes round_trip = static_cast<Bytes>(
        (static_cast<Int128>(2 * k.latency) * k.bandwidth + kPicosPerSecond - 1) / kPicosPerSecond);
    // A packet holds its space until its last byte has left the receiving node again: on the
    // slowest way out, `fan_out` packets arrive at this link's rate meanwhile.
    Bandwidth slowest_out = k.bandwidth;
    if (t.passes_through(k.dst))
      for (topo::LinkId o : t.out_links(k.dst))
        slowest_out = std::min(slowest_out, t.link(o).bandwidth);
    const Bytes fan_out = (k.bandwidth + slowest_out - 1) / slowest_out;
    buffer_[i] = k.buffer > 0      ? k.buffer
                 : cfg_.buffer > 0 ? cfg_.buffer
                                   : (1 + fan_out + (round_trip + packet - 1) / packet) * packet;
    if (buffer_[i] < packet)
      throw Error(fmt::format(
          "packet network: a buffer of {} B{} cannot hold one packet of {} B (MTU {} + header {})",
          buffer_[i],  // exact: the two differ by a few bytes
          k.buffer > 0 ? fmt::format(" at {}", t.describe_link(static_cast<topo::LinkId>(i))) : "",
          packet, format_bytes(cfg_.mtu), format_bytes(cfg_.header)));
    full_serialization_[i] = transfer_time(packet, k.bandwidth);
  }
  credits_.assign(buffer_.begin(), buffer_.end());
  returning_.resize(links);
  returning_head_.assign(links, 0);
  free_at_.assign(links, 0);
  requests_.resize(links);
  last_served_.assign(links, -1);
  stalled_since_.assign(links, -1);
  wakeup_pending_.assign(links, 0);
  queue_head_.assign(links, -1);
  queue_tail_.assign(links, -1);
  occupancy_.assign(links, 0);
  deepest_.assign(links, 0);
  link_packets_.assign(links, 0);
  stalls_.assign(links, 0);
  stall_time_.assign(links, 0);
}

std::vector<topo::LinkId> PacketNetwork::pick_route(const Message& m) {
  if (cfg_.routing == PacketConfig::Routing::Source || m.route.empty())
    return {m.route.begin(), m.route.end()};
  return ecmp_.pick(m, messages_);
}

void PacketNetwork::send(Message m, std::function<void()> on_release,
                         std::function<void()> on_arrival) {
  if (deferred_by_step(m, on_release, on_arrival)) return;
  ++messages_;
  std::vector<topo::LinkId> route = pick_route(m);
  if (route.empty()) {
    events_.schedule_after(0, std::move(on_release));
    events_.schedule_after(0, std::move(on_arrival));
    return;
  }
  int32_t slot;
  if (!free_msgs_.empty()) {
    slot = free_msgs_.back();
    free_msgs_.pop_back();
  } else {
    slot = static_cast<int32_t>(msgs_.size());
    msgs_.emplace_back();
  }
  Msg& g = msgs_[slot];
  g.route = std::move(route);
  g.left = m.bytes;
  g.unsent = m.bytes == 0 ? 1 : (m.bytes + cfg_.mtu - 1) / cfg_.mtu;
  packets_planned_ += static_cast<uint64_t>(g.unsent);
  if (packets_planned_ > cfg_.max_packets)
    throw Error(fmt::format(
        "packet network: over {} packets to simulate ({} for this {} message at a {} MTU); raise "
        "--mtu, or --max-packets to run it anyway (about 7 million packets a second)",
        cfg_.max_packets, g.unsent, format_bytes(m.bytes), format_bytes(cfg_.mtu)));
  g.on_first_link = 0;
  g.unarrived = g.unsent;
  g.pace = m.rate > 0 && m.rate < topo_.link(g.route[0]).bandwidth ? m.rate : 0;
  g.paced_from = -1;
  g.paced = 0;
  g.on_release = std::move(on_release);
  g.on_arrival = std::move(on_arrival);
  const topo::LinkId first = g.route[0];
  request(first, static_cast<Key>(num_links()) + slot);
  kick(first);
}

int32_t PacketNetwork::new_packet() {
  ++live_packets_;
  ++packets_made_;
  if (free_packets_ >= 0) {
    const int32_t p = free_packets_;
    free_packets_ = packets_[p].next;
    packets_[p].next = -1;
    return p;
  }
  packets_.emplace_back();
  return static_cast<int32_t>(packets_.size() - 1);
}

void PacketNetwork::request(topo::LinkId out, Key from) { requests_[out].push_back(from); }

void PacketNetwork::withdraw(topo::LinkId out, Key from) {
  std::vector<Key>& r = requests_[out];
  auto it = std::find(r.begin(), r.end(), from);
  *it = r.back();
  r.pop_back();
}

int32_t PacketNetwork::packet_bytes(Key from) const {
  if (from < static_cast<Key>(num_links())) return packets_[queue_head_[from]].bytes;
  const Msg& g = msgs_[from - static_cast<Key>(num_links())];
  return static_cast<int32_t>((g.unsent == 1 ? g.left : cfg_.mtu) + cfg_.header);
}

// Ports are tried from a work list, not recursively: sending from a buffer exposes its next
// packet, which may start at another port, and so on along a route.
void PacketNetwork::kick(topo::LinkId l) {
  kicks_.push_back(l);
  if (kicking_) return;
  kicking_ = true;
  while (!kicks_.empty()) {
    const topo::LinkId x = kicks_.back();
    kicks_.pop_back();
    try_send(x);
  }
  kicking_ = false;
}

void PacketNetwork::try_send(topo::LinkId l) {
  const Time now = events_.now();
  if (free_at_[l] > now || requests_[l].empty()) return;
  // Credits that have come back by now.
  std::vector<Credit>& back = returning_[l];
  size_t& head = returning_head_[l];
  while (head < back.size() && back[head].at <= now) credits_[l] += back[head++].bytes;
  if (head == back.size() || (head >= 64 && 2 * head >= back.size())) {  // drop what was taken
    back.erase(back.begin(), back.begin() + static_cast<std::ptrdiff_t>(head));
    head = 0;
  }
  // Arbitration.
  const std::vector<Key>& req = requests_[l];
  Key first = std::numeric_limits<Key>::max(), after = std::numeric_limits<Key>::max();
  for (Key k : req) {
    first = std::min(first, k);
    if (k > last_served_[l]) after = std::min(after, k);
  }
  const Key from = cfg_.arbitration == PacketConfig::Arbitration::RoundRobin &&
                           after != std::numeric_limits<Key>::max()
                       ? after
                       : first;
  const int32_t bytes = packet_bytes(from);
  if (credits_[l] < bytes) {
    if (stalled_since_[l] < 0) {
      stalled_since_[l] = now;
      ++stalls_[l];
    }
    if (!wakeup_pending_[l]) {  // wake up when enough credit will have come back, if any is on its
                                // way
      int64_t have = credits_[l];
      for (size_t i = head; i < back.size(); ++i)
        if ((have += back[i].bytes) >= bytes) {
          wakeup_pending_[l] = 1;
          events_.schedule(back[i].at, [this, l] {
            wakeup_pending_[l] = 0;
            kick(l);
          });
          break;
        }
    }
    return;
  }
  if (stalled_since_[l] >= 0) {
    stall_time_[l] += now - stalled_since_[l];
    stalled_since_[l] = -1;
  }
  last_served_[l] = from;
  credits_[l] -= bytes;
  int32_t p;
  if (from < static_cast<Key>(num_links())) {  // the head of an input buffer moves on
    const auto in = static_cast<topo::LinkId>(from);
    p = queue_head_[in];
    queue_head_[in] = packets_[p].next;
    if (queue_head_[in] < 0) queue_tail_[in] = -1;
    packets_[p].next = -1;
    withdraw(l, from);
    if (const int32_t h = queue_head_[in]; h >= 0) {
      const topo::LinkId out = msgs_[packets_[h].msg].route[packets_[h].hop];
      request(out, from);
      kick(out);
    }
  } else {  // the next packet of a message injected here
    const auto slot = static_cast<int32_t>(from - static_cast<Key>(num_links()));
    p = new_packet();
    Msg& g = msgs_[slot];
    g.left -= bytes - cfg_.header;
    --g.unsent;
    ++g.on_first_link;
    packets_[p] = Packet{slot, 0, bytes, -1, 0};
    if (g.unsent == 0) {
      withdraw(l, from);
    } else if (g.pace > 0) {
      // The next packet waits until the message's rate allows it, counted from its first packet: a
      // packet held back by other traffic on the link does not slow every later one (a token
      // bucket, as NICs pace), so the message keeps its rate on a link its peers fill exactly.
      if (g.paced_from < 0) g.paced_from = events_.now();
      g.paced += bytes - cfg_.header;
      const Time next = g.paced_from + transfer_time(g.paced, g.pace);
      if (next > events_.now()) {
        withdraw(l, from);
        events_.schedule_after(next - events_.now(), [this, l, from] {
          request(l, from);
          kick(l);
        });
      }
    }
  }
  transmit(l, p);
}

void PacketNetwork::transmit(topo::LinkId l, int32_t p) {
  const Time now = events_.now();
  Packet& x = packets_[p];
  const topo::Link& k = topo_.link(l);
  const Bytes full = cfg_.mtu + cfg_.header;
  Time end = now + (x.bytes == full ? full_serialization_[l] : transfer_time(x.bytes, k.bandwidth));
  if (cfg_.cut_through && x.hop > 0) end = std::max(end, x.tail);  // cannot outrun its own tail
  free_at_[l] = end;
  busy_[l] += end - now;
  record_activity(l, now, end);
  ++link_packets_[l];
  ++hops_;
  const int32_t hop = x.hop;
  events_.schedule(end, [this, p, hop] { tx_done(p, hop); });
  const bool last = hop + 1 == static_cast<int32_t>(msgs_[x.msg].route.size());
  if (last) {
    events_.schedule(end + k.latency, [this, p, hop] { deliver(p, hop); });
  } else {
    x.tail = end + k.latency;
    const Time at =
        cfg_.cut_through ? now + transfer_time(cfg_.header, k.bandwidth) + k.latency : x.tail;
    events_.schedule(at, [this, p, hop] { arrive(p, hop); });
  }
}

void PacketNetwork::return_credit(topo::LinkId l, int64_t bytes, Time at) {
  returning_[l].push_back({at, bytes});
  if (stalled_since_[l] >= 0 && !wakeup_pending_[l]) {
    wakeup_pending_[l] = 1;
    events_.schedule(at, [this, l] {
      wakeup_pending_[l] = 0;
      kick(l);
    });
  }
}

void PacketNetwork::tx_done(int32_t p, int32_t hop) {
  const Packet& x = packets_[p];
  const std::vector<topo::LinkId>& route = msgs_[x.msg].route;
  const topo::LinkId l = route[hop];
  if (hop > 0) {  // its last byte has left the buffer it waited in
    const topo::LinkId in = route[hop - 1];
    occupancy_[in] -= x.bytes;
    return_credit(in, x.bytes, events_.now() + topo_.link(in).latency);
    kick(l);
    return;
  }
  Msg& g = msgs_[x.msg];
  const bool released = --g.on_first_link == 0 && g.unsent == 0;
  std::function<void()> on_release = released ? std::move(g.on_release) : nullptr;
  kick(l);
  if (on_release) on_release();  // may send: msgs_ may grow
}

void PacketNetwork::arrive(int32_t p, int32_t hop) {
  Packet& x = packets_[p];
  const std::vector<topo::LinkId>& route = msgs_[x.msg].route;
  const topo::LinkId in = route[hop];
  occupancy_[in] += x.bytes;
  deepest_[in] = std::max(deepest_[in], occupancy_[in]);
  x.hop = hop + 1;
  if (queue_tail_[in] >= 0) {
    packets_[queue_tail_[in]].next = p;
    queue_tail_[in] = p;
    return;
  }
  queue_head_[in] = queue_tail_[in] = p;
  const topo::LinkId out = route[x.hop];
  request(out, in);
  kick(out);
}

void PacketNetwork::deliver(int32_t p, int32_t hop) {
  Packet& x = packets_[p];
  const int32_t slot = x.msg;
  const topo::LinkId in = msgs_[slot].route[hop];
  return_credit(in, x.bytes, events_.now() + topo_.link(in).latency);  // the NPU drains it at once
  x.next = free_packets_;
  x.msg = -1;
  free_packets_ = p;
  --live_packets_;
  Msg& g = msgs_[slot];
  if (--g.unarrived > 0) return;
  std::function<void()> on_arrival = std::move(g.on_arrival);
  g.on_arrival = nullptr;
  g.on_release = nullptr;
  free_msgs_.push_back(slot);
  on_arrival();
}

NetworkReport PacketNetwork::report() {
  NetworkReport r = Network::report();
  r.packet_level = true;
  r.messages = messages_;
  r.packets = packets_made_;
  r.packet_hops = hops_;
  for (size_t l = 0; l < r.links.size(); ++l) {
    LinkReport& k = r.links[l];
    k.packets = link_packets_[l];
    k.buffer = buffer_[l];
    k.deepest_queue = deepest_[l];
    k.credit_stalls = stalls_[l];
    k.stall_time =
        stall_time_[l] + (stalled_since_[l] >= 0 ? events_.now() - stalled_since_[l] : 0);
    r.credit_stalls += k.credit_stalls;
  }
  return r;
}

void PacketNetwork::check_drained() const {
  bool injecting = false;
  for (const auto& r : requests_) injecting = injecting || !r.empty();
  if (live_packets_ == 0 && !injecting) return;
  int64_t messages = static_cast<int64_t>(msgs_.size() - free_msgs_.size());
  throw Error(
      fmt::format("packet network deadlock at {}: {} packets of {} messages can never move. {}",
                  format_time(events_.now()), live_packets_, messages, describe_cycle()));
}

// Every stalled port waits for credit from the buffer it feeds; that buffer's head waits for the
// next port of its route, which (nothing being left to happen) is stalled too. Following these
// waits from any stalled port must therefore come back to a port already seen: the cycle.
std::string PacketNetwork::describe_cycle() const {
  topo::LinkId start = -1;
  for (size_t l = 0; l < stalled_since_.size() && start < 0; ++l)
    if (stalled_since_[l] >= 0) start = static_cast<topo::LinkId>(l);
  if (start < 0) return "No port is waiting for credit (an internal error).";
  std::vector<topo::LinkId> path;
  std::vector<int> seen(num_links(), -1);
  topo::LinkId cur = start;
  while (seen[cur] < 0) {
    seen[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    const int32_t h = queue_head_[cur];
    if (h < 0)
      return fmt::format(
          "The port of {} waits for credit, but its buffer is empty (an internal error).",
          topo_.describe_link(cur));
    cur = msgs_[packets_[h].msg].route[packets_[h].hop];
  }
  std::string text =
      "Its packets wait in a cycle of full buffers, each head for credit from the next: ";
  for (size_t i = seen[cur]; i < path.size(); ++i) {
    const topo::LinkId l = path[i];
    text += fmt::format("{} (buffer {} of {} full) -> ", topo_.describe_link(l),
                        format_bytes(occupancy_[l]), format_bytes(buffer_[l]));
  }
  text += fmt::format(
      "back to link {}. Larger buffers, shorter routes or routes without a cyclic dependency "
      "avoid it.",
      cur);
  return text;
}

}  // namespace tenet::sim
