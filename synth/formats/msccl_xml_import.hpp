// The state of one MSCCL-XML import and its phases across files (internal to synth/formats):
// msccl_xml_read.cpp parses the file, pairs sends with receives and builds the IR;
// msccl_xml_order.cpp checks that the thread blocks' accesses are ordered (no two race on a slot);
// msccl_xml_contents.cpp runs the program on the buffers, data and contributors, and checks the
// result against the collective.
//
// The runtime model (Azure/msccl-executor-nccl src/device/msccl_kernel.cu, mscclRunInterpreter,
// and microsoft/msccl src/collectives/device/msccl_interpreter.h, which agree): a GPU has an input,
// an output and a scratch buffer of the sizes its <gpu> declares (i_chunks, o_chunks, s_chunks;
// in place, input and output are one buffer). Its thread blocks run concurrently, each its steps
// in order; a step waits for its depid/deps step, and a receive completes after its matching send.
// Nothing else orders two steps. Each step type touches its own GPU's buffers as StepEffect says:
// srcoff and dstoff name slots of the step's own GPU (whatever the peer's layout), and a message
// carries what its send read or reduced.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <pugixml.hpp>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/formats/msccl_xml.hpp"
#include "synth/formats/msccl_xml_detail.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/error.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

enum class StepType : uint8_t {
  Send,                // s
  Recv,                // r
  RecvCopySend,        // rcs
  RecvReduceSend,      // rrs
  RecvReduceCopy,      // rrc
  RecvReduceCopySend,  // rrcs
  Copy,                // cpy
  Reduce,              // re
  Nop,                 // nop
};
std::optional<StepType> parse_step_type(std::string_view name);

// What a step does on its GPU, in the runtime: prims.send(src), recv(dst), recvCopySend(dst),
// recvReduceSend(src), recvReduceCopy(src, dst), recvReduceCopySend(src, dst), localCopy(src,
// dst), and a local reduce dst += src.
struct StepEffect {
  bool receives = false, sends = false;
  bool reduces = false;    // the message (or src, for 're') is reduced with a local slot
  bool reads_src = false;  // reads srcoff..srcoff+cnt
  bool reads_dst = false;  // reads dstoff..dstoff+cnt ('re': dst += src)
  bool writes_dst = false;
};
StepEffect effect_of(StepType t);

struct XmlStep {
  int gpu, tb, s;
  StepType type;
  Slot src, dst;
  int cnt;
  int depid, deps;
  size_t line;  // the offset of its element in the text
  // Whether each operand the step uses lies within its buffer's declared size (check_bounds);
  // an access past it is reported and takes no part in the other checks.
  bool src_in_bounds = true, dst_in_bounds = true;
};

// A GPU's declared buffer sizes, in chunks.
struct BufferSizes {
  int64_t input = 0, output = 0, scratch = 0;
  int64_t of(char buf) const { return buf == 'i' ? input : buf == 'o' ? output : scratch; }
};

// The state of one import, filled phase by phase.
struct Import {
  Import(std::string_view text, const topo::Topology& topology, const std::string& file_name)
      : t(topology), file(file_name), buffer(text) {}

  const topo::Topology& t;
  const std::string& file;
  const std::string buffer;  // the text
  MscclImport result;
  pugi::xml_document doc;
  pugi::xml_node algo;
  // The <algo> attributes, and the chunks.
  bool in_place = false;
  int p = 0, per_loop = 0, k = 0;
  Algorithm a;
  // Tenet's notes.
  std::map<std::tuple<int, int, int>, int64_t> tenet_order;  // send step (gpu, tb, s) -> position
  // send step (gpu, tb, s) -> lane, when not 0
  std::map<std::tuple<int, int, int>, int> tenet_lane;
  // The GPUs' buffer sizes, the steps, and what each buffer slot of each GPU holds at the start
  // (check_contents starts from it; the IR's replay then changes it as it goes).
  std::vector<BufferSizes> sizes;
  std::vector<XmlStep> steps;
  // (gpu, tb) -> (send, recv, chan)
  std::map<std::tuple<int, int>, std::tuple<int, int, int>> peers;
  std::map<std::tuple<int, int, int>, size_t> step_at;  // (gpu, tb, s) -> index
  std::vector<std::map<Slot, ChunkId>> holds;
  // The execution order: per step, the steps the runtime runs before it (the previous step of its
  // thread block, its depid/deps step, the send it receives from), and one order consistent with
  // them.
  std::vector<std::vector<size_t>> before;
  std::map<std::tuple<int, int, int>, std::vector<size_t>> sends;  // (from, to, chan) -> send steps
  std::map<size_t, size_t> partner;                                // receiving step -> sending step
  std::vector<size_t> order;
  std::vector<size_t> position;  // step -> its position in `order`
  // What the replay found.
  std::vector<std::tuple<int, int, int>> send_of;  // per transfer, its send step (gpu, tb, s)
  // Received, then reduced into the GPU's copy by a 're' step: (transfer, position of the 're').
  std::vector<std::pair<TransferId, size_t>> reduced_later;
  // The chunks each of them reduces so (a transfer of several chunks reduces all or none).
  std::set<std::pair<TransferId, ChunkId>> reduced_chunks;
  // (sending step, j): the j-th chunk it sends is its GPU's own input alone (check_contents).
  std::set<std::pair<size_t, int>> input_sent;
  std::vector<size_t> send_position;  // per transfer, the position of its send step in `order`
  // per transfer, where its data takes effect: its receive (or a later re step)
  std::vector<size_t> land_position;

  // The line of a character offset in the text (counted once, on the first call).
  int line_of(ptrdiff_t offset) const;
  Error fail(const pugi::xml_node& n, const std::string& what) const;
  int attr_int(const pugi::xml_node& n, const char* name) const;
  // In place, the input and output buffers are one: All-Reduce's output is its input, All-Gather's
  // input is its own block of the output, Reduce-Scatter's output is its own block of the input.
  // Every slot is named by its place in the buffer that holds the whole.
  Slot canon(int gpu, Slot s) const;
  // A problem of step x: "gpu g tb t step s <what> (line n)".
  void problem(ImportProblemKind kind, const XmlStep& x, const std::string& what);

 private:
  mutable std::vector<size_t> newlines_;  // offsets of the text's line breaks
};

// Every operand a step uses lies within its GPU's declared buffer sizes (OutOfBounds otherwise).
void check_bounds(Import& in);
// Every two accesses of a slot, one of them a write, are ordered by the runtime (Unordered
// otherwise): the order of `in.order` is then the only outcome.
void check_order(Import& in);
// The program run on the buffers in `in.order`: reads of slots that hold nothing, reductions of
// different chunks or counting a rank twice, and the output against the collective.
void check_contents(Import& in);

}  // namespace tenet::synth::detail
