// Algorithms that name ranks, nodes, chunks or links their topology lacks
// (synth/ir/references.hpp): refused where an algorithm is read against its topology, whatever its
// format, with the field named, before anything is sized by them; the verifier reports the same
// references as violations.
#include "synth/ir/references.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "chakra/algorithm_files.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/verify/verify.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

const std::string kTopology = "ring:4,bidir=false";  // 4 NPUs, 4 links

// examples/algorithms/ring-allgather-4.json with `edit` applied.
std::string edited(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(topo::read_file(
      std::string(TENET_SOURCE_DIR) + "/examples/algorithms/ring-allgather-4.json"));
  edit(j);
  return j.dump();
}

// A two-rank All-Gather's one transfer, chunk 0 from NPU 0 to NPU 1 over link 0.
void two_ranks(nlohmann::json& j, nlohmann::json ranks) {
  j["collective"]["ranks"] = std::move(ranks);
  j["collective_time_ps"] = nullptr;
  j["transfers"] = nlohmann::json::array({{{"id", 0},
                                           {"chunk", 0},
                                           {"src", 0},
                                           {"dst", 1},
                                           {"route", {0}},
                                           {"deps", nlohmann::json::array()}}});
}

std::string refusal(const Algorithm& a, const topo::Topology& t) {
  try {
    check_references(a, t, "a.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(AlgorithmReferences, EveryNamedThingMustBeOnTheTopology) {
  const topo::Topology t = topo::generate(kTopology);
  const std::string original = edited([](nlohmann::json&) {});
  EXPECT_EQ(refusal(parse_algorithm_json(original), t), "no error");

  // A rank past every NPU: a sender's table sized by it took 8 GiB (MSCCL-XML) or crashed
  // (Chakra).
  EXPECT_EQ(refusal(parse_algorithm_json(edited([](nlohmann::json& j) {
                      two_ranks(j, {0, 2147483647});
                    })),
                    t),
            "a.json: collective: the collective is not valid on this topology: rank 1 is node "
            "2147483647, which is not an NPU of the topology (4 NPUs)");
  // A rank the JSON writer passed on as a node id, which the verifier called INCORRECT.
  EXPECT_EQ(refusal(parse_algorithm_json(edited([](nlohmann::json& j) {
                      j["collective"]["ranks"] = {0, 1, 2, 100};
                    })),
                    t),
            "a.json: collective: the collective is not valid on this topology: rank 3 is node 100, "
            "which is not an NPU of the topology (4 NPUs)");
  // A transfer's destination, and a route's link, past the topology's.
  EXPECT_EQ(refusal(parse_algorithm_json(edited(
                        [](nlohmann::json& j) { j["transfers"][0]["dst"] = 1'000'000'000; })),
                    t),
            "a.json: transfers[0].dst: node 1000000000 does not exist (the topology has 4 nodes)");
  EXPECT_EQ(refusal(parse_algorithm_json(
                        edited([](nlohmann::json& j) { j["transfers"][5]["route"] = {99}; })),
                    t),
            "a.json: transfers[5].route[0]: link 99 does not exist (the topology has 4 links)");
}

// The one reader every command that reads an algorithm against a topology uses (export, sim):
// the check runs there for every format, the file named.
TEST(AlgorithmReferences, ReadingAgainstATopologyRefusesThem) {
  const topo::Topology t = topo::generate(kTopology);
  topo::testing::TempDir dir;
  const std::string path = dir.file("far.json");
  topo::write_file_atomically(
      path, edited([](nlohmann::json& j) { j["transfers"][0]["src"] = 1'000'000'000; }));
  try {
    chakra::load_any_algorithm(path, t);
    ADD_FAILURE() << "an algorithm naming node 1000000000 of 4 was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path +
                                         ": transfers[0].src: node 1000000000 does not exist "
                                         "(the topology has 4 nodes)");
  }
  // A file made for four NPUs, read against three.
  const std::string good = dir.file("good.json");
  topo::write_file_atomically(good, edited([](nlohmann::json&) {}));
  EXPECT_EQ(chakra::load_any_algorithm(good, t).size(), 12u);
  EXPECT_THROW(chakra::load_any_algorithm(good, topo::generate("ring:3,bidir=false")), Error);
}

// The verifier reports the same references (one check, synth/ir/references.hpp): the collective,
// a transfer's node as a bad reference, a route's link as a broken route.
TEST(AlgorithmReferences, TheVerifierReportsThemAsViolations) {
  const topo::Topology t = topo::generate(kTopology);
  auto count = [&](const std::function<void(nlohmann::json&)>& edit, ViolationKind kind) {
    const Report r = verify(t, parse_algorithm_json(edited(edit)), {.lower_bound = false});
    EXPECT_FALSE(r.correct());
    return r.count(kind);
  };
  EXPECT_EQ(count(
                [](nlohmann::json& j) {
                  two_ranks(j, {0, 2147483647});
                },
                ViolationKind::BadReference),
            1u);
  EXPECT_EQ(count([](nlohmann::json& j) { j["transfers"][0]["dst"] = 1'000'000'000; },
                  ViolationKind::BadReference),
            1u);
  EXPECT_EQ(count([](nlohmann::json& j) { j["transfers"][5]["route"] = {99}; },
                  ViolationKind::BrokenRoute),
            1u);
}

}  // namespace
}  // namespace tenet::synth
