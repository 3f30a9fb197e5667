#include "synth/formats/forestcoll_trees.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <pugixml.hpp>
#include <utility>

#include "synth/cost/timing.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"

namespace tenet::synth {
namespace {

// The document and where its lines begin, for errors that name a line.
class TreeFile {
 public:
  TreeFile(std::string_view xml, const std::string& file) : text_(xml), file_(file) {}

  const std::string& file() const { return file_; }
  int line_of(ptrdiff_t offset) const {
    const auto end = text_.begin() + std::clamp<ptrdiff_t>(offset, 0, std::ssize(text_));
    return 1 + static_cast<int>(std::count(text_.begin(), end, '\n'));
  }
  Error fail(const pugi::xml_node& n, const std::string& what) const {
    return Error(what, {file_, line_of(n.offset_debug())});
  }
  // A whole number attribute of at least `least`.
  int number(const pugi::xml_node& n, const char* name, int least) const {
    const pugi::xml_attribute a = n.attribute(name);
    if (!a) throw fail(n, fmt::format("<{}> lacks the attribute {}", n.name(), name));
    const std::string_view v = a.value();
    int value = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (ec != std::errc() || end != v.data() + v.size() || value < least)
      throw fail(n, fmt::format("<{}> {}=\"{}\": expected a whole number of at least {}", n.name(),
                                name, v, least));
    return value;
  }
  std::string_view text(const pugi::xml_node& n, const char* name) const {
    const pugi::xml_attribute a = n.attribute(name);
    if (!a) throw fail(n, fmt::format("<{}> lacks the attribute {}", n.name(), name));
    return a.value();
  }

 private:
  std::string_view text_;
  std::string file_;
};

// "(0, 'GPU', 0),(-1, 'IB', 0)": the node names of a path (commas inside parentheses belong to a
// name).
std::vector<std::string> path_names(std::string_view path) {
  std::vector<std::string> names;
  int depth = 0;
  std::string name;
  for (char ch : path) {
    if (ch == ',' && depth == 0) {
      names.push_back(std::move(name));
      name.clear();
      continue;
    }
    depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
    name += ch;
  }
  names.push_back(std::move(name));
  return names;
}

}  // namespace

// The root element's name, read from the prolog alone (an XML declaration, comments, processing
// instructions and a DOCTYPE before it skipped): every MSCCL-XML file an algorithm reader takes
// passes here, and parsing it whole twice would double its reading.
bool is_forestcoll_trees(std::string_view xml) {
  size_t at = 0;
  for (;;) {
    at = xml.find('<', at);
    if (at == std::string_view::npos) return false;
    const std::string_view rest = xml.substr(at);
    if (rest.starts_with("<!--")) {
      at = xml.find("-->", at);
    } else if (rest.starts_with("<?") || rest.starts_with("<!")) {
      at = xml.find('>', at);
    } else {
      const std::string_view name = rest.substr(1, 4);
      return name == "Algo" && (rest.size() == 5 || std::string_view(" \t\r\n>/").find(rest[5]) !=
                                                        std::string_view::npos);
    }
    if (at == std::string_view::npos) return false;
  }
}

ForestTrees read_forestcoll_trees(std::string_view xml, const topo::Topology& t,
                                  const std::string& file) {
  const TreeFile in(xml, file);
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size());
  if (!parsed)
    throw Error(fmt::format("not valid XML: {}", parsed.description()),
                {file, in.line_of(parsed.offset)});
  const pugi::xml_node algo = doc.child("Algo");
  if (!algo) throw Error("not ForestColl's trees: no <Algo> element", {file});
  ForestTrees f;
  f.k = in.number(algo, "nchunkspernode", 1);
  if (f.k > topo::kMaxChunksPerNpuOfAlgorithm)
    throw in.fail(algo, fmt::format("nchunkspernode=\"{}\": at most {} parts per NPU", f.k,
                                    topo::kMaxChunksPerNpuOfAlgorithm));
  auto node_of = [&](const pugi::xml_node& at, std::string_view name) {
    const NodeId v = t.find_node(name);
    if (v < 0)
      throw in.fail(at, fmt::format("no node '{}' in topology {} (name its nodes as ForestColl "
                                    "prints them, e.g. \"(0, 'GPU', 0)\")",
                                    name, t.name()));
    return v;
  };
  std::map<NodeId, int> parts;  // per root, its trees' nchunks
  for (const pugi::xml_node tree : algo.children("tree")) {
    ForestTree tr;
    tr.root = node_of(tree, in.text(tree, "root"));
    if (!t.is_npu(tr.root))
      throw in.fail(tree, fmt::format("tree root '{}' is a switch: trees are rooted at NPUs",
                                      in.text(tree, "root")));
    tr.index = in.number(tree, "index", 0);
    tr.nchunks = in.number(tree, "nchunks", 1);
    if (tr.nchunks > f.k)
      throw in.fail(tree, fmt::format("nchunks=\"{}\": a tree carries at most nchunkspernode = {} "
                                      "of its root's parts",
                                      tr.nchunks, f.k));
    parts[tr.root] += tr.nchunks;
    if (parts[tr.root] > f.k)
      throw in.fail(tree, fmt::format("the trees rooted at '{}' so far carry {} parts: every NPU's "
                                      "trees carry nchunkspernode = {}",
                                      in.text(tree, "root"), parts[tr.root], f.k));
    std::vector<char> reached(static_cast<size_t>(t.num_nodes()), 0);
    reached[tr.root] = 1;
    for (const pugi::xml_node send : tree.children("send")) {
      ForestTree::Send s;
      s.src = node_of(send, in.text(send, "src"));
      s.dst = node_of(send, in.text(send, "dst"));
      if (!reached[s.src])
        throw in.fail(send, fmt::format("'{}' sends before its tree reached it (sends are listed "
                                        "parent before child)",
                                        in.text(send, "src")));
      if (reached[s.dst] || !t.is_npu(s.dst))
        throw in.fail(send, fmt::format("'{}' is {}: a send goes to an NPU its tree has not "
                                        "reached",
                                        in.text(send, "dst"),
                                        t.is_npu(s.dst) ? "reached already" : "a switch"));
      const std::vector<std::string> names = path_names(in.text(send, "path"));
      std::vector<NodeId> path;
      std::vector<char> on_path(static_cast<size_t>(t.num_nodes()), 0);
      for (const std::string& name : names) {
        path.push_back(node_of(send, name));
        if (on_path[path.back()]++)  // (a simple path: at most every node once)
          throw in.fail(send, fmt::format("path visits '{}' twice", name));
      }
      if (path.size() < 2 || path.front() != s.src || path.back() != s.dst)
        throw in.fail(
            send, fmt::format("path \"{}\" does not lead from '{}' to '{}'", in.text(send, "path"),
                              in.text(send, "src"), in.text(send, "dst")));
      for (size_t i = 0; i + 1 < path.size(); ++i) {
        if (i > 0 && !t.passes_through(path[i]))
          throw in.fail(send, fmt::format("path passes NPU '{}', which does not relay (mark it "
                                          "`router: true` in the topology)",
                                          names[i]));
        const auto out = t.out_links(path[i]);
        const auto link = std::find_if(out.begin(), out.end(),
                                       [&](LinkId l) { return t.link(l).dst == path[i + 1]; });
        if (link == out.end())
          throw in.fail(send, fmt::format("no link from '{}' to '{}' in topology {}", names[i],
                                          names[i + 1], t.name()));
        s.route.push_back(*link);
      }
      reached[s.dst] = 1;
      tr.sends.push_back(std::move(s));
    }
    int reached_npus = 0;
    for (NodeId v = 0; v < t.num_npus(); ++v) reached_npus += reached[v];
    if (reached_npus != t.num_npus())
      throw in.fail(tree, fmt::format("tree {} of '{}' reaches {} of the {} NPUs", tr.index,
                                      in.text(tree, "root"), reached_npus, t.num_npus()));
    f.trees.push_back(std::move(tr));
  }
  if (f.trees.empty()) throw in.fail(algo, "<Algo> holds no <tree>");
  for (NodeId v = 0; v < t.num_npus(); ++v)
    if (parts[v] != f.k)
      throw in.fail(algo, fmt::format("the trees rooted at '{}' carry {} parts: every NPU's "
                                      "trees carry nchunkspernode = {}",
                                      t.node(v).name, parts[v], f.k));
  // Each root's trees in index order: its parts are dealt to them in that order.
  std::stable_sort(f.trees.begin(), f.trees.end(), [](const ForestTree& a, const ForestTree& b) {
    return a.root != b.root ? a.root < b.root : a.index < b.index;
  });
  return f;
}

Algorithm pipeline_forest(const topo::Topology& t, const ForestTrees& f, Bytes total_bytes,
                          int slices) {
  if (slices < 1 || int64_t{f.k} * slices > topo::kMaxChunksPerNpuOfAlgorithm)
    throw Error(fmt::format("{} slices of {} parts: give 1 to {} slices", slices, f.k,
                            topo::kMaxChunksPerNpuOfAlgorithm / f.k));
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, f.k * slices);
  c.validate(t);
  Algorithm a = empty_algorithm("forestcoll", t, c, c.whole_chunk_bytes_for(total_bytes),
                                LinkModel::Pipelined);
  size_t sends = 0;
  for (const ForestTree& tr : f.trees) sends += tr.sends.size() * static_cast<size_t>(tr.nchunks);
  a.reserve(sends * static_cast<size_t>(slices), 0, 0);
  // The first part of each tree: its root's parts dealt in index order.
  std::vector<int> first(f.trees.size(), 0);
  std::map<NodeId, int> dealt;
  for (size_t i = 0; i < f.trees.size(); ++i) {
    first[i] = dealt[f.trees[i].root];
    dealt[f.trees[i].root] += f.trees[i].nchunks;
  }
  // Each tree streams on a channel of its own (a sender serves each channel in list order, and
  // channels share its links by capacity): one tree's chunk waiting for a busy link does not hold
  // another tree's behind it.
  std::vector<uint16_t> channel(f.trees.size());
  for (size_t i = 0; i < f.trees.size(); ++i)
    channel[i] = static_cast<uint16_t>(std::min<size_t>(i + 1, UINT16_MAX));
  for (int s = 0; s < slices; ++s)
    for (size_t i = 0; i < f.trees.size(); ++i) {
      const ForestTree& tr = f.trees[i];
      for (int p = first[i]; p < first[i] + tr.nchunks; ++p) {
        const ChunkId chunk = (tr.root * f.k + p) * slices + s;
        for (const ForestTree::Send& send : tr.sends)
          a.add(chunk, send.src, send.dst, send.route, Op::Copy, {}, -1, -1, 0, channel[i]);
      }
    }
  a.method =
      fmt::format("ForestColl's spanning trees ({} trees, {} parts per NPU, {} slice{} each)",
                  f.trees.size(), f.k, slices, slices == 1 ? "" : "s");
  time(t, a);
  return a;
}

Algorithm import_forestcoll_trees(std::string_view xml, const topo::Topology& t,
                                  const std::string& file) {
  const ForestTrees f = read_forestcoll_trees(xml, t, file);
  return pipeline_forest(t, f, Bytes{t.num_npus()} * f.k << 20, 1);
}

}  // namespace tenet::synth
