// Chakra execution-trace files: one per rank, `<prefix>.<rank>.et`, a length-delimited
// GlobalMetadata followed by length-delimited Nodes, as Chakra's own reader and writer frame them.
#pragma once

#include <google/protobuf/arena.h>

#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "et_def.pb.h"
#include "topo/output_folder.hpp"

namespace tenet::chakra {

using ChakraProtoMsg::Node;

// A rank's nodes, on a protobuf arena of their own: a million nodes with their attributes are then
// a few large allocations, built and freed at once, instead of tens of millions of small ones (a
// 1M-transfer export spent most of its time in malloc and free). Used like a vector of Node.
class NodeList {
 public:
  template <class N, class Base>
  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Node;
    using difference_type = std::ptrdiff_t;
    using pointer = N*;
    using reference = N&;
    Iterator() = default;
    explicit Iterator(Base it) : it_(it) {}
    N& operator*() const { return **it_; }
    N* operator->() const { return *it_; }
    Iterator& operator++() { return ++it_, *this; }
    Iterator operator++(int) { return Iterator(it_++); }
    Iterator& operator+=(difference_type d) { return it_ += d, *this; }
    Iterator operator+(difference_type d) const { return Iterator(it_ + d); }
    difference_type operator-(const Iterator& o) const { return it_ - o.it_; }
    bool operator==(const Iterator& o) const { return it_ == o.it_; }
    bool operator!=(const Iterator& o) const { return it_ != o.it_; }
    Base base() const { return it_; }

   private:
    Base it_{};
  };
  using iterator = Iterator<Node, std::vector<Node*>::iterator>;
  using const_iterator = Iterator<const Node, std::vector<Node*>::const_iterator>;

  NodeList() : arena_(std::make_unique<google::protobuf::Arena>()) {}
  NodeList(const NodeList& other) : NodeList() {
    reserve(other.size());
    for (const Node& n : other) push_back(n);
  }
  NodeList& operator=(const NodeList& other) {
    if (this != &other) *this = NodeList(other);
    return *this;
  }
  NodeList(NodeList&& other) noexcept
      : arena_(std::move(other.arena_)), nodes_(std::exchange(other.nodes_, {})) {}
  NodeList& operator=(NodeList&& other) noexcept {
    arena_ = std::move(other.arena_);
    nodes_ = std::exchange(other.nodes_, {});
    return *this;
  }

  Node& emplace_back() {
    if (!arena_) arena_ = std::make_unique<google::protobuf::Arena>();  // moved from: a fresh arena
    nodes_.push_back(google::protobuf::Arena::CreateMessage<Node>(arena_.get()));
    return *nodes_.back();
  }
  Node& emplace_back(const Node& n) {
    return emplace_back() = n;
  }  // `n` may be one of ours: nodes never move
  void push_back(const Node& n) { emplace_back(n); }
  void reserve(size_t n) { nodes_.reserve(n); }
  size_t size() const { return nodes_.size(); }
  bool empty() const { return nodes_.empty(); }
  Node& operator[](size_t i) { return *nodes_[i]; }
  const Node& operator[](size_t i) const { return *nodes_[i]; }
  Node& at(size_t i) { return *nodes_.at(i); }
  const Node& at(size_t i) const { return *nodes_.at(i); }
  Node& back() { return *nodes_.back(); }
  const Node& back() const { return *nodes_.back(); }
  iterator begin() { return iterator(nodes_.begin()); }
  iterator end() { return iterator(nodes_.end()); }
  const_iterator begin() const { return const_iterator(nodes_.begin()); }
  const_iterator end() const { return const_iterator(nodes_.end()); }
  // Drops the node from the list (its memory goes with the arena).
  iterator erase(iterator at) { return iterator(nodes_.erase(at.base())); }

 private:
  std::unique_ptr<google::protobuf::Arena> arena_;
  std::vector<Node*> nodes_;  // on arena_
};

struct EtFile {
  ChakraProtoMsg::GlobalMetadata metadata;
  NodeList nodes;
};

std::string et_path(const std::string& prefix, int rank);
// Throws tenet::Error naming the file and the message that could not be read.
EtFile read_et(const std::string& path);
// The same from bytes in memory; `path` names them in errors.
EtFile parse_et(std::string_view bytes, const std::string& path = "<bytes>");
// A rank's ET file built message by message: the bytes write_et writes (each message
// length-delimited, serialized straight into one buffer).
class NodeEncoder;
class EtWriter {
 public:
  explicit EtWriter(std::string path = "<bytes>");  // names the file in errors
  void metadata(const ChakraProtoMsg::GlobalMetadata& m);
  void node(const Node& n);
  void node(NodeEncoder& encoded);  // the node `encoded` holds (NodeEncoder::finish)
  void reserve(size_t bytes) { bytes_.reserve(bytes); }
  std::string bytes() && { return std::move(bytes_); }

 private:
  bool append(const google::protobuf::MessageLite& m);  // false: over 2 GiB
  std::string path_, bytes_;
};

// A node written straight into ET bytes, field by field with protobuf's wire-format encoders
// (WireFormatLite, CodedOutputStream), in the order and form Node's own serializer writes them: the
// bytes EtWriter::node writes for the same node, without building the message (an export writes
// two million nodes at 1024 NPUs). Per node: start, then its dependencies, duration and attributes
// (in the order the message would hold them), then finish.
class NodeEncoder {
 public:
  void start(uint64_t id, std::string_view name, ChakraProtoMsg::NodeType type);
  void data_dep(uint64_t id) { deps_.push_back(id); }
  void duration_micros(uint64_t micros) { duration_ = micros; }
  // An integer attribute, typed and checked as set_int types and checks it.
  void attr(std::string_view name, int64_t value);
  void attr(std::string_view name, std::string_view value);  // a string_val
  // Appends the node, length-delimited as EtWriter frames it, to `out`.
  void finish(std::string& out);

 private:
  uint64_t id_ = 0, duration_ = 0;
  int type_ = 0;
  std::string name_, attrs_, body_;
  std::vector<uint64_t> deps_;
};

// Written to a temporary file and renamed.
void write_et(const std::string& path, const EtFile& file);
// The bytes write_et writes; `path` names the file in errors.
std::string serialize_et(const EtFile& file, const std::string& path = "<bytes>");
// Stages <prefix>.<rank>.et for every file in `out` (prefix relative to its folder), and marks the
// higher ranks an earlier, larger set left there for removal at the commit (they would read as
// part of this set).
void stage_et_set(const std::vector<EtFile>& files, topo::OutputFolder& out,
                  const std::string& prefix);
// The same for `ranks` files whose bytes `rank(r)` makes (serialize_et, EtWriter), on every core, a
// few ranks ahead of the writing (each written, then dropped); `rank` is called from several
// threads at once.
void stage_et_set(int ranks, const std::function<std::string(int)>& rank, topo::OutputFolder& out,
                  const std::string& prefix);
// <prefix>.0.et, <prefix>.1.et, ... up to the first missing rank; at least one must exist.
std::vector<EtFile> read_prefix(const std::string& prefix);
// Whether <prefix>.0.et exists.
bool is_prefix(const std::string& prefix);

// An integer attribute of any integer type (int32/64, uint32/64, sint32/64, fixed, bool), or
// nothing.
std::optional<int64_t> int_attr(const Node& n, std::string_view name);
// One attribute's value as an integer, whatever integer type it was written with.
std::optional<int64_t> int_value(const ChakraProtoMsg::AttributeProto& a);
std::optional<std::string> string_attr(const Node& n, std::string_view name);
bool has_attr(const Node& n, std::string_view name);
// An integer attribute typed as the Chakra convention has it (its PyTorch converter, ASTRA-sim's
// example ETs and microbenchmark generator; older feeders read exactly these types): int32 for
// comm_src, comm_dst, comm_tag and comm_priority, uint64 for tensor_size, int64 otherwise.
void set_int(Node& n, std::string_view name, int64_t value);
// Which field set_int puts an attribute's value in.
enum class IntField { Int32, Int64, Uint64 };
IntField int_field_of(std::string_view name);
void set_string(ChakraProtoMsg::AttributeProto* a, std::string_view name, std::string_view value);

// JSON like Chakra's jsonizer: {"metadata": {...}, "nodes": [...]}.
std::string dump_json(const EtFile& file);
// Graphviz: a node per ET node, data dependencies solid, control dependencies dashed.
std::string to_dot(const EtFile& file);

}  // namespace tenet::chakra
