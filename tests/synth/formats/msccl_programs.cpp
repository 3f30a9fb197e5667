#include "tests/synth/formats/msccl_programs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "tests/synth/formats/msccl_runtime_oracle.hpp"

namespace tenet::synth::testing {

std::string step(int s, const char* type, char sb, int so, char db, int d, int cnt, int depid,
                 int deps) {
  return fmt::format(
      R"(<step s="{}" type="{}" srcbuf="{}" srcoff="{}" dstbuf="{}" dstoff="{}" cnt="{}" depid="{}" deps="{}" hasdep="0"/>)",
      s, type, sb, so, db, d, cnt, depid, deps);
}

namespace {

// A program lowered as msccl-tools lowers it: ops appended in program order to their thread
// blocks; an op depends on the last write of each slot it reads, and on the reads since (or else
// the last write) of each slot it writes (msccl/language/rank_dag.py, InstructionDAG._read and
// _write); ir_to_xml (msccl/language/ir.py) keeps the latest step of each other thread block, drops
// those an earlier op of the block already waited for, writes the first as depid/deps and the rest
// as nop steps just before the op.
class Lowering {
 public:
  explicit Lowering(int p) : gpus_(p) {}

  void block(int gpu, int tb, int send, int recv) { gpus_[gpu].blocks[tb] = {send, recv, {}, {}}; }

  void op(int gpu, int tb, const char* type, char sb, int so, char db, int d, int cnt = 1) {
    Gpu& g = gpus_[gpu];
    const RuntimeEffect e = runtime_effect(type);
    std::set<Ref> deps;
    for (int j = 0; j < cnt; ++j) {
      if (e.reads_src) add_last_write(g, {sb, so + j}, deps);
      if (e.reads_dst) add_last_write(g, {db, d + j}, deps);
      if (e.writes_dst) {
        const auto& readers = g.readers[{db, d + j}];
        if (readers.empty())
          add_last_write(g, {db, d + j}, deps);
        else
          deps.insert(readers.begin(), readers.end());
      }
    }
    Block& b = g.blocks.at(tb);
    std::map<int, int> latest;  // other thread block -> its latest step depended on
    for (const Ref& r : deps)
      if (r.first != tb)
        latest[r.first] = std::max(latest.count(r.first) ? latest[r.first] : -1, r.second);
    std::vector<Ref> kept;
    for (const auto& [other, s] : latest)
      if (!b.waited.count({other, s})) kept.push_back({other, s});
    for (const Ref& r : kept) {
      b.waited.insert(r);
      g.blocks.at(r.first).steps[r.second].hasdep = true;
    }
    for (size_t i = 1; i < kept.size(); ++i)
      b.steps.push_back({"nop", 'i', -1, 'o', -1, 0, kept[i]});
    b.steps.push_back({type, sb, so, db, d, cnt, kept.empty() ? Ref{-1, -1} : kept[0]});
    const Ref me{tb, static_cast<int>(b.steps.size()) - 1};
    for (int j = 0; j < cnt; ++j) {
      if (e.reads_src) g.readers[{sb, so + j}].push_back(me);
      if (e.reads_dst) g.readers[{db, d + j}].push_back(me);
    }
    for (int j = 0; j < cnt; ++j)
      if (e.writes_dst) {
        g.last_write[{db, d + j}] = me;
        g.readers[{db, d + j}].clear();
      }
  }

  // The <gpu> elements, each with buffer sizes `sizes` ("i_chunks=... o_chunks=... s_chunks=...")
  // and its thread blocks numbered from 0 in the order of their ids (ir_to_xml sorts them by peer).
  std::string gpus(const std::string& sizes) const {
    std::string xml;
    for (size_t r = 0; r < gpus_.size(); ++r) {
      xml += fmt::format("\n  <gpu id=\"{}\" {}>", r, sizes);
      std::map<int, int> number;
      for (const auto& [id, b] : gpus_[r].blocks)
        number.emplace(id, static_cast<int>(number.size()));
      for (const auto& [id, b] : gpus_[r].blocks) {
        xml += fmt::format("\n    <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", number.at(id),
                           b.send, b.recv);
        for (size_t s = 0; s < b.steps.size(); ++s) {
          const Step& x = b.steps[s];
          xml +=
              "\n      " +
              fmt::format(
                  R"(<step s="{}" type="{}" srcbuf="{}" srcoff="{}" dstbuf="{}" dstoff="{}" cnt="{}" depid="{}" deps="{}" hasdep="{}"/>)",
                  s, x.type, x.sb, x.so, x.db, x.d, x.cnt,
                  x.dep.first < 0 ? -1 : number.at(x.dep.first), x.dep.second, x.hasdep ? 1 : 0);
        }
        xml += "\n    </tb>";
      }
      xml += "\n  </gpu>";
    }
    return xml;
  }

 private:
  using Ref = std::pair<int, int>;  // (thread block, step)
  using Slot = std::pair<char, int>;
  struct Step {
    std::string type;
    char sb;
    int so;
    char db;
    int d, cnt;
    Ref dep;
    bool hasdep = false;
  };
  struct Block {
    int send, recv;
    std::vector<Step> steps;
    std::set<Ref> waited;  // what earlier steps of the block depended on
  };
  struct Gpu {
    std::map<int, Block> blocks;
    std::map<Slot, Ref> last_write;
    std::map<Slot, std::vector<Ref>> readers;
  };
  static void add_last_write(const Gpu& g, Slot s, std::set<Ref>& deps) {
    if (auto it = g.last_write.find(s); it != g.last_write.end()) deps.insert(it->second);
  }

  std::vector<Gpu> gpus_;
};

}  // namespace

std::string ring_allgather_in_place(int p, int channels, const std::string& proto) {
  const int k = channels;
  std::string xml = fmt::format(
      R"(<algo name="allgather_ring" proto="{}" nchannels="{}" nchunksperloop="{}" ngpus="{}" coll="allgather" inplace="1">)",
      proto, channels, p * k, p);
  for (int r = 0; r < p; ++r) {
    xml += fmt::format("\n  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"0\">", r, k,
                       p * k);
    for (int ch = 0; ch < channels; ++ch) {
      xml += fmt::format("\n    <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"{}\">", ch,
                         (r + 1) % p, (r + p - 1) % p, ch);
      // Own slice (read through the in-place input), then receive-copy-send around the ring.
      xml += step(0, "s", 'i', ch, 'o', r * k + ch);
      for (int j = 1; j < p; ++j) {
        const int from = (r + p - j) % p;
        xml += step(j, j + 1 < p ? "rcs" : "r", 'o', from * k + ch, 'o', from * k + ch);
      }
      xml += "</tb>";
    }
    xml += "</gpu>";
  }
  return xml + "\n</algo>\n";
}

std::string allpairs_allreduce(int p) {
  std::string xml = fmt::format(
      R"(<algo name="allreduce_allpairs" proto="LL" nchannels="1" nchunksperloop="{}" ngpus="{}" coll="allreduce" inplace="1">)",
      p, p);
  for (int r = 0; r < p; ++r) {
    xml +=
        fmt::format("\n  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"0\" s_chunks=\"{}\">", r, p, p);
    const int local = p - 1;  // thread blocks 0..p-2 talk to the peers, the last reduces locally
    std::vector<int> peers;
    for (int q = 0; q < p; ++q)
      if (q != r) peers.push_back(q);
    for (int b = 0; b < p - 1; ++b) {
      const int q = peers[b];
      xml += fmt::format("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", b, q, q);
      xml += step(0, "s", 'i', q, 's', r) + step(1, "r", 'i', r, 's', q) +
             step(2, "s", 'i', r, 'i', r, 1, local, p - 2) + step(3, "r", 'i', q, 'i', q);
      xml += "</tb>";
    }
    xml += fmt::format("<tb id=\"{}\" send=\"-1\" recv=\"-1\" chan=\"0\">", local);
    for (int b = 0; b < p - 1; ++b) xml += step(b, "re", 's', peers[b], 'i', r, 1, b, 1);
    xml += "</tb></gpu>";
  }
  return xml + "\n</algo>\n";
}

std::string one_step_allreduce(int p, bool race) {
  std::string xml = fmt::format(
      R"(<algo name="allreduce_pairs" proto="LL" nchannels="1" nchunksperloop="{}" ngpus="{}" coll="allreduce" inplace="1">)",
      p, p);
  for (int r = 0; r < p; ++r) {
    xml += fmt::format("\n  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"0\" s_chunks=\"{}\">", r, p,
                       (p - 1) * p);
    std::vector<int> peers;
    for (int q = 0; q < p; ++q)
      if (q != r) peers.push_back(q);
    // Where GPU q keeps what GPU `from` sends it: the p slots after those of q's earlier peers.
    auto slot_at = [&](int q, int from) { return (from < q ? from : from - 1) * p; };
    // Thread block 0 reduces locally; thread block b + 1 talks to peers[b].
    xml += "<tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">";
    int s = 0;
    if (!race)
      for (int b = 0; b < p - 1; ++b) xml += step(s++, "nop", 'i', -1, 'o', -1, 0, b + 1, 1);
    for (int b = 0; b < p - 1; ++b)
      for (int c = 0; c < p; ++c) xml += step(s++, "re", 's', slot_at(r, peers[b]) + c, 'i', c);
    xml += "</tb>";
    for (int b = 0; b < p - 1; ++b) {
      const int q = peers[b];
      xml += fmt::format("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", b + 1, q, q) +
             step(0, "s", 'i', 0, 's', slot_at(q, r), p) +
             step(1, "r", 'i', 0, 's', slot_at(r, q), p) + "</tb>";
    }
    xml += "</gpu>";
  }
  return xml + "\n</algo>\n";
}

std::string recursive_doubling_allgather(int p) {
  std::string xml = fmt::format(
      R"(<algo name="allgather_recursive_doubling" proto="Simple" nchannels="1" nchunksperloop="{}" ngpus="{}" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">)",
      p, p);
  for (int r = 0; r < p; ++r) {
    xml += fmt::format(
               "<gpu id=\"{}\" i_chunks=\"1\" o_chunks=\"{}\" s_chunks=\"0\"><tb id=\"0\" "
               "send=\"-1\" recv=\"-1\" chan=\"0\">",
               r, p) +
           step(0, "cpy", 'i', 0, 'o', r) + "</tb>";
    int level = 0;
    for (int span = 1; span < p; span *= 2, ++level) {
      const int peer = r ^ span, mine = r / span * span, theirs = peer / span * span;
      // Wait for the local copy, then for the previous level's receive.
      xml +=
          fmt::format("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", level + 1, peer, peer) +
          step(0, "s", 'o', mine, 'o', mine, span, level == 0 ? 0 : level, level == 0 ? 0 : 1) +
          step(1, "r", 'o', theirs, 'o', theirs, span) + "</tb>";
    }
    xml += "</gpu>";
  }
  return xml + "</algo>";
}

std::string two_step_alltoall(int g) {
  const int p = 2 * g;
  std::string xml = fmt::format(
      R"(<algo name="alltoall_two_step" proto="Simple" nchannels="1" nchunksperloop="{}" ngpus="{}" coll="alltoall" inplace="0" outofplace="1" minBytes="0" maxBytes="0">)",
      p, p);
  for (int r = 0; r < p; ++r) {
    const int n = r / g, l = r % g, m = 1 - n, counterpart = m * g + l;
    xml +=
        fmt::format("<gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"{}\">", r, p, p, g);
    int tb = 0;
    const int cross = 0;  // thread block 0 talks to the other node
    xml += fmt::format("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", tb++, counterpart,
                       counterpart) +
           step(0, "s", 'i', m * g, 's', 0, g) + step(1, "r", 'i', n * g, 's', 0, g) + "</tb>";
    for (int q = 0; q < g; ++q) {
      if (q == l) continue;
      const int peer = n * g + q;
      xml += fmt::format("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", tb++, peer, peer) +
             step(0, "s", 'i', peer, 'o', r) + step(1, "r", 'i', r, 'o', peer) +
             step(2, "s", 's', q, 'o', m * g + l, 1, cross, 1) +
             step(3, "r", 's', l, 'o', m * g + q) + "</tb>";
    }
    xml += fmt::format("<tb id=\"{}\" send=\"-1\" recv=\"-1\" chan=\"0\">", tb) +
           step(0, "cpy", 'i', r, 'o', r) + step(1, "cpy", 's', l, 'o', counterpart, 1, cross, 1) +
           "</tb></gpu>";
  }
  return xml + "</algo>";
}

std::string hierarchical_allreduce(int g) {
  const int p = 2 * g;
  std::string xml = fmt::format(
      R"(<algo name="hierarchical_allreduce" proto="Simple" nchannels="1" nchunksperloop="{}" ngpus="{}" coll="allreduce" inplace="1">)",
      p, p);
  for (int r = 0; r < p; ++r) {
    const int n = r / g, l = r % g, counterpart = (1 - n) * g + l;
    const int cross = g - 1, cross_last = (g - 1) + 3;  // its thread block and last step
    xml += fmt::format("<gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"0\" s_chunks=\"0\">", r, p);
    int tb = 0;
    for (int q = 0; q < g; ++q) {
      if (q == l) continue;
      const int peer = n * g + q;
      // Each reduction into i[l] (and i[l + g]) waits for the previous thread block's.
      const int prev = tb - 1;
      xml += fmt::format("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", tb, peer, peer) +
             step(0, "s", 'i', q, 'i', q) + step(1, "s", 'i', q + g, 'i', q + g) +
             step(2, "rrc", 'i', l, 'i', l, 1, prev, prev < 0 ? -1 : 2) +
             step(3, "rrc", 'i', l + g, 'i', l + g, 1, prev, prev < 0 ? -1 : 3) +
             step(4, "s", 'i', l, 'i', l, 1, cross, cross_last) +
             step(5, "s", 'i', l + g, 'i', l + g) + step(6, "r", 'i', q, 'i', q) +
             step(7, "r", 'i', q + g, 'i', q + g) + "</tb>";
      ++tb;
    }
    // Across nodes: wait for the node's partials, send the one the other node reduces, reduce ours,
    // send the result back, receive theirs.
    const int ours = n == 0 ? l : l + g, theirs = n == 0 ? l + g : l;
    xml += fmt::format("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", cross, counterpart,
                       counterpart);
    for (int b = 0; b < g - 1; ++b) xml += step(b, "nop", 'i', 0, 'i', 0, 0, b, 3);
    xml += step(g - 1, "s", 'i', theirs, 'i', theirs) + step(g, "rrc", 'i', ours, 'i', ours) +
           step(g + 1, "s", 'i', ours, 'i', ours) + step(g + 2, "r", 'i', theirs, 'i', theirs) +
           "</tb></gpu>";
  }
  return xml + "</algo>";
}

std::string two_chunk_allreduce() {
  std::string xml =
      R"(<algo name="ar2" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="4" coll="allreduce" inplace="1">)";
  xml += "<gpu id=\"0\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"0\">";
  for (int q = 1; q < 4; ++q) {
    const int other1 = q % 3, other2 = (q + 1) % 3;  // the other two thread blocks
    // Each reduction into i[0..1] waits for the previous thread block's.
    const int prev = q - 2;
    xml += fmt::format("<tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">", q - 1, q, q) +
           step(0, "rrc", 'i', 0, 'i', 0, 2, prev, prev < 0 ? -1 : 0) +
           step(1, "nop", 'i', 0, 'i', 0, 0, other1, 0) +
           step(2, "s", 'i', 0, 'i', 0, 2, other2, 0) + "</tb>";
  }
  xml += "</gpu>";
  for (int q = 1; q < 4; ++q)
    xml += fmt::format(
               "<gpu id=\"{}\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"0\"><tb id=\"0\" "
               "send=\"0\" recv=\"0\" chan=\"0\">",
               q) +
           step(0, "s", 'i', 0, 'i', 0, 2) + step(1, "r", 'i', 0, 'i', 0, 2) + "</tb></gpu>";
  return xml + "</algo>";
}

std::string ring_allreduce(int p) {
  std::string xml = fmt::format(
      R"(<algo name="allreduce_ring_1channelsperring" proto="LL128" nchannels="1" nchunksperloop="{}" ngpus="{}" coll="allreduce" inplace="1">)",
      p, p);
  Lowering low(p);
  for (int r = 0; r < p; ++r) low.block(r, 0, (r + 1) % p, (r + p - 1) % p);
  auto at = [&](int c) { return ((c % p) + p) % p; };
  for (int r = 0; r < p; ++r) {
    low.op(r, 0, "s", 'i', r, 'i', r);
    for (int s = 1; s <= p - 2; ++s) low.op(r, 0, "rrs", 'i', at(r - s), 'i', at(r - s));
    low.op(r, 0, "rrcs", 'i', at(r + 1), 'i', at(r + 1));  // chunk r + 1 is complete here
    for (int j = 0; j <= p - 3; ++j) low.op(r, 0, "rcs", 'i', at(r - j), 'i', at(r - j));
    low.op(r, 0, "r", 'i', at(r + 2), 'i', at(r + 2));
  }
  return xml + low.gpus(fmt::format("i_chunks=\"{}\" o_chunks=\"0\" s_chunks=\"0\"", p)) +
         "\n</algo>\n";
}

std::string recursive_halving_doubling_allreduce(int p) {
  std::string xml = fmt::format(
      R"(<algo name="allreduce_recursive_doubling_halving" proto="LL" nchannels="1" nchunksperloop="{}" ngpus="{}" coll="allreduce" inplace="1">)",
      p, p);
  Lowering low(p);
  for (int r = 0; r < p; ++r)
    for (int q = 0; q < p; ++q)
      if ((r ^ q) != 0 && ((r ^ q) & ((r ^ q) - 1)) == 0) low.block(r, q, q, q);
  // Reduce-scatter: GPU `rank` sends peer's block; peer reduces it into its own (rrc). Each
  // level's sends come before its receives in a thread block, as msccl-tools schedules them.
  for (int count = p / 2; count >= 1; count /= 2) {
    for (int rank = 0; rank < p; ++rank)
      low.op(rank, rank ^ count, "s", 'i', (rank ^ count) / count * count, 'i',
             (rank ^ count) / count * count, count);
    for (int rank = 0; rank < p; ++rank)
      low.op(rank ^ count, rank, "rrc", 'i', (rank ^ count) / count * count, 'i',
             (rank ^ count) / count * count, count);
  }
  // All-gather: GPU `rank` sends its block to peer.
  for (int count = 1; count < p; count *= 2) {
    for (int rank = 0; rank < p; ++rank)
      low.op(rank, rank ^ count, "s", 'i', rank / count * count, 'i', rank / count * count, count);
    for (int rank = 0; rank < p; ++rank)
      low.op(rank ^ count, rank, "r", 'i', rank / count * count, 'i', rank / count * count, count);
  }
  return xml + low.gpus(fmt::format("i_chunks=\"{}\" o_chunks=\"0\" s_chunks=\"0\"", p)) +
         "\n</algo>\n";
}

}  // namespace tenet::synth::testing
