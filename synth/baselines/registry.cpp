#include "synth/baselines/baselines.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "synth/baselines/builder.hpp"
#include "synth/baselines/families.hpp"
#include "synth/baselines/ring_channels.hpp"
#include "synth/cost/timing.hpp"
#include "synth/ir/ring_plan.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"
#include "topo/suggest.hpp"

namespace tenet::synth {

std::string_view to_string(BaselineKind k) {
  switch (k) {
    case BaselineKind::Ring:
      return "ring";
    case BaselineKind::BidirRing:
      return "bidir-ring";
    case BaselineKind::Direct:
      return "direct";
    case BaselineKind::Rhd:
      return "rhd";
    case BaselineKind::Dbt:
      return "dbt";
    case BaselineKind::Tree:
      return "tree";
    case BaselineKind::Bruck:
      return "bruck";
    case BaselineKind::Hierarchical:
      return "hierarchical";
    case BaselineKind::Nvls:
      return "nvls";
    case BaselineKind::Oneshot:
      return "oneshot";
    case BaselineKind::Blink:
      return "blink";
  }
  return "?";
}

const std::vector<BaselineKind>& all_baselines() {
  static const std::vector<BaselineKind> all{
      BaselineKind::Ring, BaselineKind::BidirRing, BaselineKind::Direct, BaselineKind::Rhd,
      BaselineKind::Dbt,  BaselineKind::Tree,      BaselineKind::Bruck,  BaselineKind::Hierarchical,
      BaselineKind::Nvls, BaselineKind::Oneshot,   BaselineKind::Blink};
  return all;
}

bool has_channels(BaselineKind kind) {
  return kind == BaselineKind::Ring || kind == BaselineKind::BidirRing ||
         kind == BaselineKind::Tree;
}

std::string BaselineSpec::name() const {
  std::string s(to_string(kind));
  for (size_t i = 0; i < per_dimension.size(); ++i) {
    s += i ? ',' : ':';
    s += to_string(per_dimension[i]);
  }
  if (channels > 0) s += fmt::format(":{}", channels);
  return s;
}

BaselineSpec parse_baseline(std::string_view text) {
  auto one = [](std::string_view name) {
    for (BaselineKind k : all_baselines())
      if (to_string(k) == name) return k;
    std::vector<std::string> known{"tenet"};
    for (BaselineKind k : all_baselines()) known.emplace_back(to_string(k));
    throw Error(fmt::format("unknown algorithm '{}'{} (known: {})", name, did_you_mean(name, known),
                            fmt::join(known, ", ")));
  };
  BaselineSpec spec;
  const size_t colon = text.find(':');
  spec.kind = one(text.substr(0, colon));
  if (colon == std::string_view::npos) return spec;
  if (has_channels(spec.kind)) {
    const std::string_view count = text.substr(colon + 1);
    if (count == "auto") return spec;
    int n = 0;
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (ec != std::errc() || end != count.data() + count.size() || n < 1 || n > kMaxChannels)
      throw Error(fmt::format(
          "'{}': the channel count after '{}:' must be auto or a whole number from 1 to {}", text,
          to_string(spec.kind), kMaxChannels));
    spec.channels = n;
    return spec;
  }
  if (spec.kind != BaselineKind::Hierarchical)
    throw Error(fmt::format(
        "only hierarchical takes per-dimension algorithms and only ring, bidir-ring and tree "
        "a channel count, not '{}'",
        text));
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    BaselineKind k = one(rest.substr(0, comma));
    if (k != BaselineKind::Ring && k != BaselineKind::Direct && k != BaselineKind::Rhd)
      throw Error(fmt::format("a dimension of hierarchical runs ring, direct or rhd, not {}",
                              to_string(k)));
    spec.per_dimension.push_back(k);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

bool supports(BaselineKind b, CollectiveKind c) {
  using C = CollectiveKind;
  switch (b) {
    case BaselineKind::Ring:
      return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce || c == C::Broadcast ||
             c == C::Reduce || c == C::AllToAll;
    case BaselineKind::BidirRing:
      return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce || c == C::Broadcast ||
             c == C::Reduce;
    case BaselineKind::Direct:
      return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce || c == C::AllToAll ||
             c == C::Gather || c == C::Scatter;
    case BaselineKind::Rhd:
      return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce;
    case BaselineKind::Dbt:
      return c == C::AllReduce || c == C::Broadcast || c == C::Reduce;
    case BaselineKind::Tree:
      return c == C::AllReduce;
    case BaselineKind::Bruck:
      return c == C::AllGather;
    case BaselineKind::Hierarchical:
      return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce || c == C::AllToAll;
    case BaselineKind::Nvls:
    case BaselineKind::Oneshot:
    case BaselineKind::Blink:
      return c == C::AllReduce;
  }
  return false;
}

// The families (families.hpp) and the builder they list their sends on.
using detail::blink;
using detail::bruck;
using detail::Builder;
using detail::dbt;
using detail::direct;
using detail::hierarchical;
using detail::nccl_tree;
using detail::nvls;
using detail::plan_ring;
using detail::rhd;
using detail::ring;

std::optional<RingPlan> ring_plan(const BaselineSpec& spec, const topo::Topology& t,
                                  const Collective& c, Bytes chunk_bytes, LinkModel model,
                                  Bandwidth reduce_bandwidth, BaselineMemo* memo) {
  if (spec.kind != BaselineKind::Ring && spec.kind != BaselineKind::BidirRing) return std::nullopt;
  if (c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::ReduceScatter &&
      c.kind != CollectiveKind::AllReduce)
    return std::nullopt;
  if (reduce_bandwidth < 0)
    throw Error(fmt::format("negative reduction bandwidth ({} B/s)", reduce_bandwidth));
  c.validate(t);
  if (chunk_bytes < 1) throw Error("chunk size must be at least 1 byte");
  return plan_ring(t, c, chunk_bytes, model, reduce_bandwidth, spec.kind == BaselineKind::BidirRing,
                   spec.channels, spec.name(), memo);
}

namespace {

// The family of `spec` built into `b`.
void build_family(Builder& b, const BaselineSpec& spec, const topo::Topology& t,
                  const Collective& c) {
  switch (spec.kind) {
    case BaselineKind::Ring:
      ring(b, t, c, false, spec.channels);
      break;
    case BaselineKind::BidirRing:
      ring(b, t, c, true, spec.channels);
      break;
    case BaselineKind::Direct:
      direct(b, c);
      break;
    case BaselineKind::Rhd:
      rhd(b, c);
      break;
    case BaselineKind::Dbt:
      dbt(b, c);
      break;
    case BaselineKind::Tree:
      nccl_tree(b, t, c, spec.channels);
      break;
    case BaselineKind::Bruck:
      bruck(b, c);
      break;
    case BaselineKind::Nvls:
      nvls(b, t, c);
      break;
    case BaselineKind::Hierarchical:
      hierarchical(b, t, c, spec.per_dimension);
      break;
    case BaselineKind::Oneshot:
      oneshot(b, c);
      break;
    case BaselineKind::Blink:
      blink(b, t, c);
      break;
  }
}

}  // namespace

Made<Algorithm> try_baseline(const BaselineSpec& spec, const topo::Topology& t, const Collective& c,
                             Bytes chunk_bytes, LinkModel model, Bandwidth reduce_bandwidth,
                             bool timed, BaselineMemo* memo) {
  if (reduce_bandwidth < 0)
    throw Error(fmt::format("negative reduction bandwidth ({} B/s)", reduce_bandwidth));
  c.validate(t);
  if (chunk_bytes < 1) throw Error("chunk size must be at least 1 byte");
  if (!supports(spec.kind, c.kind))
    return NotMade{fmt::format("{} has no {} algorithm", to_string(spec.kind), to_string(c.kind))};
  // All-to-Allv: ring and direct (pairwise) move each rank's blocks whatever their sizes; Bruck and
  // the per-dimension compositions assume equal blocks.
  if (c.uneven() && spec.kind != BaselineKind::Ring && spec.kind != BaselineKind::Direct)
    return NotMade{fmt::format("{} has no all-to-allv (uneven) algorithm; ring and direct have",
                               to_string(spec.kind))};
  // An All-Reduce in C chunks in all (fewer than one per rank, or not a multiple): the trees and
  // NVLS take any chunks; the others give each rank its block.
  if (c.all_reduce_chunks > 0 && spec.kind != BaselineKind::Dbt &&
      spec.kind != BaselineKind::Tree && spec.kind != BaselineKind::Nvls &&
      spec.kind != BaselineKind::Oneshot && spec.kind != BaselineKind::Blink)
    return NotMade{fmt::format(
        "{} gives every rank a block of the all-reduce: it needs k chunks per NPU, not {} "
        "chunks in all",
        spec.name(), c.all_reduce_chunks)};
  // (Asked before anything is built: the simulator asks it at every size of every All-Reduce.)
  if (spec.kind == BaselineKind::Nvls && detail::nvls_hub(t, c) < 0)
    return NotMade{detail::kNoNvlsHub};
  const Provenance made_by = Provenance::of_baseline(spec.name());
  // The families find out deep inside (a rank count a shape needs, a route that is not there, in
  // the ring's plan as in the builders) and say so by NotApplicable; here, their one boundary, it
  // becomes the value.
  try {
    if (auto plan = ring_plan(spec, t, c, chunk_bytes, model, reduce_bandwidth, memo)) {
      Algorithm a = plan->materialize(t);
      a.provenance = made_by;
      if (timed) time(t, a);
      return a;
    }
    // One-shot sends each peer the whole buffer in one message, as MSCCL and NCCL do (one step,
    // one step cost): k chunks per NPU become k chunks in all, each P times as large.
    Collective built = c;
    Bytes bytes = chunk_bytes;
    if (spec.kind == BaselineKind::Oneshot && c.all_reduce_chunks == 0) {
      built.all_reduce_chunks = c.chunks_per_npu;
      const std::optional<int64_t> whole = topo::checked_mul(chunk_bytes, c.num_ranks());
      if (!whole)
        throw Error(fmt::format("{} B chunks on {} ranks overflow", chunk_bytes, c.num_ranks()));
      bytes = *whole;
    }
    Builder b(t, built, bytes, model, spec.name());
    b.set_memo(memo);
    build_family(b, spec, t, built);
    Algorithm a = b.finish(reduce_bandwidth, timed);
    a.provenance = made_by;
    return a;
  } catch (const NotApplicable& e) {
    return NotMade{e.message()};
  }
}

Algorithm make_baseline(const BaselineSpec& spec, const topo::Topology& t, const Collective& c,
                        Bytes chunk_bytes, LinkModel model, Bandwidth reduce_bandwidth, bool timed,
                        BaselineMemo* memo) {
  Made<Algorithm> a = try_baseline(spec, t, c, chunk_bytes, model, reduce_bandwidth, timed, memo);
  if (const NotMade* why = std::get_if<NotMade>(&a)) throw NotApplicable(why->why);
  return std::move(std::get<Algorithm>(a));
}

}  // namespace tenet::synth
