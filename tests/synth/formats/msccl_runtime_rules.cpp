#include "tests/synth/formats/msccl_runtime_rules.hpp"

#include <fmt/format.h>
#include <pugixml.hpp>

#include <map>
#include <set>

namespace tenet::synth::testing {

std::vector<std::string> msccl_runtime_problems(const std::string& xml, MscclRuntime runtime) {
  std::vector<std::string> out;
  const bool legacy = runtime == MscclRuntime::Legacy;
  const int max_steps = legacy ? 256 : 64, max_blocks = legacy ? 216 : 1024;
  // The tokenizer (xml.cc: xmlGetChar/xmlGetToken): only ' ', '\n', '\r' are blank; a tag is read
  // on one line; values are double-quoted; name="value" with nothing around '='.
  if (xml.rfind("<?xml", 0) == 0 || xml.find("<?") != std::string::npos)
    out.push_back("an XML declaration");
  if (xml.rfind("\xEF\xBB\xBF", 0) == 0) out.push_back("a byte-order mark");
  if (xml.find('\t') != std::string::npos) out.push_back("a tab");
  if (xml.find('\'') != std::string::npos) out.push_back("a single quote");
  if (xml.find(" =") != std::string::npos || xml.find("= ") != std::string::npos)
    out.push_back("a space around '='");
  for (size_t open = xml.find('<'); open != std::string::npos; open = xml.find('<', open + 1)) {
    if (xml.compare(open, 4, "<!--") == 0) {
      open = xml.find("-->", open);
      if (open == std::string::npos) break;
      continue;
    }
    const size_t close = xml.find('>', open);
    if (close != std::string::npos && xml.find('\n', open) < close) {
      out.push_back("a line break inside a tag");
      break;
    }
  }
  pugi::xml_document doc;
  if (!doc.load_string(xml.c_str())) return out.push_back("not XML"), out;
  const pugi::xml_node algo = doc.child("algo");
  if (!algo) return out.push_back("no <algo>"), out;
  auto count_attributes = [&](const pugi::xml_node& n) {
    int k = 0;
    for (pugi::xml_attribute a = n.first_attribute(); a; a = a.next_attribute()) ++k;
    if (k > 16)
      out.push_back(fmt::format("<{}> has {} attributes; the loader keeps 16", n.name(), k));
  };
  count_attributes(algo);
  for (const char* a : {"name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
                        "outofplace", "minBytes", "maxBytes"})
    if (!algo.attribute(a)) out.push_back(fmt::format("<algo> lacks {}", a));
  const std::string proto = algo.attribute("proto").value(), coll = algo.attribute("coll").value();
  if (proto != "Simple" && proto != "LL" && proto != "LL128")
    out.push_back(fmt::format("proto '{}'", proto));
  const std::set<std::string> colls =
      legacy ? std::set<std::string>{"allreduce", "allgather", "reduce_scatter", "alltoall",
                                     "reduce",    "broadcast", "custom"}
             : std::set<std::string>{"allreduce", "allgather", "reducescatter", "alltoall",
                                     "reduce",    "broadcast", "send",          "recv",
                                     "gather",    "scatter",   "alltoallv"};
  if (!colls.count(coll)) out.push_back(fmt::format("coll '{}' is unknown to this runtime", coll));
  const long long min_bytes = algo.attribute("minBytes").as_llong(),
                  max_bytes = algo.attribute("maxBytes").as_llong();
  if (max_bytes <= min_bytes)
    out.push_back("maxBytes not above minBytes: the legacy runtime never picks it");
  const int nchannels = algo.attribute("nchannels").as_int(),
            ngpus = algo.attribute("ngpus").as_int();
  if (nchannels < 1 || nchannels > 32) out.push_back(fmt::format("nchannels {}", nchannels));
  static const std::set<std::string> kTypes{"s",    "r",   "rcs", "rrs", "rrc",
                                            "rrcs", "cpy", "re",  "nop"};
  // The legacy loader checks each rank's buffers against nchunksperloop: an All-Gather's input and
  // a Reduce-Scatter's output are a rank's share, the rest whole (microsoft/msccl b23e9cd
  // src/graph/topo.cc:824-839 and 886).
  const int per_loop = algo.attribute("nchunksperloop").as_int();
  const int in_times = coll == "allgather" ? ngpus : 1,
            out_times = coll == "reduce_scatter" ? ngpus : 1;
  for (pugi::xml_node gpu : algo.children("gpu")) {
    const int g = gpu.attribute("id").as_int();
    count_attributes(gpu);
    const int in = gpu.attribute("i_chunks").as_int(),
              out_chunks = gpu.attribute("o_chunks").as_int();
    if (legacy && ((in > 0 && in * in_times != per_loop) ||
                   (out_chunks > 0 && out_chunks * out_times != per_loop)))
      out.push_back(fmt::format("gpu {}: i_chunks/o_chunks {}/{} disagree with nchunksperloop {}",
                                g, in, out_chunks, per_loop));
    size_t nodes = 1 + static_cast<size_t>(ngpus);
    int expected_tb = 0;
    std::map<int, int> senders, receivers;  // channel -> thread blocks with a peer
    for (pugi::xml_node tb : gpu.children("tb")) {
      ++nodes;
      const int id = tb.attribute("id").as_int(), chan = tb.attribute("chan").as_int();
      if (id != expected_tb++)
        out.push_back(fmt::format("gpu {}: tb ids not contiguous from 0 ({})", g, id));
      if (chan < 0 || chan >= nchannels)
        out.push_back(
            fmt::format("gpu {} tb {}: chan {} outside 0..{}", g, id, chan, nchannels - 1));
      if (tb.attribute("send").as_int() >= 0) ++senders[chan];
      if (tb.attribute("recv").as_int() >= 0) ++receivers[chan];
      int expected_s = 0;
      for (pugi::xml_node st : tb.children("step")) {
        ++nodes;
        count_attributes(st);
        const int s = st.attribute("s").as_int(), cnt = st.attribute("cnt").as_int(),
                  depid = st.attribute("depid").as_int();
        const std::string type = st.attribute("type").value();
        if (s != expected_s++)
          out.push_back(fmt::format("gpu {} tb {}: step {} out of order", g, id, s));
        if (s >= max_steps)
          out.push_back(
              fmt::format("gpu {} tb {}: step {} (at most {} steps)", g, id, s, max_steps));
        if (!kTypes.count(type))
          out.push_back(fmt::format("gpu {} tb {} step {}: type '{}'", g, id, s, type));
        for (const char* a : {"s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid",
                              "deps", "hasdep"})
          if (!st.attribute(a))
            out.push_back(fmt::format("gpu {} tb {} step {}: lacks {}", g, id, s, a));
        if (cnt > 71 || (cnt < 1 && type != "nop"))
          out.push_back(fmt::format("gpu {} tb {} step {}: cnt {}", g, id, s, cnt));
        if (depid > 127)
          out.push_back(
              fmt::format("gpu {} tb {} step {}: depid {} (stored in an int8)", g, id, s, depid));
      }
    }
    if (expected_tb > max_blocks)
      out.push_back(
          fmt::format("gpu {}: {} thread blocks (at most {})", g, expected_tb, max_blocks));
    for (const auto& per : {senders, receivers})
      for (auto [chan, n] : per)
        if (n > 32)
          out.push_back(fmt::format("gpu {} channel {}: {} thread blocks with a peer (at most 32)",
                                    g, chan, n));
    if (nodes > 4095) out.push_back(fmt::format("gpu {}: {} XML nodes (at most 4095)", g, nodes));
  }
  return out;
}

}  // namespace tenet::synth::testing
