// Chakra execution-trace files: one per rank, `<prefix>.<rank>.et`, a length-delimited
// GlobalMetadata followed by length-delimited Nodes (shared/reference/chakra-et.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "et_def.pb.h"
#include "topo/output_folder.hpp"

namespace tenet::chakra {

using ChakraProtoMsg::Node;

struct EtFile {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<Node> nodes;
};

std::string et_path(const std::string& prefix, int rank);
// Throws tenet::Error naming the file and the message that could not be read.
EtFile read_et(const std::string& path);
// The same from bytes in memory; `path` names them in errors.
EtFile parse_et(std::string_view bytes, const std::string& path = "<bytes>");
// Written to a temporary file and renamed.
void write_et(const std::string& path, const EtFile& file);
// The bytes write_et writes; `path` names the file in errors.
std::string serialize_et(const EtFile& file, const std::string& path = "<bytes>");
// Stages <prefix>.<rank>.et for every file in `out` (prefix relative to its folder), and marks the
// higher ranks an earlier, larger set left there for removal at the commit (they would read as
// part of this set).
void stage_et_set(const std::vector<EtFile>& files, topo::OutputFolder& out, const std::string& prefix);
// <prefix>.0.et, <prefix>.1.et, ... up to the first missing rank; at least one must exist.
std::vector<EtFile> read_prefix(const std::string& prefix);
// Whether <prefix>.0.et exists.
bool is_prefix(const std::string& prefix);

// An integer attribute of any integer type (int32/64, uint32/64, sint32/64, fixed, bool), or nothing.
std::optional<int64_t> int_attr(const Node& n, std::string_view name);
// One attribute's value as an integer, whatever integer type it was written with.
std::optional<int64_t> int_value(const ChakraProtoMsg::AttributeProto& a);
std::optional<std::string> string_attr(const Node& n, std::string_view name);
bool has_attr(const Node& n, std::string_view name);
// An integer attribute typed as the Chakra convention has it (its PyTorch converter, ASTRA-sim's
// example ETs and microbenchmark generator; older feeders read exactly these types): int32 for
// comm_src, comm_dst, comm_tag and comm_priority, uint64 for tensor_size, int64 otherwise.
void set_int(Node& n, const std::string& name, int64_t value);
void set_string(ChakraProtoMsg::AttributeProto* a, const std::string& name, const std::string& value);

// JSON like Chakra's jsonizer: {"metadata": {...}, "nodes": [...]}.
std::string dump_json(const EtFile& file);
// Graphviz: a node per ET node, data dependencies solid, control dependencies dashed.
std::string to_dot(const EtFile& file);

}  // namespace tenet::chakra
