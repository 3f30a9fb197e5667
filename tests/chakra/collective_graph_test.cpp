#include "chakra/collective_graph.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/formats/msccl_runtime_rules.hpp"
#include "tests/synth/test_support.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/routing.hpp"

namespace tenet::chakra {
namespace {

// The tenet_set a file's metadata names ("" when none).
std::string meta_string_for_test(const EtFile& f) {
  for (const auto& a : f.metadata.attr())
    if (a.name() == "tenet_set") return a.string_val();
  return "";
}

using synth::Algorithm;
using synth::CollectiveKind;
using ::testing::HasSubstr;

constexpr Bytes kChunk = 256 << 10;

// Synthesized and baseline algorithms of the collectives both formats carry.
std::vector<std::pair<std::string, Algorithm>> corpus(const topo::Topology& t) {
  std::vector<std::pair<std::string, Algorithm>> out;
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                              CollectiveKind::ReduceScatter, CollectiveKind::AllToAll}) {
    const auto c = synth::Collective::over_all(t, kind, 2);
    out.emplace_back(fmt::format("tenet {}", synth::to_string(kind)),
                     synth::synthesize(t, c, kChunk));
    for (synth::BaselineKind b : synth::all_baselines()) {
      if (!synth::supports(b, kind)) continue;
      try {
        out.emplace_back(fmt::format("{} {}", synth::to_string(b), synth::to_string(kind)),
                         synth::make_baseline({b, {}}, t, c, kChunk));
      } catch (const synth::NotApplicable&) {
      }
    }
  }
  return out;
}

void expect_same_outcome(const topo::Topology& t, const Algorithm& original,
                         const Algorithm& imported, const std::string& what) {
  const synth::Report r = synth::verify(t, imported, {.max_reported = 3, .lower_bound = false});
  ASSERT_TRUE(r.correct()) << what << (r.violations.empty() ? "" : ": " + r.violations[0].message);
  EXPECT_EQ(r.collective_time, original.claimed_time) << what;
  EXPECT_EQ(imported.size(), original.size()) << what;
}

TEST(RoundTrip, ChakraAndMscclXmlKeepTheAlgorithmAndItsTime) {
  topo::testing::TempDir dir;
  int checked = 0;
  for (const char* spec : {"ring:4 x switch:2", "torus2d:3x3", "switch:4", "hypercube:8"}) {
    const auto t = topo::generate(spec);
    for (const auto& [name, a] : corpus(t)) {
      const std::string what = fmt::format("{} on {}", name, spec);
      // Chakra: through files, checked by the reader rules.
      const std::string prefix = dir.file(fmt::format("g{}", checked));
      auto files = to_collective_graph(a, t);
      for (size_t r = 0; r < files.size(); ++r)
        write_et(et_path(prefix, static_cast<int>(r)), files[r]);
      const auto read = read_prefix(prefix);
      EXPECT_THAT(check_collective_graph(read, prefix), ::testing::IsEmpty()) << what;
      expect_same_outcome(t, a, from_collective_graph(read, t, prefix), what + " via Chakra");
      // MSCCL-XML, for either runtime, held to both loaders' rules.
      for (synth::MscclRuntime runtime :
           {synth::MscclRuntime::Executor, synth::MscclRuntime::Legacy}) {
        synth::MscclOptions o;
        o.runtime = runtime;
        const std::string xml = synth::to_msccl_xml(a, o);
        EXPECT_THAT(synth::testing::msccl_runtime_problems(xml, runtime), ::testing::IsEmpty())
            << what;
        try {
          expect_same_outcome(t, a, synth::parse_msccl_xml(xml, t), what + " via MSCCL-XML");
        } catch (const Error& e) {
          ADD_FAILURE() << what << " via MSCCL-XML: " << e.what();
        }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

// Metadata is checked before anything is sized by it (issue 23: std::stol threw out of the import,
// and a claimed 2^27 chunks per NPU allocated gigabytes).
TEST(RoundTrip, MetadataOutOfRangeIsAnErrorNamingIt) {
  const auto t = topo::generate("ring:4");
  const Algorithm a =
      synth::synthesize(t, synth::Collective::over_all(t, CollectiveKind::AllGather, 1), kChunk);
  auto with_meta = [&](const std::string& name, const std::string& text, int64_t value) {
    auto files = to_collective_graph(a, t);
    for (auto& attr : *files[0].metadata.mutable_attr())
      if (attr.name() == name) {
        if (attr.value_case() == ChakraProtoMsg::AttributeProto::kStringVal)
          attr.set_string_val(text);
        else
          attr.set_int64_val(value);
      }
    try {
      from_collective_graph(files, t, "g");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(with_meta("tenet_ranks", "0,x,2,3", 0),
              HasSubstr("tenet_ranks in the metadata names 'x', not an NPU"));
  EXPECT_THAT(with_meta("tenet_ranks", "0,1,2,99999999999", 0), HasSubstr("names '99999999999'"));
  EXPECT_THAT(with_meta("tenet_chunks_per_npu", "", int64_t{1} << 27),
              HasSubstr("tenet_chunks_per_npu 134217728 in the metadata is outside [1, 1048576]"));
  EXPECT_THAT(with_meta("tenet_chunk_bytes", "", -5),
              HasSubstr("tenet_chunk_bytes -5 in the metadata is outside"));
}

// Parallel links (DGX-1's doubled NVLinks) and spines keep their routes through Chakra: the same
// time after JSON -> Chakra -> IR. A file without Tenet's routes (or made for another topology)
// gets each pair's equal-cost routes in turn, not always the first, and the import says so.
// Serial channels (Algorithm::serial_channels) go in the metadata and come back; the time too.
TEST(RoundTrip, ChakraKeepsSerialChannels) {
  const auto t = topo::generate("ring:4,bidir=false,bw=50GB/s,lat=0.5us");
  const Algorithm ring =
      synth::make_baseline({synth::BaselineKind::Ring, {}}, t,
                           synth::Collective::over_all(t, CollectiveKind::AllGather, 2), kChunk);
  const Algorithm a = synth::testing::in_serial_channel(t, ring, 25'000'000'000);
  const Algorithm back = from_collective_graph(to_collective_graph(a, t), t, "x");
  EXPECT_TRUE(back.serial_channels);
  EXPECT_EQ(synth::verify(t, back, {.lower_bound = false}).collective_time, a.claimed_time);
  EXPECT_FALSE(from_collective_graph(to_collective_graph(ring, t), t, "x").serial_channels);
}

TEST(RoundTrip, ChakraKeepsRoutesAndLanes) {
  for (const char* spec : {"dgx1", "leafspine:2x4,spines=2"}) {
    const auto t = topo::generate(spec);
    const auto c = synth::Collective::over_all(t, CollectiveKind::AllReduce, 2);
    const Algorithm a = synth::synthesize(t, c, kChunk);
    auto files = to_collective_graph(a, t);
    const Algorithm back = from_collective_graph(files, t, "x");
    EXPECT_EQ(synth::verify(t, back, {.lower_bound = false}).collective_time, a.claimed_time)
        << spec;
    // The routes are the file's (tenet_route): the original's, transfer by transfer.
    ASSERT_EQ(back.size(), a.size()) << spec;
    for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(a.size()); ++id) {
      ASSERT_TRUE(back[id].src == a[id].src && back[id].dst == a[id].dst &&
                  back[id].chunk == a[id].chunk)
          << spec << ": transfer " << id;
      EXPECT_TRUE(std::ranges::equal(back.route(id), a.route(id))) << spec << ": transfer " << id;
    }
    for (auto& f : files)
      for (auto& n : f.nodes)
        for (int i = n.attr_size() - 1; i >= 0; --i)
          if (n.attr(i).name() == "tenet_route") n.mutable_attr()->DeleteSubrange(i, 1);
    const Algorithm spread = from_collective_graph(files, t, "x");
    EXPECT_TRUE(synth::verify(t, spread, {.lower_bound = false}).correct()) << spec;
    // Routes chosen on import: each one of its pair's equal-cost routes (and below, the load spread
    // over all of them).
    const topo::Router router(t);
    for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(spread.size()); ++id) {
      const auto routes = router.equal_cost_routes(spread[id].src, spread[id].dst);
      EXPECT_TRUE(std::ranges::any_of(
          routes,
          [&](const topo::Route& r) { return std::ranges::equal(r.links, spread.route(id)); }))
          << spec << ": transfer " << id;
    }
    std::map<std::pair<topo::NodeId, topo::NodeId>, std::set<topo::LinkId>> first_links;
    for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(spread.size()); ++id)
      first_links[{spread[id].src, spread[id].dst}].insert(spread.route(id)[0]);
    // Every link a route could take carries messages: no lane or spine left idle.
    std::set<topo::LinkId> used;
    for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(spread.size()); ++id)
      for (topo::LinkId l : spread.route(id)) used.insert(l);
    std::set<topo::LinkId> usable;
    for (const auto& [pair, links] : first_links)
      for (const auto& r : topo::Router(t).equal_cost_routes(pair.first, pair.second))
        for (topo::LinkId l : r.links) usable.insert(l);
    EXPECT_EQ(used, usable) << spec;
  }
}

// Attribute value types as the Chakra convention has them (older feeders read exactly these):
// int32 ranks and tags, int64 sizes and types; no COMP node when reductions take no time.
// Write after read: rank 0 sends its own partial of the chunk to rank 1, then rank 2's partial is
// reduced into rank 0's copy; rank 2 sends that partial before rank 1's sum reaches it. The
// schedule is correct (each send leaves before the data that would change it arrives), but in its
// graph nothing orders those arrivals after the sends: either may arrive first, and the send would
// carry it too (a rank counted twice further on). The import reports both; every algorithm Tenet
// makes orders its graph (the round trips above: no problem reported).
TEST(Chakra, ReportsAnArrivalNotOrderedAfterAnEarlierSend) {
  const auto t = topo::generate("switch:3");
  synth::Collective c = synth::Collective::over_all(t, CollectiveKind::AllReduce);
  c.all_reduce_chunks = 1;
  Algorithm a = synth::empty_algorithm("war", t, c, kChunk, synth::LinkModel::Pipelined);
  const topo::Router router(t);
  auto route = [&](int u, int v) { return router.route(u, v)->links; };
  const auto to1 = a.add(0, 0, 1, route(0, 1), synth::Op::Reduce);  // {0} into 1: {0,1}
  a.add(0, 2, 0, route(2, 0), synth::Op::Reduce);                   // {2} into 0: {0,2}
  const std::vector<synth::TransferId> after{to1};
  const auto to2 = a.add(0, 1, 2, route(1, 2), synth::Op::Reduce, after);  // {0,1} into 2: all
  const std::vector<synth::TransferId> done{to2};
  a.add(0, 2, 0, route(2, 0), synth::Op::Copy, done);
  a.add(0, 2, 1, route(2, 1), synth::Op::Copy, done);
  synth::time(t, a);
  ASSERT_TRUE(synth::verify(t, a, {.lower_bound = false}).correct());
  const ChakraImport in = import_collective_graph(to_collective_graph(a, t), t, "war");
  ASSERT_EQ(in.problems.size(), 2u);
  for (const synth::ImportProblem& p : in.problems)
    EXPECT_EQ(p.kind, synth::ImportProblemKind::Unordered) << p.message;
  EXPECT_THAT(in.problems[0].message,
              HasSubstr("brings chunk 0 from rank 2 with nothing ordering"));
  EXPECT_THAT(in.problems[1].message,
              HasSubstr("brings chunk 0 from rank 1 with nothing ordering"));
  // Rank 2 sending its input instead reads no copy: only rank 0's hazard is left.
  std::vector<synth::TransferSpec> specs;
  for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(a.size()); ++id)
    specs.push_back(a.spec(id));
  specs[1].from_input = true;
  const ChakraImport input =
      import_collective_graph(to_collective_graph(synth::with_transfers(a, specs), t), t, "war");
  ASSERT_EQ(input.problems.size(), 1u);
  EXPECT_THAT(input.problems[0].message, HasSubstr("from rank 2"));
  EXPECT_TRUE(in.warnings.empty());
}

// A well-formed graph whose messages do not pair up, or whose nodes never run, is a wrong
// algorithm (`tenet verify` exit 3), not a bad file: each edit of a message ASTRA-sim pairs by
// (tag, source, destination, size) leaves an unpaired message, and what waits on it never runs.
TEST(Chakra, AnEditedMessageIsAnIncorrectAlgorithm) {
  const auto t = topo::generate("ring:4");
  const auto c = synth::Collective::over_all(t, CollectiveKind::AllGather);
  const Algorithm a = synth::make_baseline({synth::BaselineKind::Ring, {}}, t, c, kChunk);
  const std::vector<EtFile> files = to_collective_graph(a, t);
  auto first = [](std::vector<EtFile>& f, int r, ChakraProtoMsg::NodeType type) -> Node& {
    for (Node& n : f[static_cast<size_t>(r)].nodes)
      if (n.type() == type) return n;
    throw std::logic_error("no such node");
  };
  // The attribute `name` of `n` set to `value` (set_int adds one; the reader takes the first).
  auto edit = [](Node& n, const std::string& name, int64_t value) {
    const Node copy = n;
    n.clear_attr();
    set_int(n, name, value);
    for (const auto& attr : copy.attr())
      if (attr.name() != name) *n.add_attr() = attr;
  };
  struct Case {
    std::string what;
    std::function<void(std::vector<EtFile>&)> change;
    synth::ViolationKind kind;
    std::string says;
  };
  const auto send = ChakraProtoMsg::COMM_SEND_NODE, recv = ChakraProtoMsg::COMM_RECV_NODE;
  const std::vector<Case> cases{
      {"comm_dst to another rank", [&](auto& f) { edit(first(f, 0, send), "comm_dst", 2); },
       synth::ViolationKind::UnpairedMessage, "has no matching receive"},
      {"comm_dst to no rank", [&](auto& f) { edit(first(f, 0, send), "comm_dst", 100); },
       synth::ViolationKind::UnpairedMessage, "comm_dst 100 is not a rank (0..3)"},
      {"comm_size", [&](auto& f) { edit(first(f, 0, send), "comm_size", kChunk + 1); },
       synth::ViolationKind::UnpairedMessage, "pairs a send with a receive of the same size"},
      {"comm_tag", [&](auto& f) { edit(first(f, 0, send), "comm_tag", 123'456); },
       synth::ViolationKind::UnpairedMessage, "has no matching send"},
      {"comm_src", [&](auto& f) { edit(first(f, 1, recv), "comm_src", 3); },
       synth::ViolationKind::NeverReady, "never become ready"},
      {"a receive removed",
       [&](auto& f) {
         auto& nodes = f[1].nodes;
         nodes.erase(std::find_if(nodes.begin(), nodes.end(),
                                  [&](const Node& n) { return n.type() == recv; }));
       },
       synth::ViolationKind::NeverReady, "which is not in this file"},
  };
  for (const Case& k : cases) {
    std::vector<EtFile> changed = files;
    k.change(changed);
    ChakraImport in;
    ASSERT_NO_THROW(in = import_collective_graph(changed, t, "edited")) << k.what;
    synth::Report r = synth::verify(t, in.algorithm, {.lower_bound = false});
    synth::add_import_problems(r, in.problems);
    EXPECT_FALSE(r.correct()) << k.what;
    EXPECT_GT(r.counts[static_cast<int>(k.kind)], 0u) << k.what;
    std::string all;
    for (const synth::ImportProblem& p : in.problems) all += p.message + "\n";
    EXPECT_THAT(all, HasSubstr(k.says)) << k.what;
  }
  // The order the sends carry (tenet_transfer) only breaks ties between transfers the graph leaves
  // unordered: shifted, the same algorithm comes back; reversed, the dependencies still order the
  // transfers (none dropped, so it stays correct), though links now serve them in another order.
  auto reorder = [&](const std::function<int64_t(int64_t)>& f) {
    std::vector<EtFile> changed = files;
    for (EtFile& file : changed)
      for (Node& n : file.nodes)
        if (auto order = int_attr(n, "tenet_transfer")) edit(n, "tenet_transfer", f(*order));
    ChakraImport in = import_collective_graph(changed, t, "reordered");
    EXPECT_TRUE(in.problems.empty()) << in.problems.front().message;
    return std::move(in.algorithm);
  };
  expect_same_outcome(t, a, reorder([](int64_t k) { return 1000 + 3 * k; }), "shifted");
  const Algorithm reversed = reorder([&](int64_t k) { return static_cast<int64_t>(a.size()) - k; });
  EXPECT_EQ(reversed.size(), a.size());
  EXPECT_TRUE(synth::verify(t, reversed, {.lower_bound = false}).correct());
}

TEST(Chakra, AttributeTypesFollowTheConvention) {
  const auto t = topo::generate("ring:4");
  const Algorithm a =
      synth::synthesize(t, synth::Collective::over_all(t, CollectiveKind::AllReduce), kChunk);
  auto type_of = [](const Node& n, const std::string& name) {
    for (const auto& at : n.attr())
      if (at.name() == name) return at.value_case();
    return ChakraProtoMsg::AttributeProto::VALUE_NOT_SET;
  };
  size_t sends = 0, comps = 0;
  for (const EtFile& f : to_collective_graph(a, t))
    for (const Node& n : f.nodes) {
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) {
        ++sends;
        EXPECT_EQ(type_of(n, "comm_dst"), ChakraProtoMsg::AttributeProto::kInt32Val);
        EXPECT_EQ(type_of(n, "comm_tag"), ChakraProtoMsg::AttributeProto::kInt32Val);
        EXPECT_EQ(type_of(n, "comm_size"), ChakraProtoMsg::AttributeProto::kInt64Val);
      }
      if (n.type() == ChakraProtoMsg::COMM_RECV_NODE) {
        EXPECT_EQ(type_of(n, "comm_src"), ChakraProtoMsg::AttributeProto::kInt32Val);
      }
      comps += n.type() == ChakraProtoMsg::COMP_NODE;
    }
  EXPECT_GT(sends, 0u);
  EXPECT_EQ(comps,
            0u);  // --reduce-bw 0: reductions take no time, and ASTRA-sim would charge 1 ns each
  size_t with_bandwidth = 0;
  synth::Algorithm reducing = a;
  synth::set_reduce_bandwidth(t, reducing, 500'000'000'000);
  for (const EtFile& f : to_collective_graph(reducing, t))
    for (const Node& n : f.nodes)
      if (n.type() == ChakraProtoMsg::COMP_NODE) {
        ++with_bandwidth;
        EXPECT_EQ(type_of(n, "num_ops"), ChakraProtoMsg::AttributeProto::kInt64Val);
        EXPECT_EQ(type_of(n, "tensor_size"), ChakraProtoMsg::AttributeProto::kUint64Val);
      }
  EXPECT_GT(with_bandwidth, 0u);
}

TEST(Chakra, RefusesWhatItCannotExpress) {
  const auto t = topo::generate("line:3");
  synth::Collective c = synth::Collective::over_all(t, CollectiveKind::Broadcast);
  c.ranks = {0, 2};  // npu1 relays but is no rank
  const Algorithm a = synth::synthesize(t, c, kChunk);
  EXPECT_THAT([&] { to_collective_graph(a, t); },
              ::testing::ThrowsMessage<Error>(HasSubstr("is not a rank")));
}

// Crafted graphs: each breaks one rule and the checker names it.
EtFile one_send(uint64_t tag, uint64_t size, uint64_t dst) {
  EtFile f;
  f.metadata.set_version("0.0.4");
  Node& n = f.nodes.emplace_back();
  n.set_id(0);
  n.set_type(ChakraProtoMsg::COMM_SEND_NODE);
  set_int(n, "comm_dst", dst);
  set_int(n, "comm_size", size);
  set_int(n, "comm_tag", tag);
  return f;
}
EtFile one_recv(uint64_t tag, uint64_t size, uint64_t src) {
  EtFile f;
  f.metadata.set_version("0.0.4");
  Node& n = f.nodes.emplace_back();
  n.set_id(0);
  n.set_type(ChakraProtoMsg::COMM_RECV_NODE);
  set_int(n, "comm_src", src);
  set_int(n, "comm_size", size);
  set_int(n, "comm_tag", tag);
  return f;
}

TEST(ChakraCheck, CatchesEveryRule) {
  auto problems = [](std::vector<EtFile> files) {
    std::string all;
    for (const std::string& p : check_collective_graph(files, "g")) all += p + "\n";
    return all;
  };
  EXPECT_EQ(problems({one_send(5, 64, 1), one_recv(5, 64, 0)}), "");
  EXPECT_THAT(problems({one_send(5, 64, 1), one_recv(5, 32, 0)}),
              HasSubstr("sends 64 bytes to rank 1 (tag 5), but g.1.et node 0 expects 32"));
  EXPECT_THAT(problems({one_send(5, 64, 1), one_recv(6, 64, 0)}),
              HasSubstr("has no matching receive"));
  EXPECT_THAT(problems({one_send(5, 64, 1), one_recv(6, 64, 0)}),
              HasSubstr("has no matching send"));
  EXPECT_THAT(problems({one_send(5, 64, 7), one_recv(5, 64, 0)}),
              HasSubstr("comm_dst 7 is not a rank"));
  EXPECT_THAT(problems({one_send(600'000'000, 64, 1), one_recv(600'000'000, 64, 0)}),
              HasSubstr("outside [0, 500,000,000)"));
  EtFile dup = one_send(5, 64, 1);
  dup.nodes.push_back(dup.nodes[0]);
  EXPECT_THAT(problems({dup, one_recv(5, 64, 0)}), HasSubstr("node id 0 is used twice"));
  EtFile dangling = one_send(5, 64, 1);
  dangling.nodes[0].add_data_deps(42);
  EXPECT_THAT(problems({dangling, one_recv(5, 64, 0)}),
              HasSubstr("depends on node 42, which is not in this file"));
  EtFile cycle = one_send(5, 64, 1);
  Node& second = cycle.nodes.emplace_back(cycle.nodes[0]);
  second.set_id(1);
  cycle.nodes[0].add_ctrl_deps(1);
  second.add_ctrl_deps(0);
  EXPECT_THAT(problems({cycle, one_recv(5, 64, 0)}), HasSubstr("form a cycle"));
  // Across ranks: each rank sends only after it has received what the other sends after it.
  EtFile wait0 = one_send(5, 64, 1), wait1 = one_send(6, 64, 0);
  wait0.nodes.push_back(one_recv(6, 64, 1).nodes[0]);
  wait1.nodes.push_back(one_recv(5, 64, 0).nodes[0]);
  for (EtFile* f : {&wait0, &wait1}) {
    f->nodes[1].set_id(1);
    f->nodes[0].add_data_deps(1);
  }
  EXPECT_THAT(problems({wait0, wait1}), HasSubstr("4 nodes in or after a cycle"));
  EtFile bare = one_send(5, 64, 1);
  bare.nodes[0].clear_attr();
  EXPECT_THAT(problems({bare, one_recv(5, 64, 0)}),
              HasSubstr("COMM_SEND_NODE needs the attribute comm_dst"));
  EtFile comp;
  comp.nodes.emplace_back().set_type(ChakraProtoMsg::COMP_NODE);
  EXPECT_THAT(problems({comp}), HasSubstr("COMP_NODE needs the attribute num_ops"));
}

// Outputs whole (issue 23): a folder mixing the ranks of two exports is refused, and a smaller
// export removes the ranks a larger one left behind.
TEST(ChakraFiles, ExportsNameTheirSetAndReplaceEarlierOnes) {
  topo::testing::TempDir dir;
  const auto t8 = topo::generate("ring:8");
  const Algorithm one =
      synth::synthesize(t8, synth::Collective::over_all(t8, CollectiveKind::AllGather, 1), kChunk);
  const Algorithm two =
      synth::synthesize(t8, synth::Collective::over_all(t8, CollectiveKind::AllGather, 2), kChunk);
  const std::string out = dir.file("out"), prefix = out + "/g";
  write_collective_graph(one, t8, out, "g");
  EXPECT_TRUE(check_collective_graph(read_prefix(prefix), prefix).empty());
  const auto first = read_prefix(prefix);
  write_collective_graph(two, t8, out, "g");  // the same export twice names the same set
  write_et(et_path(prefix, 3), first[3]);  // rank 3 of the earlier export: what a killed run leaves
  const auto problems = check_collective_graph(read_prefix(prefix), prefix);
  ASSERT_FALSE(problems.empty());  // and the pairing problems it causes
  EXPECT_THAT(problems[0], HasSubstr("g.3.et: from another export than rank 0"));
  EXPECT_THAT([&] { from_collective_graph(read_prefix(prefix), t8, prefix); },
              ::testing::ThrowsMessage<Error>(HasSubstr("a folder mixing two runs")));
  write_collective_graph(one, t8, out, "g");
  EXPECT_EQ(meta_string_for_test(read_prefix(prefix)[0]),
            meta_string_for_test(first[0]));  // deterministic
  // A 4-rank export over the 8-rank one: ranks 4..7 are gone, the set reads whole.
  const auto t4 = topo::generate("ring:4");
  write_collective_graph(
      synth::synthesize(t4, synth::Collective::over_all(t4, CollectiveKind::AllGather, 1), kChunk),
      t4, out, "g");
  EXPECT_EQ(read_prefix(prefix).size(), 4u);
  EXPECT_FALSE(std::filesystem::exists(et_path(prefix, 4)));
  EXPECT_TRUE(check_collective_graph(read_prefix(prefix), prefix).empty());
}

TEST(ChakraFiles, MalformedInputsGiveClearErrors) {
  topo::testing::TempDir dir;
  const auto t = topo::generate("ring:4");
  const Algorithm a =
      synth::synthesize(t, synth::Collective::over_all(t, CollectiveKind::AllGather), kChunk);
  const auto files = to_collective_graph(a, t);
  const std::string good = dir.file("good.0.et");
  write_et(good, files[0]);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto write = [&](const std::string& name, const std::string& data) {
    std::ofstream(dir.file(name), std::ios::binary) << data;
    return dir.file(name);
  };
  EXPECT_THAT([&] { read_et(write("cut.0.et", bytes.substr(0, bytes.size() - 3))); },
              ::testing::ThrowsMessage<Error>(HasSubstr("truncated or corrupt")));
  EXPECT_THAT([&] { read_et(write("empty.0.et", "")); },
              ::testing::ThrowsMessage<Error>(HasSubstr("empty file")));
  // A node whose first tag has wire type 7, which does not exist. (The metadata's length prefix is
  // a varint: decoded, not taken from one byte.)
  size_t length = 0, head = 0;  // the GlobalMetadata's length prefix, a varint
  for (int shift = 0; static_cast<unsigned char>(bytes[head]) & 0x80; shift += 7, ++head)
    length |= static_cast<size_t>(bytes[head] & 0x7f) << shift;
  length |= static_cast<size_t>(bytes[head] & 0x7f) << (7 * head);
  std::string bad_type = bytes.substr(0, head + 1 + length) + std::string{2, 0x0f, 0x01};
  EXPECT_THAT([&] { read_et(write("types.0.et", bad_type)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("cannot read node")));
  EXPECT_THAT([&] { read_prefix(dir.file("nothing")); },
              ::testing::ThrowsMessage<Error>(HasSubstr("no Chakra ET files")));
  // A rank's file missing in the middle of a set: not a smaller set.
  write_et(dir.file("gap.0.et"), files[0]);
  write_et(dir.file("gap.1.et"), files[1]);
  write_et(dir.file("gap.3.et"), files[3]);
  EXPECT_THAT([&] { read_prefix(dir.file("gap")); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("gap.2.et is missing, but " + dir.file("gap.3.et") + " is there")));
  // A graph from another producer: its structure can be checked, but not which data moves.
  EtFile foreign0 = one_send(1, 64, 1), foreign1 = one_recv(1, 64, 0);
  write_et(dir.file("foreign.0.et"), foreign0);
  write_et(dir.file("foreign.1.et"), foreign1);
  EXPECT_THAT([&] { from_collective_graph(read_prefix(dir.file("foreign")), t, "foreign"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("carries no chunk identities")));
  EXPECT_THAT(dump_json(files[0]), HasSubstr("\"comm_dst\""));
  EXPECT_THAT(to_dot(files[0]), HasSubstr("COMM_SEND_NODE"));
}

}  // namespace
}  // namespace tenet::chakra
