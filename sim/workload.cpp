#include "sim/workload.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>

#include "sim/gpt_model.hpp"
#include "sim/system.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"
#include "topo/suggest.hpp"

namespace tenet::sim {

const std::vector<std::string>& model_presets() {
  static const std::vector<std::string> names{"resnet50", "gpt3-175b", "transformer-1t", "dlrm",
                                              "moe-gpt"};
  return names;
}

bool is_model_preset(const std::string& name) {
  const auto& names = model_presets();
  return std::find(names.begin(), names.end(), name) != names.end() ||
         parse_gpt_spec(name).has_value();
}

namespace {

// Counts a preset multiplies out of its shape (batch x sequence length: up to 2^48 tokens) are
// doubles; one becomes an integer only below 2^62, so that a product past 2^63 is refused, naming
// what it counts, instead of converting to an undefined value.
constexpr double kLargestCount = 0x1p62;
int64_t whole(double count, const std::string& model, const char* what) {
  if (!(count < kLargestCount))
    throw Error(fmt::format("{}: {} would be {:.4g}, past 2^62: a smaller batch or sequence length",
                            model, what, count));
  return static_cast<int64_t>(count);
}

// A transformer of `layers` layers of width `d`, fp16, `tokens` tokens per replica.
Model transformer(const std::string& name, int layers, double d, double tokens) {
  Model m{name, {}};
  const double params = 12.0 * d * d;
  const Bytes activations = whole(tokens * d * 2, name, "a layer's activations (bytes)");
  for (int l = 0; l < layers; ++l)
    m.layers.push_back({fmt::format("layer{}", l), static_cast<Bytes>(params * 2),
                        2 * params * tokens, 4 * params * tokens, activations, 0});
  return m;
}

}  // namespace

namespace {
bool has_sequences(const std::string& preset) {
  return preset == "gpt3-175b" || preset == "transformer-1t" || preset == "moe-gpt" ||
         parse_gpt_spec(preset).has_value();
}
const char* sample_word(const std::string& preset) {
  return preset == "resnet50" ? "images" : preset == "dlrm" ? "queries" : "sequences";
}
}  // namespace

BatchShape batch_shape(const std::string& preset, BatchShape asked, int microbatches) {
  model_preset(preset);  // an unknown name fails here
  for (int64_t v : {asked.batch, asked.sequence})
    if (v < 0 || v > (int64_t{1} << 24))
      throw Error(fmt::format("batch size and sequence length must lie in [1, 2^24], not {}", v));
  if (asked.sequence > 0 && !has_sequences(preset))
    throw Error(fmt::format(
        "{} has no sequence length (the transformers do: gpt3-175b, transformer-1t, moe-gpt)",
        preset));
  if (microbatches < 1)
    throw Error(fmt::format("micro-batches must be at least 1, not {}", microbatches));
  BatchShape s;
  // A transformer's own batch is one sequence per micro-batch (Megatron-LM's smallest).
  s.batch = asked.batch > 0        ? asked.batch
            : preset == "resnet50" ? 64
            : preset == "dlrm"     ? 2048
                                   : microbatches;
  // A micro-batch holds whole samples: a fraction of one is no work a GPU runs.
  if (s.batch % microbatches != 0) {
    const int64_t lower = s.batch / microbatches * microbatches;
    throw Error(fmt::format(
        "{} batch of {} {} per replica does not split into {} micro-batches of whole {}: give "
        "a batch that is a multiple of {} (such as {}), or fewer micro-batches",
        asked.batch > 0 ? "a" : fmt::format("{}'s own", preset), s.batch, sample_word(preset),
        microbatches, sample_word(preset), microbatches,
        lower > 0 ? fmt::format("{} or {}", lower, lower + microbatches)
                  : fmt::format("{}", microbatches)));
  }
  s.sequence = has_sequences(preset) ? (asked.sequence > 0 ? asked.sequence : 2048) : 0;
  return s;
}

std::string describe_batch(const std::string& preset, BatchShape shape, int dp, int microbatches) {
  const BatchShape s = batch_shape(preset, shape, microbatches);
  std::string out = fmt::format("batch {} per replica x {} replica{} = {} {} per iteration",
                                s.batch, dp, dp == 1 ? "" : "s", s.batch * dp, sample_word(preset));
  if (s.sequence > 0) {
    // Up to 2^24 x 2^20 x 2^24: past 2^63, the count in floating point.
    const std::optional<int64_t> tokens = topo::checked_mul(s.batch * dp, s.sequence);
    out += tokens ? fmt::format(" of {} tokens ({} tokens)", s.sequence, *tokens)
                  : fmt::format(" of {} tokens ({:.4g} tokens)", s.sequence,
                                static_cast<double>(s.batch * dp) * s.sequence);
  }
  if (microbatches > 1) out += fmt::format(", micro-batch {}", s.batch / microbatches);
  return out;
}

Model model_preset(const std::string& name, BatchShape shape) {
  Model m{name, {}};
  if (name == "resnet50") {
    // 25.6 M parameters (fp32), ~4.1 GFLOP per image forward, batch 64; backward twice forward.
    const double images = static_cast<double>(shape.batch > 0 ? shape.batch : 64);
    const double forward = 4.1e9 * images;
    const struct {
      const char* stage;
      double params_m, share;
    } stages[] = {{"conv1+layer1", 0.22, 0.20},
                  {"layer2", 1.22, 0.25},
                  {"layer3", 7.10, 0.35},
                  {"layer4", 14.96, 0.18},
                  {"fc", 2.05, 0.02}};
    for (const auto& s : stages)
      m.layers.push_back({s.stage, static_cast<Bytes>(s.params_m * 1e6 * 4), forward * s.share,
                          2 * forward * s.share, static_cast<Bytes>(images * 4e6 * s.share), 0});
    return m;
  }
  const double tokens = static_cast<double>(std::max<int64_t>(shape.batch, 1) *
                                            (shape.sequence > 0 ? shape.sequence : 2048));
  if (const std::optional<GptShape> gpt = parse_gpt_spec(name))
    return gpt_model(name, *gpt, std::max<int64_t>(shape.batch, 1),
                     shape.sequence > 0 ? shape.sequence : 2048);
  if (name == "gpt3-175b") return transformer(name, 96, 12288, tokens);
  if (name == "transformer-1t") return transformer(name, 128, 25600, tokens);
  if (name == "moe-gpt") {
    // Width d = 2048 fp16. Attention (4 d^2 parameters) is data parallel; each token's feed-forward
    // runs on 2 of the experts (8 d^2 each), which live on their ranks (expert parallel: their
    // gradients are not All-Reduced). Dispatch sends each token's activations (d x 2 bytes) to its
    // 2 experts and combine brings them back: the layer's one All-to-All after its forward (and
    // before its backward) carries both, Zipf(1.2) skewed.
    const double d = 2048;
    Model moe = transformer(name, 24, d, tokens);
    for (Layer& l : moe.layers) {
      l.parameters = static_cast<Bytes>(4 * d * d * 2);
      l.forward_flops = 2 * (4 * d * d + 2 * 8 * d * d) * tokens;
      l.backward_flops = 2 * l.forward_flops;
      l.all_to_all =
          whole(2 * 2 * tokens * d * 2, name,
                "a layer's All-to-All (bytes)");  // (dispatch + combine) x top-2 x d x fp16
      l.traffic = "zipf:1.2";
    }
    return moe;
  }
  if (name == "dlrm") {
    // Bottom MLP, 26 embedding tables of 10 M x 128 fp32 rows looked up for a batch of 2048 and
    // exchanged by All-to-All (model parallel), top MLP; the MLPs are data parallel.
    const double batch = static_cast<double>(shape.batch > 0 ? shape.batch : 2048);
    m.layers.push_back({"bottom-mlp", static_cast<Bytes>(0.5e6 * 4), 2 * 0.5e6 * batch,
                        4 * 0.5e6 * batch, static_cast<Bytes>(batch * 128 * 4), 0});
    m.layers.push_back({"embeddings", 0, 26 * batch * 128, 26 * batch * 128,
                        static_cast<Bytes>(26 * batch * 128 * 4),
                        static_cast<Bytes>(26 * batch * 128 * 4)});
    m.layers.push_back({"top-mlp", static_cast<Bytes>(2.5e6 * 4), 2 * 2.5e6 * batch,
                        4 * 2.5e6 * batch, static_cast<Bytes>(batch * 4), 0});
    return m;
  }
  throw Error(fmt::format("unknown model '{}'{} (known: {})", name,
                          did_you_mean(name, model_presets()), fmt::join(model_presets(), ", ")));
}

namespace {

class Generator {
 public:
  Generator(const Model& m, const Parallelism& par) : m_(m), par_(par), files_(par.files()) {
    for (auto& f : files_) f.metadata.set_version("0.0.4");
  }

  std::vector<chakra::EtFile> run() {
    for (int d = 0; d < (par_.first_replica_only ? 1 : par_.dp); ++d)
      for (int p = 0; p < par_.pp; ++p)
        for (int t = 0; t < par_.tp; ++t) rank_program(t, p, d);
    return std::move(files_);
  }

 private:
  int rank_of(int t, int p, int d) const { return t + par_.tp * (p + par_.pp * d); }
  // The layers of stage p: [first, last).
  std::pair<size_t, size_t> stage(int p) const {
    const size_t n = m_.layers.size();
    return {n * p / par_.pp, n * (p + 1) / par_.pp};
  }

  chakra::Node& node(int r, ChakraProtoMsg::NodeType type, const std::string& name) {
    chakra::Node& n = files_[r].nodes.emplace_back();
    n.set_id(files_[r].nodes.size() - 1);
    n.set_type(type);
    n.set_name(name);
    return n;
  }
  static std::string group_string(const std::vector<int>& g) {
    return fmt::format("{}", fmt::join(g, ","));
  }

  // `kind`: the group's parallelism ("tp", "dp", "ep"), its tenet_group (the simulator's
  // per-collective breakdown groups by it).
  uint64_t collective(int r, ChakraProtoMsg::CollectiveCommType type, const std::string& name,
                      Bytes size, const std::vector<int>& group, const char* kind, uint64_t after,
                      const std::string& traffic = "") {
    chakra::Node& n = node(r, ChakraProtoMsg::COMM_COLL_NODE, name);
    n.add_data_deps(after);
    chakra::set_int(n, "comm_type", static_cast<int64_t>(type));
    chakra::set_int(n, "comm_size", static_cast<int64_t>(std::max<Bytes>(size, 1)));
    chakra::set_string(n.add_attr(), "tenet_ranks", group_string(group));
    chakra::set_string(n.add_attr(), "tenet_group", kind);
    if (!traffic.empty()) chakra::set_string(n.add_attr(), "tenet_traffic", traffic);
    return n.id();
  }

  void rank_program(int t, int p, int d) {
    const int r = rank_of(t, p, d);
    const int mbs = par_.microbatches;
    const double split = static_cast<double>(par_.tp) * mbs;  // compute per micro-batch and TP rank
    std::vector<int> tp_group, dp_group, all;
    for (int k = 0; k < par_.tp; ++k) tp_group.push_back(rank_of(k, p, d));
    for (int k = 0; k < par_.dp; ++k) dp_group.push_back(rank_of(t, p, k));
    for (int k = 0; k < par_.ranks(); ++k) all.push_back(k);
    const std::pair<size_t, size_t> layers = stage(p);
    const size_t first = layers.first,
                 last = layers.second;  // not a structured binding: clang 14 cannot capture one
    int64_t chain = -1;                 // the compute stream's order
    auto compute = [&](const std::string& name, double flops, Bytes bytes,
                       std::vector<uint64_t> deps) {
      if (!(flops < kLargestCount))
        throw Error(
            fmt::format("{}: rank {} node '{}': {:.4g} operations, past 2^62: a smaller "
                        "batch or sequence length, or more ranks",
                        m_.name, r, name, flops));
      chakra::Node& n = node(r, ChakraProtoMsg::COMP_NODE, name);
      chakra::set_int(n, "num_ops", static_cast<int64_t>(flops));
      chakra::set_int(n, "tensor_size", static_cast<int64_t>(std::max<Bytes>(bytes, 1)));
      for (uint64_t dep : deps) n.add_data_deps(dep);
      if (chain >= 0) n.add_ctrl_deps(static_cast<uint64_t>(chain));
      chain = static_cast<int64_t>(n.id());
      return n.id();
    };
    // Pipeline messages: tag = ((micro-batch * 2 + direction) * PP + stage) * TP + t, per replica.
    auto tag = [&](int mb, int dir, int s) {
      return static_cast<uint64_t>(((mb * 2 + dir) * par_.pp + s) * par_.tp + t + 1);
    };
    // A layer's forward (or its recomputation): its matmuls, its elementwise kernels, and the
    // All-Reduce of its output over the tensor-parallel group.
    auto layer_forward = [&](const Layer& layer, double flops, const std::string& what,
                             std::vector<uint64_t> in) {
      uint64_t out =
          compute(what, flops / split, layer.activations / static_cast<Bytes>(split), in);
      if (const Bytes moved = elementwise(layer, 1); moved > 0)
        out = compute(what + " elementwise", 0, moved, {out});
      if (par_.tp > 1)
        out = collective(r, ChakraProtoMsg::ALL_REDUCE, "tp all-reduce " + what,
                         layer.activations / mbs, tp_group, "tp", out);
      return out;
    };
    // A stage boundary of `bytes` per micro-batch: whole from each tensor-parallel rank, or its
    // 1/TP share, All-Gathered after it arrives (Model::scatter_boundaries).
    const bool scatter = m_.scatter_boundaries && par_.tp > 1;
    auto on_wire = [&](Bytes bytes) {
      return std::max<Bytes>(scatter ? bytes / par_.tp : bytes, 1);
    };
    auto receive = [&](const std::string& what, int peer, Bytes bytes, uint64_t tag_value) {
      chakra::Node& rv = node(r, ChakraProtoMsg::COMM_RECV_NODE, "recv " + what);
      chakra::set_int(rv, "comm_src", static_cast<int64_t>(peer));
      chakra::set_int(rv, "comm_size", static_cast<int64_t>(on_wire(bytes)));
      chakra::set_int(rv, "comm_tag", static_cast<int64_t>(tag_value));
      chakra::set_string(rv.add_attr(), "tenet_group", "pp");
      // Posted when the rank gets to it, after the compute before it (as a program issues its
      // receives in order), not from the start: it is communication only from then.
      if (chain >= 0) rv.add_ctrl_deps(static_cast<uint64_t>(chain));
      if (!scatter) return rv.id();
      return collective(r, ChakraProtoMsg::ALL_GATHER, "tp all-gather " + what, on_wire(bytes),
                        tp_group, "tp", rv.id());
    };
    auto send = [&](const std::string& what, int peer, Bytes bytes, uint64_t tag_value,
                    uint64_t after) {
      chakra::Node& sn = node(r, ChakraProtoMsg::COMM_SEND_NODE, "send " + what);
      sn.add_data_deps(after);
      chakra::set_int(sn, "comm_dst", static_cast<int64_t>(peer));
      chakra::set_int(sn, "comm_size", static_cast<int64_t>(on_wire(bytes)));
      chakra::set_int(sn, "comm_tag", static_cast<int64_t>(tag_value));
      chakra::set_string(sn.add_attr(), "tenet_group", "pp");
    };
    const Bytes boundary = m_.layers[last - 1].activations / static_cast<Bytes>(mbs);
    const Bytes entry = first > 0 ? m_.layers[first - 1].activations / static_cast<Bytes>(mbs) : 0;
    auto forward = [&](int mb) {
      std::vector<uint64_t> in;
      if (p > 0)
        in.push_back(receive(fmt::format("activations mb{}", mb), rank_of(t, p - 1, d), entry,
                             tag(mb, 0, p)));
      for (size_t l = first; l < last; ++l) {
        const Layer& layer = m_.layers[l];
        uint64_t out = layer_forward(layer, layer.forward_flops,
                                     fmt::format("fwd {} mb{}", layer.name, mb), in);
        if (layer.all_to_all > 0)
          out = collective(r, ChakraProtoMsg::ALL_TO_ALL,
                           fmt::format("all-to-all fwd {} mb{}", layer.name, mb),
                           layer.all_to_all / mbs, all, "ep", out, layer.traffic);
        in = {out};
      }
      if (p + 1 < par_.pp)
        send(fmt::format("activations mb{}", mb), rank_of(t, p + 1, d), boundary, tag(mb, 0, p + 1),
             in[0]);
      forward_out_[mb] = in[0];
    };
    auto backward = [&](int mb) {
      std::vector<uint64_t> in{forward_out_[mb]};
      if (p + 1 < par_.pp)
        in.push_back(receive(fmt::format("gradients mb{}", mb), rank_of(t, p + 1, d), boundary,
                             tag(mb, 1, p)));
      for (size_t l = last; l-- > first;) {
        const Layer& layer = m_.layers[l];
        if (layer.all_to_all > 0)
          in = {collective(r, ChakraProtoMsg::ALL_TO_ALL,
                           fmt::format("all-to-all bwd {} mb{}", layer.name, mb),
                           layer.all_to_all / mbs, all, "ep", in.back(), layer.traffic)};
        if (layer.recompute_flops > 0)
          in = {layer_forward(layer, layer.recompute_flops,
                              fmt::format("recompute {} mb{}", layer.name, mb), in)};
        const std::string what = fmt::format("bwd {} mb{}", layer.name, mb);
        uint64_t out = compute(what, layer.backward_flops / split,
                               layer.activations / static_cast<Bytes>(split), in);
        if (const Bytes moved = elementwise(layer, 2); moved > 0)
          out = compute(what + " elementwise", 0, moved, {out});
        if (par_.tp > 1)
          out = collective(r, ChakraProtoMsg::ALL_REDUCE,
                           fmt::format("tp all-reduce bwd {} mb{}", layer.name, mb),
                           layer.activations / mbs, tp_group, "tp", out);
        in = {out};
        if (mb == last_backward_ && par_.dp > 1 && layer.parameters > 0)
          collective(r, ChakraProtoMsg::ALL_REDUCE, fmt::format("dp all-reduce {}", layer.name),
                     layer.parameters / par_.tp, dp_group, "dp", out);
      }
      if (p > 0)
        send(fmt::format("gradients mb{}", mb), rank_of(t, p - 1, d), entry, tag(mb, 1, p - 1),
             in[0]);
    };
    forward_out_.assign(mbs, 0);
    // The micro-batch whose backward comes last on this rank carries the DP All-Reduces: GPipe
    // runs the backwards from the last micro-batch to the first, 1F1B in order.
    last_backward_ = par_.schedule == PipelineSchedule::GPipe ? 0 : mbs - 1;
    if (par_.schedule == PipelineSchedule::GPipe) {
      for (int mb = 0; mb < mbs; ++mb) forward(mb);
      for (int mb = mbs; mb-- > 0;) backward(mb);
    } else {
      const int warmup = std::min(mbs, par_.pp - p - 1);
      int f = 0, b = 0;
      for (; f < warmup; ++f) forward(f);
      for (; f < mbs; ++f, ++b) {
        forward(f);
        backward(b);
      }
      for (; b < mbs; ++b) backward(b);
    }
  }

  // The bytes a tensor-parallel rank's elementwise kernels move in one micro-batch's pass of
  // `layer`, `times` its forward's (Layer::elementwise_bytes).
  Bytes elementwise(const Layer& layer, int times) const {
    const Bytes mbs = par_.microbatches;
    return times * (layer.elementwise_bytes / (mbs * par_.tp) + layer.replicated_bytes / mbs);
  }

  const Model& m_;
  const Parallelism& par_;
  std::vector<chakra::EtFile> files_;
  std::vector<uint64_t> forward_out_;
  int last_backward_ = 0;
};

}  // namespace

PipelineSchedule parse_schedule(const std::string& name) {
  if (name == "1f1b") return PipelineSchedule::OneFOneB;
  if (name == "gpipe") return PipelineSchedule::GPipe;
  throw Error(fmt::format("unknown pipeline schedule '{}' (gpipe or 1f1b)", name));
}

Parallelism layout(int npus, int tp, int pp, int microbatches, PipelineSchedule schedule) {
  const int64_t group =
      static_cast<int64_t>(tp) * pp;  // 64 bits: tp = pp = 65536 must not wrap to 0
  if (tp < 1 || pp < 1 || npus % group != 0)
    throw Error(
        fmt::format("{} NPUs do not split into tensor {} x pipeline {} groups", npus, tp, pp));
  return {npus / (tp * pp), tp, pp, microbatches, schedule};
}

std::vector<chakra::EtFile> training_iteration(const Model& m, const Parallelism& par) {
  if (par.dp < 1 || par.tp < 1 || par.pp < 1 || par.microbatches < 1)
    throw Error(
        "data-, tensor- and pipeline-parallel degrees and micro-batches must be at least 1");
  if (m.layers.empty()) throw Error(fmt::format("model '{}' has no layers", m.name));
  if (static_cast<size_t>(par.pp) > m.layers.size())
    throw Error(fmt::format("{} pipeline stages for {} layers: a stage needs at least one layer",
                            par.pp, m.layers.size()));
  if (static_cast<int64_t>(par.dp) * par.tp * par.pp > 1'000'000)
    throw Error("more than a million ranks");
  return Generator(m, par).run();
}

std::vector<chakra::EtFile> collective_microbenchmark(synth::CollectiveKind kind, Bytes size,
                                                      int ranks, int root) {
  if (ranks < 2) throw Error(fmt::format("a collective needs at least 2 ranks, not {}", ranks));
  if (size < 1) throw Error("a collective moves at least 1 byte");
  if (root < 0 || root >= ranks)
    throw Error(fmt::format("root {} is not one of the {} ranks", root, ranks));
  ChakraProtoMsg::CollectiveCommType type = ChakraProtoMsg::ALL_REDUCE;
  switch (kind) {
    case synth::CollectiveKind::AllReduce:
      type = ChakraProtoMsg::ALL_REDUCE;
      break;
    case synth::CollectiveKind::AllGather:
      type = ChakraProtoMsg::ALL_GATHER;
      break;
    case synth::CollectiveKind::ReduceScatter:
      type = ChakraProtoMsg::REDUCE_SCATTER;
      break;
    case synth::CollectiveKind::AllToAll:
      type = ChakraProtoMsg::ALL_TO_ALL;
      break;
    case synth::CollectiveKind::Broadcast:
      type = ChakraProtoMsg::BROADCAST;
      break;
    case synth::CollectiveKind::Reduce:
      type = ChakraProtoMsg::REDUCE;
      break;
    case synth::CollectiveKind::Gather:
      type = ChakraProtoMsg::GATHER;
      break;
    case synth::CollectiveKind::Scatter:
      type = ChakraProtoMsg::SCATTER;
      break;
  }
  const bool rooted =
      kind == synth::CollectiveKind::Broadcast || kind == synth::CollectiveKind::Reduce ||
      kind == synth::CollectiveKind::Gather || kind == synth::CollectiveKind::Scatter;
  const Bytes per_rank = comm_size_of_collective_bytes(kind, size, ranks);
  std::vector<chakra::EtFile> files(static_cast<size_t>(ranks));
  for (chakra::EtFile& f : files) {
    f.metadata.set_version("0.0.4");
    chakra::Node& n = f.nodes.emplace_back();
    n.set_id(0);
    n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
    n.set_name(fmt::format("{} of {}", synth::to_string(kind), format_bytes(size)));
    auto* cpu = n.add_attr();
    cpu->set_name("is_cpu_op");
    cpu->set_bool_val(false);
    chakra::set_int(n, "comm_type", static_cast<int64_t>(type));
    chakra::set_int(n, "comm_size", static_cast<int64_t>(per_rank));
    if (rooted) chakra::set_int(n, "root", root);
  }
  return files;
}

PresetIteration preset_iteration(const std::string& preset, int npus, int tp, int pp,
                                 int microbatches, const std::string& schedule, BatchShape asked,
                                 bool first_replica_only) {
  Parallelism par = layout(npus, tp, pp, microbatches, parse_schedule(schedule));
  par.first_replica_only = first_replica_only;
  const BatchShape shape = batch_shape(preset, asked, par.microbatches);
  return {training_iteration(model_preset(preset, shape), par),
          fmt::format("{} (dp {} x tp {} x pp {}, {} micro-batch{}, {}; {})", preset, par.dp,
                      par.tp, par.pp, par.microbatches, par.microbatches == 1 ? "" : "es", schedule,
                      describe_batch(preset, shape, par.dp, par.microbatches))};
}

}  // namespace tenet::sim
