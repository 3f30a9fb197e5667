// tenet workload gen: a preset's training iteration, or one collective per rank, as Chakra ET
// files.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "chakra/algorithm_files.hpp"
#include "chakra/et.hpp"
#include "cli/commands.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "topo/output_folder.hpp"

namespace tenet::cli {

// `tenet workload gen`.
void add_workload_gen_command(CLI::App& app) {
  static std::string model = "resnet50", output = "out/workload/workload", schedule = "1f1b";
  static int dp = 8, tp = 1, pp = 1, microbatches = 1;
  static int64_t batch = 0, sequence = 0;
  static std::string coll, size = "1GiB";
  static int npus = 0, root = 0;
  CLI::App* wl = app.add_subcommand("workload", "Generate Chakra ET training workloads");
  wl->require_subcommand(1);
  CLI::App* gen = wl->add_subcommand("gen",
                                     "Write a training iteration of a model preset, data x tensor "
                                     "x pipeline parallel, as <output>.<rank>.et\n"
                                     "(rank = t + TP * (p + PP * d))");
  gen->add_option("-m,--model", model,
                  fmt::format("Model preset: {}, or gpt:layers=L,hidden=H,heads=A[,vocab=V] (a "
                              "Megatron-LM GPT)",
                              fmt::join(sim::model_presets(), ", ")))
      ->capture_default_str();
  gen->add_option("--dp", dp, "Data-parallel replicas")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  gen->add_option("--tp", tp, "Tensor-parallel degree")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  gen->add_option("--pp", pp, "Pipeline stages")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  gen->add_option("--microbatches", microbatches, "Micro-batches per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  gen->add_option("--schedule", schedule, "Pipeline schedule: gpipe or 1f1b")
      ->capture_default_str();
  gen->add_option(
         "--batch", batch,
         "Samples per data-parallel replica and iteration (default: the preset's own: resnet50 64\n"
         "images, dlrm 2048 queries, transformers 1 sequence per micro-batch), split into\n"
         "--microbatches of whole samples; the effective batch is this x --dp")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  gen->add_option("--seq-len", sequence, "Tokens per sequence, for a transformer (default 2048)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  gen->add_option("-o,--output", output, "Output prefix")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {  // "" and "dir/" name no file
            return text.empty() || text.back() == '/'
                       ? "must name the files' prefix, e.g. out/workload (ranks are "
                         "<prefix>.<rank>.et)"
                       : "";
          },
          "PREFIX"));
  gen->add_option("-c,--coll", coll,
                  "Instead of a model: one collective per rank (all-reduce, all-gather, ...), the "
                  "microbenchmark\n"
                  "workload ASTRA-sim's examples have; with --size and --npus");
  gen->add_option("-s,--size", size, "With --coll: the collective's size (NCCL's convention)")
      ->capture_default_str();
  gen->add_option("-n,--npus", npus, "With --coll: the ranks")->check(CLI::Range(2, 1 << 20));
  gen->add_option("--root", root, "With --coll: the root of a rooted collective")
      ->capture_default_str();
  gen->callback([gen] {
    auto write_ranks = [](const std::vector<chakra::EtFile>& files) {  // <output>.<rank>.et
      // The ranks are one set (topo/output_folder.hpp): written whole, a larger earlier set's extra
      // ranks go.
      const std::filesystem::path path(output);
      topo::OutputFolder folder(path.parent_path().empty() ? "." : path.parent_path().string());
      chakra::stage_et_set(files, folder, path.filename().string());
      folder.commit();
    };
    if (!coll.empty()) {
      for (const char* flag : {"--model", "--dp", "--tp", "--pp", "--microbatches", "--schedule",
                               "--batch", "--seq-len"})
        if (gen->count(flag) > 0)
          throw Error(fmt::format("{} shapes a model preset; --coll writes one collective", flag));
      if (npus < 2) throw Error("--coll needs --npus (the ranks, at least 2)");
      const synth::CollectiveKind kind = synth::parse_collective(coll);
      const Bytes bytes = size_flag("--size", size);
      const auto files = sim::collective_microbenchmark(kind, bytes, npus, root);
      write_ranks(files);
      const Bytes comm_size = sim::comm_size_of_collective_bytes(kind, bytes, npus);
      fmt::print(
          "wrote {} ranks: {} ... {}: one {} of {} each (a COMM_COLL node, as ASTRA-sim's "
          "microbenchmarks){}\n",
          files.size(), chakra::et_path(output, 0), chakra::et_path(output, npus - 1),
          synth::to_string(kind), format_bytes(bytes),
          comm_size == bytes
              ? std::string()
              : fmt::format("; comm_size {}, each rank's input, as Chakra and ASTRA-sim count it",
                            format_bytes(comm_size)));
      return;
    }
    const sim::BatchShape shape = sim::batch_shape(model, {batch, sequence}, microbatches);
    const auto files = sim::training_iteration(
        sim::model_preset(model, shape),
        sim::Parallelism{dp, tp, pp, microbatches, sim::parse_schedule(schedule)});
    write_ranks(files);
    fmt::print("wrote {} ranks: {} ... {}\n", files.size(), chakra::et_path(output, 0),
               chakra::et_path(output, static_cast<int>(files.size()) - 1));
    fmt::print("{} (dp {} x tp {} x pp {}): {}\n", model, dp, tp, pp,
               sim::describe_batch(model, shape, dp, microbatches));
  });
}

}  // namespace tenet::cli
