#include "tests/synth/formats/msccl_runtime_oracle.hpp"

#include <fmt/format.h>
#include <pugixml.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

namespace tenet::synth::testing {

RuntimeEffect runtime_effect(const std::string& type) {
  // prims.send(src), recv(dst), recvCopySend(dst), recvReduceSend(src), recvReduceCopy(src, dst),
  // recvReduceCopySend(src, dst), localCopy(src, dst), and 're': dst = dst + src.
  if (type == "s") return {.sends = true, .reads_src = true};
  if (type == "r") return {.receives = true, .writes_dst = true};
  if (type == "rcs") return {.receives = true, .sends = true, .writes_dst = true};
  if (type == "rrs") return {.receives = true, .sends = true, .reads_src = true};
  if (type == "rrc") return {.receives = true, .reads_src = true, .writes_dst = true};
  if (type == "rrcs")
    return {.receives = true, .sends = true, .reads_src = true, .writes_dst = true};
  if (type == "cpy") return {.reads_src = true, .writes_dst = true};
  if (type == "re") return {.reads_src = true, .reads_dst = true, .writes_dst = true};
  return {};  // nop
}

MscclOracle::MscclOracle(const std::string& xml) {
  pugi::xml_document doc;
  if (!doc.load_string(xml.c_str())) throw std::runtime_error("oracle: not XML");
  const pugi::xml_node algo = doc.child("algo");
  coll_ = algo.attribute("coll").value();
  in_place_ = algo.attribute("inplace").as_int() != 0;
  k_ = std::max(1, algo.attribute("nchunksperloop").as_int() / algo.attribute("ngpus").as_int());
  // Edges: a thread block's order, depid/deps, and the k-th send a->b on a channel before the
  // k-th receive of b from a there.
  std::vector<std::pair<size_t, size_t>> edges;
  std::map<std::tuple<int, int, int>, std::vector<size_t>> sends, recvs;  // (from, to, chan)
  for (pugi::xml_node gpu : algo.children("gpu"))
    for (pugi::xml_node tb : gpu.children("tb")) {
      const int g = gpu.attribute("id").as_int(), id = tb.attribute("id").as_int();
      const int send = tb.attribute("send").as_int(), recv = tb.attribute("recv").as_int(),
                chan = tb.attribute("chan").as_int();
      std::vector<size_t> mine;
      for (pugi::xml_node st : tb.children("step")) {
        const std::string type = st.attribute("type").value();
        mine.push_back(steps_.size());
        steps_.push_back({g, id, st.attribute("s").as_int(), type,
                          st.attribute("srcbuf").value()[0], st.attribute("dstbuf").value()[0],
                          st.attribute("srcoff").as_int(), st.attribute("dstoff").as_int(),
                          st.attribute("cnt").as_int(), st.attribute("depid").as_int(),
                          st.attribute("deps").as_int()});
        if (runtime_effect(type).sends) sends[{g, send, chan}].push_back(mine.back());
        if (runtime_effect(type).receives) recvs[{recv, g, chan}].push_back(mine.back());
      }
      std::sort(mine.begin(), mine.end(),
                [&](size_t a, size_t b) { return steps_[a].s < steps_[b].s; });
      for (size_t j = 1; j < mine.size(); ++j) edges.emplace_back(mine[j - 1], mine[j]);
    }
  for (size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].depid >= 0)
      if (const int d = find(steps_[i].gpu, steps_[i].depid, steps_[i].deps); d >= 0)
        edges.emplace_back(d, i);
  for (const auto& [key, list] : sends)
    for (size_t j = 0; j < list.size() && j < recvs[key].size(); ++j)
      edges.emplace_back(list[j], recvs[key][j]);
  // The closure, in a topological order.
  const size_t n = steps_.size(), words = (n + 63) / 64;
  std::vector<std::vector<size_t>> after(n);
  std::vector<int> indegree(n, 0);
  for (auto [a, b] : edges) {
    after[a].push_back(b);
    ++indegree[b];
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) order.push_back(i);
  for (size_t q = 0; q < order.size(); ++q)
    for (size_t b : after[order[q]])
      if (--indegree[b] == 0) order.push_back(b);
  if (order.size() != n) throw std::runtime_error("oracle: the steps form a cycle");
  reach_.assign(n, std::vector<uint64_t>(words, 0));
  for (size_t a : order)
    for (size_t b : after[a]) {
      for (size_t w = 0; w < words; ++w) reach_[b][w] |= reach_[a][w];
      reach_[b][a / 64] |= uint64_t{1} << (a % 64);
    }
}

int MscclOracle::find(int gpu, int tb, int s) const {
  for (size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].gpu == gpu && steps_[i].tb == tb && steps_[i].s == s) return static_cast<int>(i);
  return -1;
}

bool MscclOracle::ordered(size_t a, size_t b) const { return (reach_[b][a / 64] >> (a % 64)) & 1; }

std::vector<MscclOracle::Access> MscclOracle::accesses_of(size_t i) const {
  const OracleStep& x = steps_[i];
  const RuntimeEffect e = runtime_effect(x.type);
  std::vector<Access> out;
  auto add = [&](char buf, int off, bool write) {
    for (int j = 0; j < x.cnt; ++j) {
      // In place, input and output are one buffer (as the runtime's pointers are).
      char b = buf;
      int o = off + j;
      if (in_place_ && coll_ == "allreduce" && b == 'o') b = 'i';
      if (in_place_ && coll_ == "allgather" && b == 'i') {
        b = 'o';
        o += x.gpu * k_;
      }
      if (in_place_ && coll_.starts_with("reduce") && b == 'o') {
        b = 'i';
        o += x.gpu * k_;
      }
      out.push_back({i, b, o, write});
    }
  };
  if (e.reads_src) add(x.srcbuf, x.srcoff, false);
  if (e.reads_dst) add(x.dstbuf, x.dstoff, false);
  if (e.writes_dst) add(x.dstbuf, x.dstoff, true);
  return out;
}

bool MscclOracle::feeds(size_t a, size_t b) const {
  if (steps_[a].gpu != steps_[b].gpu) return false;
  for (const Access& w : accesses_of(a))
    for (const Access& r : accesses_of(b))
      if (w.write && !r.write && w.buf == r.buf && w.off == r.off) return true;
  return false;
}

std::vector<std::string> MscclOracle::races() const {
  std::map<std::tuple<int, char, int>, std::vector<Access>> by_slot;  // (gpu, buf, off)
  for (size_t i = 0; i < steps_.size(); ++i)
    for (const Access& ac : accesses_of(i)) by_slot[{steps_[i].gpu, ac.buf, ac.off}].push_back(ac);
  std::vector<std::string> out;
  for (const auto& [slot, list] : by_slot)
    for (size_t x = 0; x < list.size(); ++x)
      for (size_t y = x + 1; y < list.size(); ++y) {
        const Access &a = list[x], &b = list[y];
        if (a.step == b.step || !(a.write || b.write)) continue;
        if (ordered(a.step, b.step) || ordered(b.step, a.step)) continue;
        out.push_back(fmt::format("gpu {}: tb {} step {} / tb {} step {} on {}[{}]",
                                  std::get<0>(slot), steps_[a.step].tb, steps_[a.step].s,
                                  steps_[b.step].tb, steps_[b.step].s, a.buf, a.off));
      }
  return out;
}

}  // namespace tenet::synth::testing
