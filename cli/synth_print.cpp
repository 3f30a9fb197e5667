// tenet synth's output: one algorithm in detail, or many rows as a table.
#include "cli/synth_print.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "bench/table.hpp"
#include "cli/halves_print.hpp"
#include "cli/synth_target.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/groups/group_map.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"

namespace tenet::cli {
namespace {

std::string gbps(double bytes_per_second) { return fmt::format("{:.3f}", bytes_per_second / 1e9); }

// Whether NPUs outside the group took part: as relays (a transfer to or from one) or on routes.
std::string non_members(const topo::Topology& t, const synth::Algorithm& a) {
  std::vector<char> member(static_cast<size_t>(t.num_nodes()), 0);
  for (topo::NodeId r : a.collective.ranks) member[static_cast<size_t>(r)] = 1;
  int64_t relayed = 0, routed = 0;
  for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(a.size()); ++id) {
    relayed += !member[static_cast<size_t>(a[id].src)] || !member[static_cast<size_t>(a[id].dst)];
    bool through = false;
    for (topo::LinkId l : a.route(id)) {
      const topo::NodeId w = t.link(l).dst;
      through = through || (w != a[id].dst && t.is_npu(w) && !member[static_cast<size_t>(w)]);
    }
    routed += through;
  }
  if (relayed == 0 && routed == 0) return "no other NPU relays or routes its data";
  return fmt::format("other NPUs relay {} transfers and route {}", relayed, routed);
}

// The protocols `t` lists, in words: "LL, LL128 and Simple".
std::string protocol_names(const topo::Topology& t) {
  std::string out;
  for (size_t i = 0; i < t.protocols().size(); ++i)
    out += (i == 0 ? "" : i + 1 == t.protocols().size() ? " and " : ", ") + t.protocols()[i].name;
  return out;
}

// A group's bound within its part of the topology (synth/groups/group_map.hpp: its members and the
// switches they reach, where the synthesizer works for it in a much larger cluster), when the
// algorithm stays in it (no other NPU sends, receives or forwards: a team relay borrows them), or
// -1.
Time part_bound(const topo::Topology& t, const synth::Algorithm& a) {
  const std::optional<synth::GroupPart> part = synth::group_part(t, a.collective);
  if (!part) return -1;
  std::vector<char> member(static_cast<size_t>(t.num_nodes()), 0);
  for (topo::NodeId r : a.collective.ranks) member[static_cast<size_t>(r)] = 1;
  auto outside = [&](topo::NodeId v) { return t.is_npu(v) && !member[static_cast<size_t>(v)]; };
  for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(a.size()); ++id) {
    if (outside(a[id].src) || outside(a[id].dst)) return -1;
    for (topo::LinkId l : a.route(id))
      if (outside(t.link(l).dst)) return -1;
  }
  return synth::lower_bound(part->topology, part->collective, a.chunk_bytes, a.step_costs).total;
}

// Why a baseline was left out for its size, in words (synth::BaselineLeftOut).
std::string left_out_words(synth::BaselineLeftOut::Why why) {
  if (why == synth::BaselineLeftOut::Why::Ranks)
    return fmt::format(
        "not raced over more than {} ranks (each tree fills through its height, which grows with "
        "the ranks; its race can take longer than the rest of the search)",
        synth::kBlinkPortfolioRanks);
  return fmt::format("not raced over about {} transfers", synth::kAutoChunkTransferBudget);
}

// The `--json` summary of one row (print_one).
void print_json(const SynthArgs& args, const topo::Topology& t, const SynthRow& row,
                const exporting::Exported& exported, double algbw, double busbw, Time in_part) {
  const synth::Algorithm& a = *row.algorithm;
  const synth::Report& r = *row.report;
  const synth::Collective& c = a.collective;
  nlohmann::ordered_json j;
  j["topology"] = t.name();
  j["npus"] = t.num_npus();
  j["collective"] = c.uneven() ? "all-to-allv" : synth::to_string(c.kind);
  j["ranks"] = c.ranks;
  j["size_bytes"] = row.size;
  if (c.uneven()) {
    j["unit_bytes"] = c.chunks_per_npu * a.chunk_bytes;
    j["pair_units"] = c.pair_units;
  }
  j["algorithm"] = a.name;
  j["method"] = a.method;
  // (The tail of the run whose transfers the chunk search gave their routes' full rate, where it
  // did: synth/plans/full_rate_drain.hpp.)
  if (a.provenance.full_rate_drain > 0) j["full_rate_drain"] = a.provenance.full_rate_drain;
  // (The tail of the run whose deliveries it listed again: synth/plans/tail_spread.hpp.)
  if (a.provenance.tail_spread > 0) j["tail_spread"] = a.provenance.tail_spread;
  // (An All-Reduce made of its halves' own answers in turn: synth/plans/all_reduce.hpp.)
  if (a.provenance.halves_answers) j["halves_answers"] = true;
  j["chunks_per_npu"] = c.chunks_per_npu;
  if (c.all_reduce_chunks > 0)
    j["chunks"] = c.all_reduce_chunks;  // an All-Reduce in chunks in all (composed)
  j["chunk_bytes"] = a.chunk_bytes;
  if (!row.tried.empty()) {
    auto& tried = j["chunks_tried"] = nlohmann::ordered_json::array();
    for (const auto& x : row.tried) {
      nlohmann::ordered_json one = {{"chunks_per_npu", x.chunks_per_npu}, {"time_ps", x.time}};
      if (x.alone) one["method_alone"] = synth::to_string(*x.alone);
      if (x.floor) one["floor"] = true;  // time_ps is a floor: not timed, as it could not win
      if (x.predicted) one["predicted"] = true;  // ... standing on a method's predicted time
      tried.push_back(std::move(one));
    }
  }
  j["link_model"] = synth::to_string(a.link_model);
  if (!a.protocol.empty()) j["protocol"] = a.protocol;
  if (a.reduce_bandwidth > 0) {
    j["reduce_Bps"] = a.reduce_bandwidth;
    j["reduction_ps"] = a.reduction_time();
  }
  j["time_ps"] = r.collective_time;
  j["lower_bound_ps"] = r.bound.total;
  j["lower_bound_kind"] = r.bound.label;
  j["lower_bound_terms"] = synth::describe(r.bound);
  j["lower_bound_limit"] = r.bound.limit;
  j["ratio_to_bound"] = r.ratio();
  if (!row.left_out.empty()) {
    auto& left_out = j["baselines_left_out"] = nlohmann::ordered_json::array();
    for (const synth::BaselineLeftOut& b : row.left_out)
      left_out.push_back(nlohmann::ordered_json{
          {"baseline", b.baseline},
          {"why", b.why == synth::BaselineLeftOut::Why::Ranks ? "ranks" : "transfers"}});
  }
  if (row.halves) {
    j["halves_in_turn_ps"] = row.halves->total();
    j["halves_in_turn_terms"] = synth::describe(*row.halves);
    j["halves_in_turn_limit"] = synth::describe_limit(*row.halves);
  }
  if (in_part > 0) j["group_part_lower_bound_ps"] = in_part;
  j["algbw_GBps"] = algbw / 1e9;
  j["busbw_GBps"] = busbw / 1e9;
  j["transfers"] = a.size();
  j["build_s"] = row.seconds;
  j["from_cache"] = row.from_cache;
  j["stopped_early"] = row.stopped_early;
  j["seed"] = args.seed;
  j["restarts"] = args.restarts;
  j["verified"] = r.correct();
  j["violations"] = r.violation_count;
  j["written"] = exported.written;
  auto& skipped = j["not_written"] = nlohmann::ordered_json::object();
  for (const auto& [format, why] : exported.skipped) skipped[format] = why;
  j["warnings"] = exported.warnings;
  if (exported.astra_time >= 0) j["astra_sim_ps"] = exported.astra_time;
  if (exported.msccl_time >= 0) j["msccl_xml_read_back_ps"] = exported.msccl_time;
  if (!row.target_note.empty()) j["target"] = row.target_note;
  fmt::print("{}\n", j.dump(2));
}

// The counts the chunk search tried, as " (auto; tried 1: 2 ms, 2: 1.5 ms; plan-pipeline alone
// 128: 1.2 ms, 256: 1.1 ms)"; empty where it tried none.
std::string tried_note(const SynthRow& row) {
  if (row.tried.empty()) return "";
  std::string tried;
  std::optional<synth::SynthMethod> alone;
  for (const auto& x : row.tried) {
    const bool switched = x.alone != alone;
    tried +=
        fmt::format("{}{}{}: {}",
                    tried.empty() ? ""
                    : switched    ? "; "
                                  : ", ",
                    switched && x.alone ? fmt::format("{} alone ", synth::to_string(*x.alone)) : "",
                    x.chunks_per_npu,
                    // A floor: the count could not beat the fastest then, so it was not timed;
                    // where it stands on a method's predicted time, so said.
                    x.predicted ? "predicted " + format_time(x.time) + " (not made)"
                    : x.floor   ? "at least " + format_time(x.time)
                                : format_time(x.time));
    alone = x.alone;
  }
  return fmt::format(" (auto; tried {})", tried);
}

}  // namespace

void print_one(const SynthArgs& args, const topo::Topology& t, const SynthRow& row,
               const exporting::Exported& exported) {
  const synth::Algorithm& a = *row.algorithm;
  const synth::Report& r = *row.report;
  const synth::Collective& c = a.collective;
  const double algbw = row.algbw();
  const double busbw = algbw * synth::bus_bandwidth_factor(c.kind, c.num_ranks());
  const Time in_part = part_bound(t, a);
  if (args.json) {
    print_json(args, t, row, exported, algbw, busbw, in_part);
    return;
  }
  const std::string chunk_note = tried_note(row);
  fmt::print("topology        {} ({} NPUs, {} switches, {} links)\n", t.name(), t.num_npus(),
             t.num_switches(), t.num_links());
  if (c.num_ranks() != t.num_npus() || !std::is_sorted(c.ranks.begin(), c.ranks.end()))
    fmt::print("group           {} NPUs: {}; {}\n", c.num_ranks(), synth::format_ranks(c.ranks),
               non_members(t, a));
  if (c.uneven())
    fmt::print(
        "collective      all-to-allv, {} units of {} ({} in all; the busiest rank sends {}), {} "
        "chunks of {}{}\n",
        c.total_units(), format_bytes(c.chunks_per_npu * a.chunk_bytes),
        format_bytes(c.total_units() * c.chunks_per_npu * a.chunk_bytes), format_bytes(row.size),
        c.num_chunks(), format_bytes(a.chunk_bytes), chunk_note);
  else
    fmt::print("collective      {} of {}, {} chunks of {}{}\n", synth::to_string(c.kind),
               format_bytes(row.size), c.num_chunks(), format_bytes(a.chunk_bytes), chunk_note);
  fmt::print("collective time {}  ({} link model{})\n", format_time(r.collective_time),
             synth::to_string(a.link_model),
             a.reduce_bandwidth > 0
                 ? fmt::format("; each reduction {} at {}", format_time(a.reduction_time()),
                               format_bandwidth(a.reduce_bandwidth))
                 : "");
  if (const topo::Protocol* p = t.protocol(a.protocol))
    fmt::print(
        "protocol        {}: {:g} of every link's bandwidth, {} (the fastest it may run of "
        "{})\n",
        p->name, p->bandwidth, p->step_words(), protocol_names(t));
  fmt::print("lower bound     {}  ({})\n", format_time(r.bound.total), synth::describe(r.bound));
  if (!r.bound.limit.empty()) fmt::print("bound limit     {}\n", r.bound.limit);
  fmt::print("ratio           {:.4f}\n", r.ratio());
  if (row.halves) print_halves(*row.halves, r.collective_time, 16);
  for (const synth::BaselineLeftOut& b : row.left_out)
    fmt::print("left out        baseline {}: {}; `--algo {}` builds it, at its cost\n", b.baseline,
               left_out_words(b.why), b.baseline);
  if (in_part > 0)
    fmt::print(
        "in its part     bound {}, ratio {:.4f} (the group's members and the switches they reach: "
        "without "
        "other groups' NPUs)\n",
        format_time(in_part),
        static_cast<double>(r.collective_time) / static_cast<double>(in_part));
  fmt::print("algbw / busbw   {} / {}\n", format_bandwidth(static_cast<Bandwidth>(algbw)),
             format_bandwidth(static_cast<Bandwidth>(busbw)));
  fmt::print("transfers       {}\n", a.size());
  if (args.algo == "tenet" && row.from_cache)
    fmt::print(
        "synthesis       {:.3f} s: read from the algorithm cache and verified (method: {}; "
        "--no-cache makes it again)\n",
        row.seconds, a.method);
  else if (args.algo == "tenet")
    fmt::print("synthesis       {:.3f} s (seed {}, {} restart{}, {} priority; method: {})\n",
               row.seconds, args.seed, args.restarts, args.restarts == 1 ? "" : "s", args.priority,
               a.method);
  else
    fmt::print("algorithm       {} (built in {:.3f} s)\n", a.name, row.seconds);
  if (!row.target_note.empty()) fmt::print("target          {}\n", row.target_note);
  if (row.stopped_early)
    fmt::print(
        "stopped early   {}: the best verified algorithm found by then (the whole search "
        "may find a faster one)\n",
        describe_stop(args.time_limit));
  fmt::print("verified        {}\n",
             r.correct() ? "correct" : fmt::format("INCORRECT ({} violations)", r.violation_count));
  for (size_t i = 0; i < exported.written.size(); ++i)
    fmt::print("{:16}{}\n", i == 0 ? "wrote" : "", exported.written[i]);
  if (exported.astra_time >= 0)
    fmt::print("ASTRA-sim       {}\n", exporting::describe_astra_time(exported));
  for (const std::string& n : exported.astra_notes) fmt::print("astra-sim       {}\n", n);
  for (const auto& [format, why] : exported.skipped)
    fmt::print("not written     {}: {}{}\n", format, why, target_hint(args.target, format));
  for (const std::string& w : exported.warnings) fmt::print("warning         {}\n", w);
}

void print_rows(const SynthArgs& args, const topo::Topology& t, const synth::Collective& c,
                const std::vector<SynthRow>& rows, const std::vector<std::string>& files) {
  const bool sweep = rows.front().size != rows.back().size;
  auto tenet_time = [&](Bytes size) -> Time {
    for (const SynthRow& r : rows)
      if (r.size == size && r.name == "tenet" && r.report) return r.report->collective_time;
    return 0;
  };
  const bool speed_ups = args.algo == "all";
  std::vector<std::string> header{"size",           "algorithm", "time", "lower bound",
                                  "ratio to bound", "algbw",     "busbw"};
  if (speed_ups) header.push_back("tenet speed-up");
  for (const char* h : {"verified", "chunks/NPU", "transfers", "build (s)"}) header.push_back(h);
  bench::Table text(header), csv({"size_bytes", "algorithm", "status", "time_ps", "lower_bound_ps",
                                  "ratio_to_bound", "algbw_GBps", "busbw_GBps", "tenet_speed_up",
                                  "chunks_per_npu", "transfers", "build_s", "file", "note"});
  nlohmann::ordered_json rows_json = nlohmann::ordered_json::array();
  std::vector<std::string> notes;
  for (size_t i = 0; i < rows.size(); ++i) {
    const SynthRow& r = rows[i];
    if (!r.algorithm) {
      notes.push_back(fmt::format("{}{}: does not apply: {}", r.name,
                                  sweep ? " at " + format_bytes(r.size) : "", r.not_applicable));
      csv.add_row({std::to_string(r.size), r.name, "not-applicable", "", "", "", "", "", "", "", "",
                   "", "", r.not_applicable});
      rows_json.push_back({{"size_bytes", r.size},
                           {"algorithm", r.name},
                           {"status", "not-applicable"},
                           {"note", r.not_applicable}});
      continue;
    }
    const synth::Report& rep = *r.report;
    const double algbw = r.algbw(),
                 busbw = algbw * synth::bus_bandwidth_factor(c.kind, c.num_ranks());
    const Time tt = tenet_time(r.size);
    const double speed_up =
        tt > 0 ? static_cast<double>(rep.collective_time) / static_cast<double>(tt) : 0;
    const int k = r.algorithm->collective.chunks_per_npu;
    // On a topology with runtime protocols, the one it runs: "ring (LL)".
    const std::string& protocol = r.algorithm->protocol;
    std::vector<std::string> cells{
        format_bytes(r.size),
        protocol.empty() ? r.name : fmt::format("{} ({})", r.name, protocol),
        format_time(rep.collective_time),
        format_time(rep.bound.total),
        fmt::format("{:.4f}", rep.ratio()),
        format_bandwidth(static_cast<Bandwidth>(algbw)),
        format_bandwidth(static_cast<Bandwidth>(busbw))};
    if (speed_ups) cells.push_back(tt > 0 ? fmt::format("{:.3f}x", speed_up) : "");
    for (std::string cell :
         {rep.correct() ? std::string("correct")
                        : fmt::format("INCORRECT ({})", rep.violation_count),
          std::to_string(k), std::to_string(r.algorithm->size()), fmt::format("{:.3f}", r.seconds)})
      cells.push_back(std::move(cell));
    text.add_row(std::move(cells));
    const std::string status = rep.correct() ? "ok" : "incorrect";
    csv.add_row({std::to_string(r.size), r.name, status, std::to_string(rep.collective_time),
                 std::to_string(rep.bound.total), fmt::format("{:.4f}", rep.ratio()), gbps(algbw),
                 gbps(busbw), tt > 0 ? fmt::format("{:.4f}", speed_up) : "", std::to_string(k),
                 std::to_string(r.algorithm->size()), fmt::format("{:.4f}", r.seconds), files[i],
                 ""});
    nlohmann::ordered_json j{{"size_bytes", r.size},
                             {"algorithm", r.name},
                             {"status", status},
                             {"time_ps", rep.collective_time},
                             {"lower_bound_ps", rep.bound.total},
                             {"lower_bound_kind", rep.bound.label},
                             {"ratio_to_bound", rep.ratio()},
                             {"algbw_GBps", algbw / 1e9},
                             {"busbw_GBps", busbw / 1e9}};
    if (tt > 0) j["tenet_speed_up"] = speed_up;
    j["chunks_per_npu"] = k;
    if (!protocol.empty()) j["protocol"] = protocol;
    j["transfers"] = r.algorithm->size();
    j["build_s"] = r.seconds;
    j["violations"] = rep.violation_count;
    j["file"] = files[i];
    rows_json.push_back(std::move(j));
  }
  if (args.json) {
    nlohmann::ordered_json j;
    j["topology"] = t.name();
    j["npus"] = t.num_npus();
    j["collective"] = synth::to_string(c.kind);
    j["chunks_per_npu_asked"] = args.chunks;  // "auto" or a count; each row says what it ran with
    j["link_model"] = args.link_model;
    j["rows"] = std::move(rows_json);
    fmt::print("{}\n", j.dump(2));
    return;
  }
  if (args.csv) {
    fmt::print("{}", csv.csv());
    return;
  }
  const std::string chunks = args.chunks == "auto"
                                 ? "chunks per NPU picked per algorithm and size (auto)"
                                 : fmt::format("{} chunks per NPU", args.chunks);
  fmt::print("{} on {} ({} NPUs), {}, {} links\n", synth::to_string(c.kind), t.name(), t.num_npus(),
             chunks, args.link_model);
  fmt::print("busbw = algbw x {} (nccl-tests' bus bandwidth for {} over {} ranks)\n\n",
             fmt::format("{:.4g}", synth::bus_bandwidth_factor(c.kind, c.num_ranks())),
             synth::to_string(c.kind), c.num_ranks());
  fmt::print("{}", text.markdown());
  for (const std::string& n : notes) fmt::print("{}\n", n);
  fmt::print("wrote one algorithm file per row to {}\n", args.output);
}

}  // namespace tenet::cli
