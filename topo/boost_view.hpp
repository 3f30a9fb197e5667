// A Boost.Graph view of a Topology: a compressed-sparse-row graph whose edge property is the
// link id, forward or reversed. Internal to topo/.
#pragma once

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "topo/topology.hpp"

namespace tenet::topo::detail {

using BoostGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, LinkId>;
using BoostVertex = boost::graph_traits<BoostGraph>::vertex_descriptor;
using BoostEdge = boost::graph_traits<BoostGraph>::edge_descriptor;

BoostGraph boost_view(const Topology& t, bool reversed = false);

}  // namespace tenet::topo::detail
