#include "synth/auto/runtime_target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"
#include "synth/producers.hpp"
#include "topo/error.hpp"

namespace tenet::synth {
namespace {

// The candidates tried so far and the fastest program read back.
class Choice {
 public:
  Choice(const topo::Topology& t, const MscclOptions& msccl) : t_(t), msccl_(msccl) {}

  // Writes `a` for the runtime and reads it back; keeps it where it is the fastest so far.
  void offer(const Algorithm& a, const std::string& from) {
    std::string xml;
    try {
      xml = to_msccl_xml(a, msccl_);
    } catch (const Error& e) {
      choice_.left_out.push_back(fmt::format("{}: {}", from, e.message()));
      return;
    }
    MscclImport back = import_msccl_xml(xml, t_, "<" + from + ">");
    if (!back.problems.empty()) {  // Tenet's own export: a defect, said rather than hidden
      choice_.left_out.push_back(
          fmt::format("{}: read back, incorrect: {}", from, back.problems.front().message));
      return;
    }
    ++choice_.candidates;
    time(t_, back.algorithm);
    back.algorithm.name = a.name;
    if (!best_ || back.algorithm.claimed_time < choice_.algorithm.claimed_time) {
      best_ = true;
      back.algorithm.method =
          (a.method.empty() ? "baseline " + a.name : a.method) + "; as the MSCCL runtime runs it";
      back.algorithm.provenance = a.provenance;
      choice_.algorithm = std::move(back.algorithm);
      choice_.from = from;
      choice_.schedule_time = collective_time(t_, a);
      choice_.runtime_time = choice_.algorithm.claimed_time;
    }
  }
  Made<RuntimeChoice> result() && {
    if (best_) return std::move(choice_);
    return NotMade{choice_.left_out.empty() ? std::string("no candidate for the MSCCL runtime")
                                            : "no candidate fits the MSCCL runtime; the first: " +
                                                  choice_.left_out.front()};
  }

 private:
  const topo::Topology& t_;
  const MscclOptions& msccl_;
  RuntimeChoice choice_;
  bool best_ = false;
};

}  // namespace

void for_each_runtime_candidate(
    const topo::Topology& described, const Collective& c, Bytes total_bytes,
    const SynthOptions& options, int max_chunks_per_npu,
    const std::function<void(const Algorithm&, const std::string&)>& offer_on_described) {
  // Runtimes' programs hold ranks only: the candidates are made without the switches' in-network
  // reduction and multicast, and then hold for the topology as described.
  const bool in_network =
      std::any_of(described.nodes().begin(), described.nodes().end(),
                  [](const topo::Node& n) { return n.can_reduce || n.can_multicast; });
  const topo::Topology plain = in_network ? described.without_in_network_collectives() : described;
  const topo::Topology& t = plain;
  const auto offer = [&](const Algorithm& made, const std::string& from) {
    Algorithm a = made;
    a.topology_fingerprint = described.fingerprint();
    offer_on_described(a, from);
  };
  SynthMemo memo;  // the counts below share the search's flow plans and bounds
  SynthOptions searching = options;
  if (!searching.memo) searching.memo = &memo;
  SynthOptions quiet = searching;
  quiet.progress = nullptr;
  // The synthesizer at the count its search picked, then at each smaller power of two: fewer
  // chunks make fewer steps, which the runtime's limits and its program order favour. Each in
  // the fastest protocol it may run (make_algorithm).
  int picked = 0;
  try {
    const ChunkingResult r =
        make_algorithm_auto_chunks("tenet", t, c, total_bytes, searching, max_chunks_per_npu);
    offer(r.algorithm, fmt::format("tenet at {} chunks per NPU", r.chunks_per_npu));
    picked = r.chunks_per_npu;
  } catch (const NotApplicable&) {
    // the synthesizer has nothing for it: the baselines below may
  }
  for (int k = picked / 2; k >= 1; k /= 2) {
    Collective cc = c;
    cc.chunks_per_npu = k;
    try {
      offer(make_algorithm("tenet", t, cc, cc.chunk_bytes_for(total_bytes), quiet),
            fmt::format("tenet at {} chunks per NPU", k));
    } catch (const NotApplicable&) {
      // not at this count
    }
  }
  for (BaselineKind b : all_baselines()) {
    if (!supports(b, c.kind)) continue;
    const std::string name = BaselineSpec{b, {}}.name();
    try {
      const ChunkingResult r =
          make_algorithm_auto_chunks(name, t, c, total_bytes, quiet, max_chunks_per_npu);
      offer(r.algorithm, fmt::format("{} at {} chunks per NPU", name, r.chunks_per_npu));
    } catch (const NotApplicable&) {
      // a baseline that does not apply on this topology or group
    } catch (const Unreachable&) {
      // its ranks not joined the way it needs
    }
  }
}

Made<RuntimeChoice> best_for_msccl(const topo::Topology& t, const Collective& c, Bytes total_bytes,
                                   const SynthOptions& options, const MscclOptions& msccl,
                                   int max_chunks_per_npu) {
  if (c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::ReduceScatter &&
      c.kind != CollectiveKind::AllReduce && c.kind != CollectiveKind::AllToAll)
    return NotMade{fmt::format("MSCCL-XML has no {}", to_string(c.kind))};
  Choice choice(t, msccl);
  // (Without the server plan's rail messages, nor the answer's drain at full rate: MSCCL runs no
  // rates, so the drain changes nothing it runs and costs timings. Nor its tail listed again: each
  // candidate is read back as the runtime runs it, and a pass over a few last deliveries costs a
  // timing of each. PortfolioOptions::rail_messages, full_rate_drain, tail_spread.)
  SynthOptions candidates = options;
  candidates.portfolio.rail_messages = false;
  candidates.portfolio.full_rate_drain = false;
  candidates.portfolio.tail_spread = false;
  for_each_runtime_candidate(
      t, c, total_bytes, candidates, max_chunks_per_npu,
      [&](const Algorithm& a, const std::string& from) { choice.offer(a, from); });
  return std::move(choice).result();
}

}  // namespace tenet::synth
