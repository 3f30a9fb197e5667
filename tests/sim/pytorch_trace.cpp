#include "tests/sim/pytorch_trace.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <string>

namespace tenet::testing {
namespace {

using chakra::Node;

Node& add(chakra::EtFile& f, uint64_t id, ChakraProtoMsg::NodeType type, const std::string& name,
          bool cpu, std::initializer_list<uint64_t> data, std::initializer_list<uint64_t> ctrl) {
  Node& n = f.nodes.emplace_back();
  n.set_id(id);
  n.set_type(type);
  n.set_name(name);
  for (uint64_t d : data) n.add_data_deps(d);
  for (uint64_t d : ctrl) n.add_ctrl_deps(d);
  // The converter's per-operator attributes (src/converter/pytorch_converter.py upstream).
  chakra::set_int(n, "rf_id", static_cast<int64_t>(id) + 1000);
  chakra::set_string(n.add_attr(), "op_schema", "");
  auto* a = n.add_attr();
  a->set_name("is_cpu_op");
  a->set_bool_val(cpu);
  return n;
}

}  // namespace

std::vector<chakra::EtFile> pytorch_like_trace(int ranks, Bytes all_reduce, Bytes broadcast) {
  std::vector<chakra::EtFile> files(ranks);
  for (int r = 0; r < ranks; ++r) {
    chakra::EtFile& f = files[r];
    chakra::set_string(f.metadata.add_attr(), "schema", "1.0.2-chakra.0.0.4");
    Node& pg = add(f, 2, ChakraProtoMsg::METADATA_NODE,
                   "[pytorch|profiler|execution_trace|process_group]", true, {}, {1});
    pg.mutable_inputs()->set_values(
        fmt::format("['[{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": "
                    "\"cuda:nccl\", \"ranks\": [], "
                    "\"group_size\": {}}}, {{\"pg_name\": \"1\", \"pg_desc\": \"pair\", "
                    "\"backend_config\": \"cuda:nccl\", "
                    "\"ranks\": [0, 1], \"group_size\": 2}}]']",
                    ranks));
    add(f, 10, ChakraProtoMsg::COMP_NODE, "aten::linear", true, {}, {3}).set_duration_micros(10);
    Node& gemm = add(f, 11, ChakraProtoMsg::COMP_NODE, "ampere_sgemm_128x64_tn", false, {10}, {10});
    gemm.set_duration_micros(20);
    chakra::set_int(gemm, "stream", 7);
    // The host-side c10d operator that launches the NCCL kernel: a COMM_COLL node on the CPU,
    // without comm_type or comm_size.
    add(f, 16, ChakraProtoMsg::COMM_COLL_NODE, "c10d::allreduce_(0)", true, {10}, {})
        .set_duration_micros(3);
    Node& ar = add(f, 12, ChakraProtoMsg::COMM_COLL_NODE, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                   false, {11, 16}, {10});
    chakra::set_int(ar, "comm_type", ChakraProtoMsg::ALL_REDUCE);
    chakra::set_int(ar, "comm_size", all_reduce);
    chakra::set_string(ar.add_attr(), "pg_name", "0");
    const bool in_pair = r < 2;
    if (in_pair) {
      Node& bc = add(f, 13, ChakraProtoMsg::COMM_COLL_NODE, "ncclDevKernel_Broadcast_RING_LL",
                     false, {12}, {});
      chakra::set_int(bc, "comm_type", ChakraProtoMsg::BROADCAST);
      chakra::set_int(bc, "comm_size", broadcast);
      chakra::set_string(bc.add_attr(), "pg_name", "1");
    }
    add(f, 14, ChakraProtoMsg::COMP_NODE, "Optimizer.step#SGD.step", true,
        {in_pair ? uint64_t{13} : uint64_t{12}}, {99})
        .set_duration_micros(5);
    Node& tail =
        add(f, 15, ChakraProtoMsg::COMP_NODE, "vectorized_elementwise_kernel", false, {}, {14});
    tail.set_duration_micros(1);
    chakra::set_int(tail, "stream", 8);
  }
  return files;
}

}  // namespace tenet::testing
