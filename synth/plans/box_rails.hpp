// A flow plan for boxes on rails: equal boxes of NPUs (joined inside by direct links, a mesh of
// any shape) whose NPUs each reach the NPUs of the same position in the other boxes through
// switches (a NIC each into a scale-out network): ForestColl's multi-box AMD MI250 systems, where
// each box is a 16-GCD mesh of 200, 100 and 50 GB/s links and each GCD has its own NIC.
//
// The whole fabric's packing (synth/plans/tree_packing.hpp) is out of reach there from about 128
// NPUs (splitting the switch off takes more max-flows than its budget), and where it packs, its
// trees cross between boxes wherever the max-flows put them. The structure gives trees directly:
// the box's own packing, lifted. A chunk of the NPU at position g in box b crosses the scale-out
// network to position g of every other box (its rail), and inside each box it follows one of the
// box's trees rooted at g (the same tree in every box). Boxes whose NPUs link to the same switches
// form a pod (servers under one leaf): the chunk crosses to each other pod once, to the box at its
// root's place there, which hands it on over its rail to the rest of its pod, so the links between
// pods (an oversubscribed spine) carry it once per pod. Behind one switch, per root its data leaves
// its NIC once per other box, and per box, position g's trees carry the data of every box's g: at
// rate R per root the time is S / R with R the least of what the rails' links and the box's trees
// allow, for B boxes about min(NIC / (B - 1), box rate / B): within 3 % of the cut bound on
// ForestColl's MI250 x2 and at it from 4 boxes on (each box's NICs are then the cut).
#pragma once

#include <optional>

#include "synth/plans/tree_packing.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// The trees of boxes on rails for an All-Gather over every NPU of `t` (reversed, Reduce-Scatter),
// in TreePacking's terms (k, copies, routes, lanes and the congestion its fluid rates give), or
// nothing where `t` is not boxes on rails: at least two boxes (NPUs joined by NPU-to-NPU links)
// of at least two NPUs, all alike (the same links between the same positions, positions in NPU
// id order), every pair of same-position NPUs in different boxes joined through switches alone
// (topo::Router's least-cost routes, up to kMostRailRoutes of them), and a box that packs. Its
// congestion is
// what those routes load every link with, so its rate holds on any switched network.
std::optional<TreePacking> pack_boxes_on_rails(const topo::Topology& t);

}  // namespace tenet::synth
