// Topology: NPUs 0..N-1 and switches N..N+S-1 joined by directed links, each with its own
// bandwidth and latency. Parallel links between the same pair stay distinct. Built only through
// TopologyBuilder, which validates; a built Topology is immutable and always valid.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "topo/error.hpp"
#include "topo/units.hpp"

namespace tenet::topo {

using NodeId = int32_t;
using LinkId = int32_t;

enum class NodeKind : uint8_t { Npu, Switch };

// Per-step costs where a file or generator states none, and for scale-out network links
// (docs/model.md says where they come from): TACCL's measured alpha of one send over NVLink or
// NVSwitch (0.3 us) and over InfiniBand (2.6 us), in its published topology profiles.
inline constexpr Time kDefaultStep = 300'000;
inline constexpr Time kNetworkStep = 2'600'000;

struct Node {
  NodeKind kind = NodeKind::Npu;
  std::string name;
  // NPUs with an on-chip router pass traffic through without storing it (TPU tori, wafer meshes).
  bool router = false;
  // Switch capabilities for in-network collectives (NVLink SHARP style).
  bool can_reduce = false;
  bool can_multicast = false;
};

struct Link {
  NodeId src = 0;
  NodeId dst = 0;
  Bandwidth bandwidth = 0;  // bytes per second
  Time latency = 0;         // picoseconds
  std::string name;         // optional
  // Bytes of buffer at the receiving port, for the packet-level simulator; 0: its default.
  // Not part of the fingerprint (it does not change what an algorithm may do).
  Bytes buffer = 0;
  // The per-step cost (the alpha of the alpha-beta model) of a transfer whose route uses this
  // link: what a runtime pays per step besides the bytes (its synchronization and the step's
  // launch), while the step holds its share of the link. A transfer pays the largest of its
  // route's links once (synth/cost/timing.hpp). Charged only where the topology says so
  // (Topology::charges_steps) and the algorithm was made so (Algorithm::step_costs). Not part of
  // the fingerprint: it changes what an algorithm costs, not what it may do.
  Time step = kDefaultStep;
};

// A published measurement a system preset is calibrated against (see Calibration).
struct PublishedFigure {
  std::string collective;  // "all-reduce", ...
  std::string algorithm;   // the Tenet producer that models what was measured: "ring", "nvls", ...
  Bytes min_bytes = 0, max_bytes = 0;  // the message sizes the figure holds for
  Bandwidth busbw = 0;                 // NCCL's bus bandwidth
  std::string source;                  // where it was published
};

// How a system description was calibrated to measurements, stated in its file rather than hidden
// in code: link efficiencies (already applied to the links' bandwidths) come from the file's
// `efficiency` keys; `algorithm_efficiency` is the fraction of its links' rate a producer reaches
// on this system (NCCL's per-algorithm bus efficiency, e.g. NVLS below the links' rate because of
// the switch's reduction); `published` lists the figures it was fitted to.
struct Calibration {
  std::string source;
  std::vector<std::pair<std::string, double>> algorithm_efficiency;
  std::vector<PublishedFigure> published;
  bool empty() const { return source.empty() && algorithm_efficiency.empty() && published.empty(); }
  // The efficiency of `algorithm` (a producer name before any ':'), 1 when none is given.
  double efficiency_of(std::string_view algorithm) const;
};

// A runtime's protocol (NCCL's LL, LL128 and Simple): what share of every link's bandwidth carries
// data under it (LL sends a 4-byte flag with every 4 bytes of data: 0.5) and what a step costs
// under it. An algorithm runs at most one (synth::Algorithm::protocol) and is timed on the topology
// under it (Topology::under). Where a topology lists protocols, `-k auto` times each and keeps the
// fastest (docs/model.md). Not part of the fingerprint, as Link::step.
struct Protocol {
  std::string name;
  double bandwidth = 1.0;    // the share of each link's bandwidth that carries data, in (0, 1]
  Time step = kDefaultStep;  // every link's per-step cost under it (Link::step)
  // Where positive, each link's own step times this instead of `step`: one protocol over links
  // of several classes (NVLink, InfiniBand), whose steps differ.
  double step_scale = 0;
  // Whether switches reduce and multicast under it (Node::can_reduce, can_multicast): NCCL runs
  // NVLS, its in-switch reduction, in Simple only.
  bool in_network = true;
  // Producers that cannot run it (a baseline's name before any ':').
  std::vector<std::string> excludes;
  bool excludes_producer(std::string_view producer) const;
  // Link `l`'s per-step cost under it.
  Time step_on(const Link& l) const;
  // What `data` bytes take on the wire under it: data / bandwidth, rounded up.
  int64_t on_the_wire(int64_t data) const {
    return static_cast<int64_t>(std::ceil(static_cast<double>(data) / bandwidth));
  }
  // Its step in words: "1 us a step", "0.25 x each link's step".
  std::string step_words() const;
};

class TopologyBuilder;

class Topology {
 public:
  int num_npus() const { return num_npus_; }
  int num_switches() const { return static_cast<int>(nodes_.size()) - num_npus_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_links() const { return static_cast<int>(links_.size()); }

  bool is_npu(NodeId n) const { return n < num_npus_; }
  bool is_switch(NodeId n) const { return n >= num_npus_; }
  // Whether traffic may pass through `n` without being stored: switches and router NPUs.
  bool passes_through(NodeId n) const { return is_switch(n) || nodes_[n].router; }

  const Node& node(NodeId n) const { return nodes_[n]; }
  const Link& link(LinkId l) const { return links_[l]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }

  // Links leaving / entering a node, in increasing link id (CSR slices).
  std::span<const LinkId> out_links(NodeId n) const {
    return {out_links_.data() + out_offsets_[n], out_links_.data() + out_offsets_[n + 1]};
  }
  std::span<const LinkId> in_links(NodeId n) const {
    return {in_links_.data() + in_offsets_[n], in_links_.data() + in_offsets_[n + 1]};
  }

  // Name of a node, or "npu<i>" / "sw<j>" style fallback; for messages.
  std::string describe_node(NodeId n) const;
  std::string describe_link(LinkId l) const;
  // Node id by name, or -1.
  NodeId find_node(std::string_view name) const;

  // A 64-bit fingerprint of everything that affects algorithms: node kinds and flags, links with
  // their bandwidth and latency, in id order. Names do not count.
  uint64_t fingerprint() const { return fingerprint_; }

  // Free-form name of the topology (file stem or generator spec).
  const std::string& name() const { return name_; }

  // Structure known from how the topology was made (empty when unknown); NPU ids count the first
  // entry fastest. `levels`: the dimensions of a hierarchy ("ring:8 x switch:4" -> 8, 4;
  // "torus2d:4x4" -> 4, 4; "hypercube:8" -> 2, 2, 2; an ASTRA-sim network.yml's npus_count; a
  // file's `dimensions`). `grid`: the same for generated topologies, kept only in memory, used to
  // find rings that follow the links.
  const std::vector<int>& levels() const { return levels_; }
  const std::vector<int>& grid() const { return grid_; }
  // Calibration of a system preset (empty for most topologies; not part of the fingerprint).
  const Calibration& calibration() const { return calibration_; }

  // Whether algorithms made for this topology pay its links' per-step costs (Link::step). Off as
  // built, so that the library's model stays the bytes-only one unless asked; the CLI turns it
  // on (`--step-costs on`, its default). An algorithm records what it was made under
  // (Algorithm::step_costs), so turning this later does not change an algorithm's time.
  bool charges_steps() const { return charges_steps_; }
  void set_charges_steps(bool on) { charges_steps_ = on; }

  // The protocols algorithms on this topology may run (empty for most topologies: the links as they
  // are), and the one named `name`, or null.
  const std::vector<Protocol>& protocols() const { return protocols_; }
  const Protocol* protocol(std::string_view name) const;
  // This topology under protocol `p`: every link's bandwidth times p.bandwidth, its per-step cost
  // p.step_on(link), no in-network collectives unless p.in_network; no protocols of its own, and
  // applied() names `p`. What an algorithm running `p` is timed on, and what the synthesizer
  // searches when it tries `p`.
  Topology under(const Protocol& p) const;
  // This topology with no switch that reduces or multicasts: what a runtime without in-network
  // collectives (MSCCL's programs and ASTRA-sim's custom collectives hold ranks only) can use.
  Topology without_in_network_collectives() const;
  // The protocol this topology is under (see under()), or null for a topology as described.
  const Protocol* applied() const { return applied_ ? &*applied_ : nullptr; }

 private:
  friend class TopologyBuilder;
  friend Topology reversed(const Topology& t);
  std::string name_;
  Calibration calibration_;
  std::vector<Protocol> protocols_;
  std::optional<Protocol> applied_;
  std::vector<int> levels_, grid_;
  int num_npus_ = 0;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<int32_t> out_offsets_, in_offsets_;
  std::vector<LinkId> out_links_, in_links_;
  std::unordered_map<std::string, NodeId> by_name_;
  uint64_t fingerprint_ = 0;
  bool charges_steps_ = false;
};

// Builds a Topology. NPUs are numbered first (in the order added), then switches, whatever the
// order of the calls: add_switch returns a handle that stays valid (see resolve()).
class TopologyBuilder {
 public:
  explicit TopologyBuilder(std::string name = "") : name_(std::move(name)) {}

  // Returns the NPU's id (0, 1, ...). Unnamed nodes are called npu<i> / sw<j>; a name used twice
  // throws at once. `where` is kept for error messages.
  NodeId add_npu(std::string name = "", bool router = false, Location where = {});
  // Returns a switch handle: ~index (negative). Pass it to add_link; ids are fixed in build().
  NodeId add_switch(std::string name = "", Location where = {});
  Node& node_props(NodeId handle);
  // The receiving port's buffer of a link added before (see Link::buffer); checked in build().
  void set_link_buffer(LinkId l, Bytes buffer);
  // The per-step cost of a link added before (see Link::step); checked in build().
  void set_link_step(LinkId l, Time step);
  const std::string& name_of(NodeId handle) const {
    return handle >= 0 ? npus_.at(handle).node.name : switches_.at(~handle).node.name;
  }

  // Adds a directed link. Endpoints are NPU ids or switch handles. Checked in build().
  LinkId add_link(NodeId src, NodeId dst, Bandwidth bw, Time latency, std::string name = "",
                  Location where = {});
  // Two links, one each way, with the same properties. Returns the first.
  LinkId add_bidirectional(NodeId a, NodeId b, Bandwidth bw, Time latency, std::string name = "",
                           Location where = {});

  int num_npus() const { return static_cast<int>(npus_.size()); }
  int num_switches() const { return static_cast<int>(switches_.size()); }
  int num_links() const { return static_cast<int>(links_.size()); }
  // The final node id of an NPU id or switch handle.
  NodeId resolve(NodeId handle) const;
  // Node handle by name, or INT32_MIN.
  NodeId find(std::string_view name) const;
  static constexpr NodeId kNotFound = INT32_MIN;

  // Records structure (see Topology::levels and grid); checked against the NPU count in build().
  void set_levels(std::vector<int> levels) { levels_ = std::move(levels); }
  void set_grid(std::vector<int> grid) { grid_ = std::move(grid); }
  void set_calibration(Calibration c) { calibration_ = std::move(c); }
  // The protocols algorithms may run (see Topology::protocols); checked in build(): names unique
  // and not empty, bandwidth in (0, 1], steps not negative.
  void set_protocols(std::vector<Protocol> p) { protocols_ = std::move(p); }

  // Validates and builds. Throws tenet::Error naming the offending node or link (and the file
  // location it came from, when known): self-loops, non-positive bandwidth, negative latency,
  // unknown endpoints, duplicate names, switches with no links, an NPU that cannot reach another.
  Topology build() const;

 private:
  struct PendingNode {
    Node node;
    Location where;
  };
  struct PendingLink {
    Link link;
    Location where;
  };
  std::string name_;
  std::vector<PendingNode> npus_, switches_;
  std::vector<PendingLink> links_;
  std::unordered_map<std::string, NodeId> by_name_;  // name -> NPU id or switch handle
  std::vector<int> levels_, grid_;
  Calibration calibration_;
  std::vector<Protocol> protocols_;
};

// The same nodes with every link turned around (same ids, bandwidths and latencies): Reduce-Scatter
// is All-Gather on the reversed topology, reversed in time.
Topology reversed(const Topology& t);

// Where `t` is its own reverse: per link, its twin, the link between the same two nodes the other
// way with the same bandwidth, latency and per-step cost (parallel links paired in id order, each
// the twin of one). Then reversed(t) is `t` with link l renamed to its twin, and a schedule on the
// one is a schedule on the other taking the same time. Nothing where some link has no twin.
std::optional<std::vector<LinkId>> twin_links(const Topology& t);

// A 64-bit fingerprint of what Topology::fingerprint leaves out and costs read: every link's
// per-step cost, in id order, and whether they are charged. A memo of results that depend on what
// algorithms cost keys on both.
uint64_t step_fingerprint(const Topology& t);

}  // namespace tenet::topo
