// The compiled Chakra schema speaks MLCommons Chakra's wire format: field numbers and types
// checked on raw bytes, and the length-delimited framing of .et files.
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include "chakra/et.hpp"
#include "et_def.pb.h"
#include "tests/topo/test_util.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/output_folder.hpp"

namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::GlobalMetadata;
using ChakraProtoMsg::Node;

TEST(ChakraSchema, WireTagsMatchTheReference) {
  Node n;
  n.set_id(5);
  n.set_type(ChakraProtoMsg::COMM_SEND_NODE);
  n.add_data_deps(3);
  AttributeProto* a = n.add_attr();
  a->set_name("comm_size");
  a->set_uint64_val(1024);
  const std::string bytes = n.SerializeAsString();
  // id = 1 (varint): tag 0x08; type = 3 (varint): tag 0x18; data_deps = 5 (packed): tag 0x2a;
  // attr = 10 (length-delimited): tag 0x52.
  const std::string want_prefix = {0x08, 0x05, 0x18, 0x05, 0x2a, 0x01, 0x03, 0x52};
  ASSERT_GE(bytes.size(), want_prefix.size());
  EXPECT_EQ(bytes.substr(0, want_prefix.size()), want_prefix);
  // Inside the attribute: name = 1 (tag 0x0a), uint64_val = 13 (varint, tag 0x68), 1024 = 0x80
  // 0x08.
  const std::string attr = bytes.substr(want_prefix.size() + 1);
  const std::string want_attr =
      std::string{0x0a, 0x09} + "comm_size" + std::string{0x68, char(0x80), 0x08};
  EXPECT_EQ(attr, want_attr);
}

TEST(ChakraSchema, EnumValuesMatchTheReference) {
  EXPECT_EQ(ChakraProtoMsg::COMM_COLL_NODE, 7);
  EXPECT_EQ(ChakraProtoMsg::COMP_NODE, 4);
  EXPECT_EQ(ChakraProtoMsg::REDUCE_SCATTER, 7);
  EXPECT_EQ(ChakraProtoMsg::ALL_TO_ALL, 6);
  EXPECT_EQ(ChakraProtoMsg::BARRIER, 9);
  AttributeProto a;
  a.mutable_bool_list()->add_values(true);
  EXPECT_EQ(a.SerializeAsString(),
            (std::string{char(0xe2), 0x01, 0x03, 0x0a, 0x01, 0x01}));  // field 28
}

TEST(ChakraSchema, DelimitedFileFramingRoundTrips) {
  std::stringstream file;
  GlobalMetadata meta;
  meta.set_version("0.0.4");
  ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(meta, &file));
  for (uint64_t id = 0; id < 3; ++id) {
    Node n;
    n.set_id(id);
    n.set_name("node" + std::to_string(id));
    n.set_type(ChakraProtoMsg::COMP_NODE);
    n.set_duration_micros(10 * id);
    ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(n, &file));
  }
  // The first byte is the varint length of the metadata message.
  EXPECT_EQ(static_cast<size_t>(file.str()[0]), meta.ByteSizeLong());
  google::protobuf::io::IstreamInputStream in(&file);
  GlobalMetadata read_meta;
  bool eof = false;
  ASSERT_TRUE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&read_meta, &in, &eof));
  EXPECT_EQ(read_meta.version(), "0.0.4");
  for (uint64_t id = 0; id < 3; ++id) {
    Node n;
    ASSERT_TRUE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &in, &eof));
    EXPECT_EQ(n.id(), id);
    EXPECT_EQ(n.duration_micros(), 10 * id);
  }
  Node extra;
  EXPECT_FALSE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&extra, &in, &eof));
  EXPECT_TRUE(eof);
}

// EtWriter (which the exports use) frames messages byte for byte as protobuf's own delimited writer
// does, for lengths of one varint byte and of several.
TEST(ChakraSchema, EtWriterWritesWhatProtobufsDelimitedWriterWrites) {
  std::ostringstream want;
  tenet::chakra::EtWriter got;
  GlobalMetadata meta;
  meta.set_version("0.0.4");
  ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(meta, &want));
  got.metadata(meta);
  for (const size_t name : {size_t{0}, size_t{5}, size_t{126}, size_t{200}, size_t{20000}}) {
    Node n;
    n.set_id(name);
    n.set_name(std::string(name, 'x'));
    for (uint64_t d = 0; d < name % 7; ++d) n.add_data_deps(d);
    tenet::chakra::set_int(n, "comm_size", static_cast<int64_t>(name) << 20);
    ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(n, &want));
    got.node(n);
  }
  EXPECT_EQ(std::move(got).bytes(), want.str());
}

// NodeEncoder writes what the Node message serializes to, field for field: zero and empty fields
// left out as proto3 leaves them, oneof values written even when 0, negative int32 values as
// ten-byte varints, long names and many dependencies (multi-byte lengths), attribute order kept.
TEST(ChakraSchema, NodeEncoderWritesWhatTheMessageSerializesTo) {
  struct Attr {
    std::string name;
    std::optional<int64_t> number;
    std::string text;
  };
  struct Case {
    uint64_t id;
    std::string name;
    ChakraProtoMsg::NodeType type;
    std::vector<uint64_t> deps;
    uint64_t micros;
    std::vector<Attr> attrs;
  };
  const std::vector<Case> cases = {
      {0, "", ChakraProtoMsg::INVALID_NODE, {}, 0, {}},
      {1,
       "send",
       ChakraProtoMsg::COMM_SEND_NODE,
       {0},
       0,
       {{"comm_dst", 0, ""},
        {"comm_tag", -5, ""},
        {"comm_size", int64_t{1} << 40, ""},
        {"tenet_route", std::nullopt, "3,17"}}},
      {uint64_t{1} << 40,
       std::string(300, 'n'),
       ChakraProtoMsg::COMP_NODE,
       {1, 127, 128, 16384, uint64_t{1} << 62},
       7,
       {{"tensor_size", int64_t{1} << 50, ""},
        {"num_ops", -1, ""},
        {"", 3, ""},
        {"empty", std::nullopt, ""}}},
  };
  for (const Case& c : cases) {
    Node n;
    n.set_id(c.id);
    n.set_name(c.name);
    n.set_type(c.type);
    tenet::chakra::NodeEncoder e;
    e.start(c.id, c.name, c.type);
    for (uint64_t d : c.deps) n.add_data_deps(d), e.data_dep(d);
    n.set_duration_micros(c.micros);
    e.duration_micros(c.micros);
    for (const Attr& a : c.attrs) {
      if (a.number) {
        tenet::chakra::set_int(n, a.name, *a.number);
        e.attr(a.name, *a.number);
      } else {
        tenet::chakra::set_string(n.add_attr(), a.name, a.text);
        e.attr(a.name, std::string_view(a.text));
      }
    }
    tenet::chakra::EtWriter want;
    want.node(n);
    std::string got;
    e.finish(got);
    EXPECT_EQ(got, std::move(want).bytes()) << c.name.substr(0, 10);
  }
  tenet::chakra::NodeEncoder e;
  e.start(0, "x", ChakraProtoMsg::COMM_SEND_NODE);
  EXPECT_THROW(e.attr("comm_tag", int64_t{1} << 31), tenet::Error);  // as set_int refuses it
}

}  // namespace

// chakra::NodeList (an ET's nodes on a protobuf arena): used like a vector of Node, its nodes never
// move, a copy is deep and independent, and files read back node for node.
namespace {

TEST(NodeList, BehavesLikeAVectorWhoseNodesStayPut) {
  tenet::chakra::EtFile f;
  Node& first = f.nodes.emplace_back();
  first.set_id(0);
  first.set_name("first");
  for (uint64_t i = 1; i < 1000; ++i) f.nodes.emplace_back().set_id(i);  // the pointer vector grows
  EXPECT_EQ(first.name(), "first");                                      // the node did not move
  Node& again = f.nodes.emplace_back(f.nodes[0]);                        // a copy of one of its own
  EXPECT_EQ(again.name(), "first");
  EXPECT_EQ(f.nodes.size(), 1001u);
  uint64_t sum = 0;
  for (const Node& n : f.nodes) sum += n.id();
  EXPECT_EQ(sum, 999u * 1000 / 2);
  tenet::chakra::EtFile copy = f;  // deep: its own arena
  copy.nodes[0].set_name("changed");
  EXPECT_EQ(f.nodes[0].name(), "first");
  f.nodes.erase(f.nodes.begin());
  EXPECT_EQ(f.nodes.size(), 1000u);
  EXPECT_EQ(f.nodes.at(0).id(), 1u);
  EXPECT_EQ(copy.nodes.size(), 1001u);
  tenet::chakra::EtFile moved = std::move(copy);
  EXPECT_EQ(moved.nodes[0].name(), "changed");
  EXPECT_TRUE(copy.nodes.empty());      // NOLINT(bugprone-use-after-move): moved from, empty
  copy.nodes.emplace_back().set_id(7);  // and usable again, on an arena of its own
  EXPECT_EQ(copy.nodes.back().id(), 7u);
  const auto back = tenet::chakra::parse_et(tenet::chakra::serialize_et(moved));
  ASSERT_EQ(back.nodes.size(), moved.nodes.size());
  EXPECT_EQ(back.nodes.back().name(), "first");
  EXPECT_TRUE(std::equal(back.nodes.begin(), back.nodes.end(), moved.nodes.begin(),
                         [](const Node& x, const Node& y) { return x.id() == y.id(); }));
}

// Ranks staged on every core land in rank order, each the file rank(r) makes; a rank that fails
// fails the set, and nothing is committed.
TEST(EtSet, StagedOnEveryCoreInRankOrder) {
  tenet::topo::testing::TempDir dir;
  auto rank_file = [](int r) {
    tenet::chakra::EtFile f;
    for (int i = 0; i <= r % 5; ++i) {
      Node& n = f.nodes.emplace_back();
      n.set_id(static_cast<uint64_t>(i));
      n.set_name("rank " + std::to_string(r));
    }
    return f;
  };
  {
    tenet::topo::OutputFolder out(dir.file("set"));
    tenet::chakra::stage_et_set(
        37, [&](int r) { return tenet::chakra::serialize_et(rank_file(r)); }, out, "algo");
    out.commit();
  }
  const auto files = tenet::chakra::read_prefix(dir.file("set/algo"));
  ASSERT_EQ(files.size(), 37u);
  for (int r = 0; r < 37; ++r) {
    ASSERT_EQ(files[static_cast<size_t>(r)].nodes.size(), static_cast<size_t>(r % 5 + 1));
    EXPECT_EQ(files[static_cast<size_t>(r)].nodes[0].name(), "rank " + std::to_string(r));
  }
  {
    tenet::topo::OutputFolder out(dir.file("failed"));
    EXPECT_THROW(tenet::chakra::stage_et_set(
                     40,
                     [&](int r) {
                       return r == 23 ? throw tenet::Error("rank 23 cannot be built")
                                      : tenet::chakra::serialize_et(rank_file(r));
                     },
                     out, "algo"),
                 tenet::Error);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("failed/algo.0.et")));
}

// A set's ranks are found, not named one by one: in a folder someone shared, a rank that is a
// link (to a file outside) is refused, naming it, and one that is a FIFO too, at once (it held
// the read for ever before); regular files are read as ever.
TEST(EtSet, RanksThatAreLinksOrFifosAreRefused) {
  tenet::topo::testing::TempDir dir;
  tenet::chakra::EtFile f;
  Node& n = f.nodes.emplace_back();
  n.set_id(1);
  n.set_name("rank 0");
  const std::string bytes = tenet::chakra::serialize_et(f);
  std::filesystem::create_directories(dir.file("set"));
  tenet::topo::write_file_atomically(dir.file("set/w.0.et"), bytes);
  tenet::topo::write_file_atomically(dir.file("outside.et"), bytes);
  EXPECT_EQ(tenet::chakra::read_prefix(dir.file("set/w")).size(), 1u);
  std::filesystem::create_symlink(dir.file("outside.et"), dir.file("set/w.1.et"));
  auto error_of = [&] {
    try {
      tenet::chakra::read_prefix(dir.file("set/w"));
    } catch (const tenet::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of().find("w.1.et: a symbolic link, not read"), std::string::npos) << error_of();
  std::filesystem::remove(dir.file("set/w.1.et"));
  ASSERT_EQ(::mkfifo(dir.file("set/w.1.et").c_str(), 0600), 0);
  EXPECT_NE(error_of().find("w.1.et: not a regular file, not read"), std::string::npos)
      << error_of();
}

}  // namespace
