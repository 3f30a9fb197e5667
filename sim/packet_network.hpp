// The packet-level network backend (`--network packet`).
//
// A message is cut into packets of PacketConfig::mtu payload bytes (the last one shorter; an
// empty message is one header-only packet), each carrying `header` more bytes on the wire.
// Packets cross the message's route hop by hop:
//   - every directed link has, at its receiving node, an input buffer of finite size; the
//     sending port holds credits for the free space of that buffer and transmits a packet only
//     while its credits cover the whole packet (lossless, credit-based flow control as in
//     InfiniBand and NVLink-style fabrics). A packet frees its space when its last byte has left
//     the buffer again (or at once at its destination NPU, which drains into memory), and the
//     credit travels back over the link, arriving one link latency later. Nothing is dropped: a
//     full buffer back-pressures the port feeding it.
//   - a link serialises packets at its bandwidth and delays them by its latency.
//   - switches (and NPUs marked as routers) forward a packet once it has fully arrived
//     (store-and-forward), or once its header has (cut_through; the output then cannot finish
//     before the packet's tail has arrived).
//   - every output port arbitrates among its inputs: the heads of the node's input buffers
//     (one head per buffer, so a blocked head blocks the packets behind it: head-of-line
//     blocking) and the messages the node itself injects, round-robin (fair) or by fixed
//     priority (input links by id, then the node's own messages).
// A message is released when its last packet has left the first link (the next message on that
// link may start), and arrives when its last packet has fully arrived at its destination. A
// message with a rate of its own below its first link's bandwidth is paced: its source injects
// a packet no sooner than the previous one's payload takes at that rate.
//
// Default buffers hold the link's credit round trip (2 x latency x bandwidth) rounded up to whole
// packets, one packet more, and at a pass-through node ceil(bandwidth / its slowest link out)
// packets: a packet keeps its space until its last byte has left the node again, and that many
// arrive meanwhile when it leaves on a slower link (a fat uplink fanning out to thin NICs). This is
// enough that flow control never slows a link running at its full rate, whether one stream or
// several thinner ones fill it; so on an uncongested route a message takes exactly the pipelined
// time: the first packet pays every hop's serialisation and latency, the rest stream behind it at
// the narrowest link.
//
// When the event queue runs dry while packets are still in buffers, check_drained() finds the
// cycle of full buffers that holds them (each waits for credit from the next) and reports it.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "sim/network.hpp"
#include "topo/routing.hpp"

namespace tenet::sim {

class PacketNetwork final : public Network {
 public:
  // Throws tenet::Error for an unusable configuration (an MTU of 0, a buffer smaller than one
  // packet).
  PacketNetwork(const topo::Topology& t, EventQueue& events, const PacketConfig& config);
  std::string_view name() const override { return "packet"; }
  void send(Message m, std::function<void()> on_release, std::function<void()> on_arrival) override;
  NetworkReport report() override;
  void check_drained() const override;
  // The buffer of the port receiving link `l`.
  Bytes buffer(topo::LinkId l) const { return buffer_[l]; }

 private:
  struct Msg {
    std::vector<topo::LinkId> route;
    Bytes left = 0;             // payload bytes not yet cut into packets
    int64_t unsent = 0;         // packets not yet cut
    int64_t on_first_link = 0;  // packets cut whose first hop has not finished
    int64_t unarrived = 0;      // packets not yet at the destination
    Bandwidth pace = 0;         // its own rate, below the first link's bandwidth; 0: none
    Time paced_from = -1;       // when its first packet left (paced messages)
    Bytes paced = 0;            // payload cut so far (paced messages)
    std::function<void()> on_release, on_arrival;
  };
  struct Packet {
    int32_t msg = -1;
    int32_t hop = 0;    // index in the route of the link it is on, or waits for
    int32_t bytes = 0;  // on the wire
    int32_t next = -1;  // the next packet in its buffer (or in the free list)
    Time tail = 0;      // when its last byte arrives at the node it waits at (cut-through)
  };
  struct Credit {
    Time at;
    int64_t bytes;
  };
  // An input of an output port: an input buffer (its link id) or a message being injected
  // (num_links + its slot). Smaller keys have priority under fixed-priority arbitration.
  using Key = int64_t;

  std::vector<topo::LinkId> pick_route(const Message& m);
  int32_t new_packet();
  void kick(topo::LinkId l);  // an output port may be able to send
  void try_send(topo::LinkId l);
  void transmit(topo::LinkId l, int32_t p);
  void tx_done(int32_t p, int32_t hop);  // its last byte has left route[hop]
  void arrive(int32_t p, int32_t hop);   // it has arrived (its header, cut-through) over route[hop]
  void deliver(int32_t p, int32_t hop);  // it has fully arrived at its destination
  void return_credit(topo::LinkId l, int64_t bytes, Time at);
  void request(topo::LinkId out, Key from);
  void withdraw(topo::LinkId out, Key from);
  int32_t packet_bytes(Key from) const;
  std::string describe_cycle() const;

  PacketConfig cfg_;
  std::vector<Bytes> buffer_;
  std::vector<Time> full_serialization_;  // per link, of a full packet
  std::vector<Msg> msgs_;
  std::vector<int32_t> free_msgs_;
  std::vector<Packet> packets_;
  int32_t free_packets_ = -1;
  int64_t live_packets_ = 0;
  // Per link: its sending port and its receiving buffer.
  std::vector<int64_t> credits_;
  std::vector<std::vector<Credit>> returning_;  // credits on their way back, in time order
  std::vector<size_t> returning_head_;
  std::vector<Time> free_at_;               // the port finishes its current packet
  std::vector<std::vector<Key>> requests_;  // inputs with a packet for this port
  std::vector<Key> last_served_;
  std::vector<Time> stalled_since_;  // -1: not stalled
  std::vector<char> wakeup_pending_;
  std::vector<int32_t> queue_head_, queue_tail_;  // the receiving buffer's packets
  std::vector<int64_t> occupancy_, deepest_;
  std::vector<uint64_t> link_packets_, stalls_;
  std::vector<Time> stall_time_;
  std::vector<topo::LinkId> kicks_;
  bool kicking_ = false;
  uint64_t messages_ = 0, packets_made_ = 0, hops_ = 0, packets_planned_ = 0;
  EcmpRoutes ecmp_;
};

}  // namespace tenet::sim
