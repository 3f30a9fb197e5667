#include "astra/target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "synth/cost/timing.hpp"
#include "topo/error.hpp"

namespace tenet::astra {

synth::Made<synth::RuntimeChoice> best_for_astra_sim(const topo::Topology& t,
                                                     const synth::Collective& c, Bytes total_bytes,
                                                     const synth::SynthOptions& options,
                                                     const AstraBundleOptions& bundle,
                                                     int max_chunks_per_npu) {
  using synth::CollectiveKind;
  if (c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::ReduceScatter &&
      c.kind != CollectiveKind::AllReduce && c.kind != CollectiveKind::AllToAll)
    return synth::NotMade{
        fmt::format("ASTRA-sim runs no custom {} (a bundle's collective is All-Gather, "
                    "Reduce-Scatter, All-Reduce or All-to-All)",
                    synth::to_string(c.kind))};
  synth::RuntimeChoice choice;
  bool found = false;
  std::vector<std::pair<std::string, std::string>> cannot;  // (why, the candidates)
  synth::for_each_runtime_candidate(
      t, c, total_bytes, options, max_chunks_per_npu,
      [&](const synth::Algorithm& a, const std::string& from) {
        AstraTime run;
        try {
          run = astra_sim_time(a, t, bundle);
        } catch (const Error& e) {  // one line per reason, naming every candidate it left out
          auto same = std::find_if(cannot.begin(), cannot.end(),
                                   [&](const auto& x) { return x.first == e.message(); });
          if (same == cannot.end())
            cannot.emplace_back(e.message(), from);
          else
            same->second += ", " + from;
          return;
        }
        ++choice.candidates;
        if (!found || run.time < choice.runtime_time) {
          found = true;
          choice.algorithm = a;
          choice.from = from;
          choice.schedule_time = synth::collective_time(t, a);
          choice.runtime_time = run.time;
        }
      });
  for (const auto& [why, from] : cannot)
    choice.left_out.push_back(fmt::format("{}: {}", from, why));
  if (found) return choice;
  return synth::NotMade{choice.left_out.empty()
                            ? std::string("no candidate for ASTRA-sim")
                            : "ASTRA-sim runs no candidate; the first: " + choice.left_out.front()};
}

}  // namespace tenet::astra
