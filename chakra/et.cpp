#include "chakra/et.hpp"

#include <fcntl.h>
#include <fmt/format.h>

// Boost's adjacency_list edge iterator trips GCC 12's -Wmaybe-uninitialized when inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <charconv>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"
#include "topo/no_follow.hpp"
#include "topo/output_folder.hpp"

namespace tenet::chakra {

std::string et_path(const std::string& prefix, int rank) {
  return fmt::format("{}.{}.et", prefix, rank);
}

namespace {

EtFile parse_stream(google::protobuf::io::ZeroCopyInputStream& stream, const std::string& path) {
  EtFile f;
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&f.metadata, &stream, &clean_eof))
    throw Error(clean_eof
                    ? "empty file: expected a GlobalMetadata message and nodes"
                    : "cannot read the GlobalMetadata message (truncated, or not a Chakra ET file)",
                {path});
  for (;;) {
    Node& n = f.nodes.emplace_back();  // parsed in place, on the file's arena
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &stream, &clean_eof)) {
      f.nodes.erase(f.nodes.begin() + static_cast<std::ptrdiff_t>(f.nodes.size() - 1));
      if (clean_eof) break;
      throw Error(
          fmt::format(
              "cannot read node message #{} (truncated or corrupt; {} nodes read before it)",
              f.nodes.size(), f.nodes.size()),
          {path});
    }
    // Every node has a type and a name; an empty message (a run of zero bytes, `/dev/zero`) is
    // none, and would otherwise repeat without end.
    if (n.ByteSizeLong() == 0)
      throw Error(fmt::format("node message #{} is empty: not a Chakra ET node (is this a Chakra "
                              "ET file?)",
                              f.nodes.size() - 1),
                  {path});
  }
  return f;
}

}  // namespace

EtFile read_et(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open Chakra ET file (does it exist?)", {path});
  google::protobuf::io::IstreamInputStream file(&in);
  // A pipe or a device is read up to the stream limit (a regular file ends where it is sized).
  std::error_code ec;
  google::protobuf::io::LimitingInputStream stream(&file, std::filesystem::is_regular_file(path, ec)
                                                              ? std::numeric_limits<int64_t>::max()
                                                              : topo::kMaxStreamBytes);
  return parse_stream(stream, path);
}

EtFile parse_et(std::string_view bytes, const std::string& path) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw Error("an in-memory Chakra ET file is limited to 2 GiB; read it from a file", {path});
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  return parse_stream(stream, path);
}

std::string serialize_et(const EtFile& file, const std::string& path) {
  EtWriter out(path);
  out.metadata(file.metadata);
  for (const Node& n : file.nodes) out.node(n);
  return std::move(out).bytes();
}

EtWriter::EtWriter(std::string path) : path_(std::move(path)) {}

void EtWriter::metadata(const ChakraProtoMsg::GlobalMetadata& m) {
  if (!append(m)) throw Error("cannot serialize the GlobalMetadata message (over 2 GiB)", {path_});
}

void EtWriter::node(const Node& n) {
  if (!append(n))
    throw Error(fmt::format("cannot serialize node {} (over 2 GiB)", n.id()), {path_});
}

void EtWriter::node(NodeEncoder& encoded) { encoded.finish(bytes_); }

bool EtWriter::append(const google::protobuf::MessageLite& m) {
  // Length-delimited as google::protobuf::util::SerializeDelimitedToOstream writes it (the size as
  // a varint, then the message), straight into the buffer.
  const size_t size = m.ByteSizeLong();
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
  const size_t at = bytes_.size();
  const size_t head =
      google::protobuf::io::CodedOutputStream::VarintSize32(static_cast<uint32_t>(size));
  bytes_.resize(at + head + size);
  auto* p = reinterpret_cast<uint8_t*>(bytes_.data() + at);
  p = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(size), p);
  m.SerializeWithCachedSizesToArray(p);
  return true;
}

void write_et(const std::string& path, const EtFile& file) {
  topo::write_file_atomically(path, serialize_et(file, path));
}

namespace {
// The rank of a file named `name` in the set whose files are `stem`<rank>.et (stem ends with a
// dot), written as et_path writes it; nothing for any other name.
std::optional<int> rank_of_name(std::string_view name, const std::string& stem) {
  if (!name.starts_with(stem) || !name.ends_with(".et")) return std::nullopt;
  const std::string_view digits = name.substr(stem.size(), name.size() - stem.size() - 3);
  int r = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() ||
      et_path("", r) != "." + std::string(digits) + ".et")
    return std::nullopt;
  return r;
}

// Ranks from `from` up that an earlier, larger set left under `prefix` go at the commit (found
// then, under the folder's lock, so a set committed meanwhile by another run counts too).
void remove_higher_ranks(topo::OutputFolder& out, const std::string& prefix, int from) {
  const std::filesystem::path p(prefix);
  const std::string stem = p.filename().string() + ".";
  out.remove_matching_at_commit(p.parent_path().string(), [stem, from](std::string_view name) {
    const auto r = rank_of_name(name, stem);
    return r && *r >= from;
  });
}
}  // namespace

void stage_et_set(int ranks, const std::function<std::string(int)>& rank, topo::OutputFolder& out,
                  const std::string& prefix) {
  // Ranks are built and serialized on every core (a 1024-NPU export is two million nodes), a few
  // ahead of this thread, which stages them in rank order (OutputFolder is not shared).
  const int threads =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::max(1, ranks));
  const int ahead = 2 * threads;  // serialized ranks waiting to be written, at most
  std::vector<std::optional<std::string>> bytes(static_cast<size_t>(ranks));
  std::mutex m;
  std::condition_variable cv;
  int next = 0, written = 0;
  std::exception_ptr error;
  auto work = [&] {
    for (;;) {
      int r;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return next >= ranks || error || next < written + ahead; });
        if (next >= ranks || error) return;
        r = next++;
      }
      try {
        std::string b = rank(r);
        const std::lock_guard lock(m);
        bytes[r] = std::move(b);
      } catch (...) {
        const std::lock_guard lock(m);
        if (!error) error = std::current_exception();
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  try {  // a thread that cannot start is an error like any other: the started ones are joined
    for (int i = 0; i < threads; ++i) pool.emplace_back(work);
    for (int r = 0; r < ranks; ++r) {
      std::string b;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return bytes[r].has_value() || error; });
        if (error) break;
        b = std::move(*bytes[r]);
        bytes[r].reset();
      }
      topo::write_file_atomically(out.stage(et_path(prefix, r)), b);
      {
        const std::lock_guard lock(m);
        written = r + 1;
      }
      cv.notify_all();
    }
  } catch (...) {
    const std::lock_guard lock(m);
    if (!error) error = std::current_exception();
  }
  cv.notify_all();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  remove_higher_ranks(out, prefix, ranks);
}

void stage_et_set(const std::vector<EtFile>& files, topo::OutputFolder& out,
                  const std::string& prefix) {
  for (size_t r = 0; r < files.size(); ++r)
    write_et(out.stage(et_path(prefix, static_cast<int>(r))), files[r]);
  remove_higher_ranks(out, prefix, static_cast<int>(files.size()));
}

bool is_prefix(const std::string& prefix) {
  std::error_code ec;
  return std::filesystem::exists(et_path(prefix, 0), ec);
}

std::vector<EtFile> read_prefix(const std::string& prefix) {
  // Every rank of one commit (topo/output_folder.hpp): no Tenet export replaces ranks meanwhile.
  const std::string folder = std::filesystem::path(prefix).parent_path().string();
  topo::FolderReadLock lock(folder.empty() ? "." : folder, topo::FolderRead::Set);
  // The ranks' files are found, not named one by one: each is read from the folder the user named
  // without following a link, and only where it is a regular file (a FIFO would hold the read for
  // ever, a link read what it names, outside the folder).
  // (No folder: no files, said below with the name expected.)
  const topo::no_follow::Fd dir(
      ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::vector<EtFile> files;
  for (int r = 0; dir; ++r) {
    const std::string path = et_path(prefix, r);
    const topo::no_follow::Fd file = topo::no_follow::open_file_at(
        dir.get(), std::filesystem::path(path).filename().string(), path);
    if (!file) break;
    google::protobuf::io::FileInputStream stream(file.get());  // (streamed: a rank may be GBs)
    files.push_back(parse_stream(stream, path));
  }
  if (files.empty())
    throw Error(fmt::format("no Chakra ET files: expected {} (and .1.et, ...)", et_path(prefix, 0)),
                {prefix});
  // A rank's file missing in the middle would silently make a smaller set.
  const int ranks = static_cast<int>(files.size());
  std::optional<int> beyond;
  std::error_code ec;
  const std::string stem = std::filesystem::path(prefix).filename().string() + ".";
  for (std::filesystem::directory_iterator it(folder.empty() ? "." : folder, ec), end;
       !ec && it != end; it.increment(ec))
    if (const auto r = rank_of_name(it->path().filename().string(), stem); r && *r > ranks)
      beyond = std::min(*r, beyond.value_or(*r));
  if (beyond)
    throw Error(fmt::format("{} is missing, but {} is there: a set of ET files numbers its ranks "
                            "from 0 without a gap (restore rank {}'s file, or remove the higher "
                            "ranks)",
                            et_path(prefix, ranks), et_path(prefix, *beyond), ranks),
                {prefix});
  return files;
}

std::optional<int64_t> int_value(const ChakraProtoMsg::AttributeProto& a) {
  switch (a.value_case()) {
    case ChakraProtoMsg::AttributeProto::kInt32Val:
      return a.int32_val();
    case ChakraProtoMsg::AttributeProto::kInt64Val:
      return a.int64_val();
    case ChakraProtoMsg::AttributeProto::kUint32Val:
      return a.uint32_val();
    case ChakraProtoMsg::AttributeProto::kUint64Val:
      return static_cast<int64_t>(a.uint64_val());
    case ChakraProtoMsg::AttributeProto::kSint32Val:
      return a.sint32_val();
    case ChakraProtoMsg::AttributeProto::kSint64Val:
      return a.sint64_val();
    case ChakraProtoMsg::AttributeProto::kFixed32Val:
      return a.fixed32_val();
    case ChakraProtoMsg::AttributeProto::kFixed64Val:
      return static_cast<int64_t>(a.fixed64_val());
    case ChakraProtoMsg::AttributeProto::kSfixed32Val:
      return a.sfixed32_val();
    case ChakraProtoMsg::AttributeProto::kSfixed64Val:
      return a.sfixed64_val();
    case ChakraProtoMsg::AttributeProto::kBoolVal:
      return a.bool_val() ? 1 : 0;
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> int_attr(const Node& n, std::string_view name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return int_value(a);
  return std::nullopt;
}

std::optional<std::string> string_attr(const Node& n, std::string_view name) {
  for (const auto& a : n.attr())
    if (a.name() == name && a.value_case() == ChakraProtoMsg::AttributeProto::kStringVal)
      return a.string_val();
  return std::nullopt;
}

bool has_attr(const Node& n, std::string_view name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return true;
  return false;
}

IntField int_field_of(std::string_view name) {
  if (name == "comm_src" || name == "comm_dst" || name == "comm_tag" || name == "comm_priority")
    return IntField::Int32;
  return name == "tensor_size" ? IntField::Uint64 : IntField::Int64;
}

namespace {
void check_int32(std::string_view name, int64_t value) {
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max())
    throw Error(fmt::format("{} {} does not fit Chakra's int32 attribute", name, value));
}
}  // namespace

void set_int(Node& n, std::string_view name, int64_t value) {
  auto* a = n.add_attr();
  a->set_name(name.data(), name.size());
  switch (int_field_of(name)) {
    case IntField::Int32:
      check_int32(name, value);
      a->set_int32_val(static_cast<int32_t>(value));
      break;
    case IntField::Uint64:
      a->set_uint64_val(static_cast<uint64_t>(value));
      break;
    case IntField::Int64:
      a->set_int64_val(value);
      break;
  }
}

namespace {
using google::protobuf::internal::WireFormatLite;
using Coded = google::protobuf::io::CodedOutputStream;

void put_varint(std::string& s, uint64_t v) {
  uint8_t buffer[10];
  const uint8_t* end = Coded::WriteVarint64ToArray(v, buffer);
  s.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(end - buffer));
}
void put_tag(std::string& s, int field, WireFormatLite::WireType type) {
  put_varint(s, WireFormatLite::MakeTag(field, type));
}
void put_bytes(std::string& s, int field, std::string_view bytes) {  // length-delimited
  put_tag(s, field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  put_varint(s, bytes.size());
  s.append(bytes);
}
void put_int(std::string& s, int field,
             uint64_t v) {  // a varint field (int32 and enums sign-extended)
  put_tag(s, field, WireFormatLite::WIRETYPE_VARINT);
  put_varint(s, v);
}
}  // namespace

void NodeEncoder::start(uint64_t id, std::string_view name, ChakraProtoMsg::NodeType type) {
  id_ = id, type_ = type, duration_ = 0;
  name_.assign(name);
  attrs_.clear(), deps_.clear();
}

void NodeEncoder::attr(std::string_view name, int64_t value) {
  body_.clear();
  if (!name.empty()) put_bytes(body_, ChakraProtoMsg::AttributeProto::kNameFieldNumber, name);
  switch (int_field_of(name)) {  // a oneof member: written even when 0
    case IntField::Int32:
      check_int32(name, value);
      put_int(body_, ChakraProtoMsg::AttributeProto::kInt32ValFieldNumber,
              static_cast<uint64_t>(value));
      break;
    case IntField::Uint64:
      put_int(body_, ChakraProtoMsg::AttributeProto::kUint64ValFieldNumber,
              static_cast<uint64_t>(value));
      break;
    case IntField::Int64:
      put_int(body_, ChakraProtoMsg::AttributeProto::kInt64ValFieldNumber,
              static_cast<uint64_t>(value));
      break;
  }
  put_bytes(attrs_, ChakraProtoMsg::Node::kAttrFieldNumber, body_);
}

void NodeEncoder::attr(std::string_view name, std::string_view value) {
  body_.clear();
  if (!name.empty()) put_bytes(body_, ChakraProtoMsg::AttributeProto::kNameFieldNumber, name);
  put_bytes(body_, ChakraProtoMsg::AttributeProto::kStringValFieldNumber, value);
  put_bytes(attrs_, ChakraProtoMsg::Node::kAttrFieldNumber, body_);
}

void NodeEncoder::finish(std::string& out) {
  // Node's fields in number order, each only when set (proto3), as its serializer writes them.
  body_.clear();
  if (id_ != 0) put_int(body_, ChakraProtoMsg::Node::kIdFieldNumber, id_);
  if (!name_.empty()) put_bytes(body_, ChakraProtoMsg::Node::kNameFieldNumber, name_);
  if (type_ != 0)
    put_int(body_, ChakraProtoMsg::Node::kTypeFieldNumber,
            static_cast<uint64_t>(static_cast<int64_t>(type_)));
  if (!deps_.empty()) {  // packed
    size_t size = 0;
    for (uint64_t d : deps_) size += Coded::VarintSize64(d);
    put_tag(body_, ChakraProtoMsg::Node::kDataDepsFieldNumber,
            WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    put_varint(body_, size);
    for (uint64_t d : deps_) put_varint(body_, d);
  }
  if (duration_ != 0) put_int(body_, ChakraProtoMsg::Node::kDurationMicrosFieldNumber, duration_);
  body_ += attrs_;
  put_varint(out, body_.size());
  out += body_;
}

void set_string(ChakraProtoMsg::AttributeProto* a, std::string_view name, std::string_view value) {
  a->set_name(name.data(), name.size());
  a->set_string_val(value.data(), value.size());
}

std::string dump_json(const EtFile& file) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string meta, out = "{\n\"metadata\": ";
  (void)google::protobuf::util::MessageToJsonString(file.metadata, &meta, options);
  out += meta + ",\n\"nodes\": [\n";
  for (size_t i = 0; i < file.nodes.size(); ++i) {
    std::string node;
    (void)google::protobuf::util::MessageToJsonString(file.nodes[i], &node, options);
    out += (i ? ",\n" : "") + node;
  }
  out += "]\n}\n";
  return out;
}

std::string to_dot(const EtFile& file) {
  struct V {
    std::string label, shape;
  };
  struct E {
    std::string style;
  };
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, V, E>;
  G g;
  std::unordered_map<uint64_t, size_t> index;
  for (const Node& n : file.nodes) {
    std::string what = ChakraProtoMsg::NodeType_Name(n.type());
    if (auto d = int_attr(n, "comm_dst")) what += fmt::format(" to {}", *d);
    if (auto s = int_attr(n, "comm_src")) what += fmt::format(" from {}", *s);
    if (auto z = int_attr(n, "comm_size")) what += fmt::format(" {} B", *z);
    index[n.id()] = add_vertex(V{fmt::format("{}: {}\\n{}", n.id(), n.name(), what),
                                 n.type() == ChakraProtoMsg::COMP_NODE ? "box" : "ellipse"},
                               g);
  }
  for (const Node& n : file.nodes) {
    for (uint64_t d : n.data_deps())
      if (index.count(d)) add_edge(index[d], index[n.id()], E{"solid"}, g);
    for (uint64_t d : n.ctrl_deps())
      if (index.count(d)) add_edge(index[d], index[n.id()], E{"dashed"}, g);
  }
  std::ostringstream out;
  boost::dynamic_properties dp;
  dp.property("node_id", get(boost::vertex_index, g));
  dp.property("label", get(&V::label, g));
  dp.property("shape", get(&V::shape, g));
  dp.property("style", get(&E::style, g));
  boost::write_graphviz_dp(out, g, dp);
  return out.str();
}

}  // namespace tenet::chakra
