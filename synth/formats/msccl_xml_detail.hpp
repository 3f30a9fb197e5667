// What the MSCCL-XML writer (msccl_xml_write.cpp) and reader (msccl_xml_read.cpp) share: a buffer
// slot, the runtimes' channel limit and their limit on a step's count. Internal to synth/formats.
#pragma once

namespace tenet::synth::detail {

constexpr int kMaxChannels = 32;
// A step's cnt is below this in both runtimes' loaders (MSCCL_MAX_COUNT).
constexpr int kMaxCount = 72;

struct Slot {
  char buf = 'i';  // 'i' input, 'o' output, 's' scratch
  int off = 0;
  bool operator<(const Slot& o) const { return buf != o.buf ? buf < o.buf : off < o.off; }
};

}  // namespace tenet::synth::detail
