// A small Chakra trace shaped like what Chakra's PyTorch converter writes (its feeder test trace,
// tests/data/feeder_tests_trace.tar.gz upstream, is a 3643-node rank-0 ET of a DDP run), built here
// rather than copied: a GlobalMetadata with the host trace's schema; a process-group METADATA node;
// CPU operators (is_cpu_op) and GPU kernels on two streams; ctrl_deps naming operator parents,
// some of which the converter pruned from the file; an All-Reduce on the default group and a
// Broadcast on process group "1" (ranks 0 and 1).
//
// Per rank, by id: 2 process-group table; 10 CPU "aten::linear" 10 us (ctrl 3, absent); 11 GPU
// "sgemm" 20 us on stream 7 (data 10, ctrl 10); 16 host-side "c10d::allreduce_(0)" 3 us, a
// COMM_COLL node marked is_cpu_op (data 10); 12 All-Reduce of `all_reduce` bytes (data 11, 16);
// 13 Broadcast of `broadcast` bytes on group "1", on ranks 0 and 1 only (data 12); 14 CPU
// "Optimizer.step" 5 us (data 13, or 12 without 13; ctrl 99, absent); 15 GPU "elementwise" 1 us on
// stream 8 (ctrl 14: after the optimizer only if control dependencies are followed).
#pragma once

#include <vector>

#include "chakra/et.hpp"
#include "topo/units.hpp"

namespace tenet::testing {

std::vector<chakra::EtFile> pytorch_like_trace(int ranks, Bytes all_reduce = 1 << 20,
                                               Bytes broadcast = 64 << 10);

}  // namespace tenet::testing
