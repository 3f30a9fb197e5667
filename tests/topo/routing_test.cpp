#include "topo/routing.hpp"

#include <gtest/gtest.h>

#include <random>
#include <span>
#include <vector>

#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::topo {
namespace {

TEST(Routing, ThroughASwitch) {
  const Topology t = generate("switch:4,bw=50GB/s,lat=0.5us");
  Router r(t);
  auto route = r.route(0, 3);
  ASSERT_TRUE(route);
  ASSERT_EQ(route->links.size(), 2u);
  EXPECT_EQ(t.link(route->links[0]).src, 0);
  EXPECT_EQ(t.link(route->links[0]).dst, 4);
  EXPECT_EQ(t.link(route->links[1]).dst, 3);
  EXPECT_EQ(route->latency, 1'000'000);
  EXPECT_EQ(route->bottleneck, 50'000'000'000);
}

TEST(Routing, NeverThroughAnNpuThatIsNoRouter) {
  const Topology t = generate("line:3");
  Router r(t);
  EXPECT_FALSE(r.route(0, 2));
  EXPECT_TRUE(r.route(0, 1));
  const Topology routed = generate("line:3,router=true");
  EXPECT_EQ(Router(routed).route(0, 2)->links.size(), 2u);
}

TEST(Routing, EqualCostRoutesOnAMeshOfRouters) {
  const Topology t = generate("mesh2d:3x3,router=true");
  Router r(t);
  // Corner to corner: 4 hops, C(4,2) = 6 minimal routes.
  auto routes = r.equal_cost_routes(0, 8, 100);
  ASSERT_EQ(routes.size(), 6u);
  for (const Route& route : routes) {
    EXPECT_EQ(route.links.size(), 4u);
    NodeId at = 0;
    for (LinkId l : route.links) {
      EXPECT_EQ(t.link(l).src, at);
      at = t.link(l).dst;
    }
    EXPECT_EQ(at, 8);
  }
  EXPECT_TRUE(std::is_sorted(routes.begin(), routes.end(),
                             [](const Route& a, const Route& b) { return a.links < b.links; }));
  EXPECT_EQ(r.route(0, 8)->links, routes.front().links);
  EXPECT_EQ(r.equal_cost_routes(0, 8, 2).size(), 2u);
}

TEST(Routing, LatencyBeforeHops) {
  // 0 -> 1 directly is slow (10 us); 0 -> switch -> 1 takes 2 us over two hops.
  TopologyBuilder b;
  b.add_npu();
  b.add_npu();
  NodeId s = b.add_switch();
  b.add_bidirectional(0, 1, 1'000'000'000, 10'000'000);
  b.add_bidirectional(0, s, 1'000'000'000, 1'000'000);
  b.add_bidirectional(s, 1, 1'000'000'000, 1'000'000);
  const Topology t = b.build();
  auto route = Router(t).route(0, 1);
  ASSERT_TRUE(route);
  EXPECT_EQ(route->links.size(), 2u);
  EXPECT_EQ(route->latency, 2'000'000);
}

TEST(Routing, DeterministicAcrossCalls) {
  const Topology t = generate("leafspine:4x4,spines=4");
  Router r(t);
  auto a = r.route(0, 15), b = r.route(0, 15);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->links, b->links);
  EXPECT_EQ(a->links.size(), 4u);                         // npu -> leaf -> spine -> leaf -> npu
  EXPECT_EQ(r.equal_cost_routes(0, 15, 100).size(), 4u);  // one per spine
}

// NPU 0 reaches NPU 1 through sw0 on a thin 36 GB/s link (1 us in all) or through sw1 on 200 GB/s
// links (2.4 us): for 1 KiB the least-latency route alone is quickest; for 32 MiB the wide route
// (168 us against 932 us) joins it, and a route that only adds latency never does.
TEST(Routing, QuickestRoutesJoinTheLeastLatencyOnesForLargeMessages) {
  TopologyBuilder b;
  b.add_npu();
  b.add_npu();
  const NodeId sw0 = b.add_switch(), sw1 = b.add_switch(), sw2 = b.add_switch();
  b.add_link(0, sw0, 36'000'000'000, 500'000);
  b.add_link(sw0, 1, 200'000'000'000, 500'000);
  b.add_link(0, sw1, 200'000'000'000, 1'400'000);
  b.add_link(sw1, 1, 200'000'000'000, 1'000'000);
  b.add_link(0, sw2, 36'000'000'000, 2'000'000);  // slower and as thin as sw0's: never
  b.add_link(sw2, 1, 36'000'000'000, 2'000'000);
  b.add_link(1, 0, 1'000'000'000, 1'000'000);  // the way back, which the routes from 0 never use
  const Topology t = b.build();
  const Router r(t);
  const auto small = r.quickest_switch_routes_from(0, 1024, 8);
  ASSERT_EQ(small[1].size(), 1u);
  EXPECT_EQ(small[1][0].latency, 1'000'000);
  const auto large = r.quickest_switch_routes_from(0, Bytes{32} << 20, 8);
  ASSERT_EQ(large[1].size(), 2u);
  EXPECT_EQ(large[1][0].latency + large[1][1].latency, 1'000'000 + 2'400'000);
  for (const Route& route : large[1]) EXPECT_NE(route.latency, 4'000'000);
  // The narrow-link filter: over links of at least 200 GB/s only the wide route is left.
  const auto wide = r.switch_routes_from(0, 8, 200'000'000'000);
  ASSERT_EQ(wide[1].size(), 1u);
  EXPECT_EQ(wide[1][0].bottleneck, 200'000'000'000);
}

// The cache's routes are the router's, route for route, in the same order: on fabrics with
// many equal-cost routes (fat-tree, leaf-spine, dragonfly), router NPUs, parallel links and
// mixed latencies, for every pair of NPUs and a limit that cuts the list short.
TEST(Routing, RouteCacheGivesTheRoutersRoutes) {
  for (const char* spec : {"nvcluster:4x4,net=fattree", "leafspine:4x4,spines=3", "dragonfly:3x3x2",
                           "dgx1", "mesh2d:3x3,router=true", "torus2d:3x4",
                           "ring:3,bw=25GB/s,lat=1us x switch:3,bw=50GB/s,lat=0.5us"}) {
    const Topology t = generate(spec);
    const Router r(t);
    RouteCache cache(r);
    int compared = 0;
    for (NodeId a = 0; a < t.num_npus(); ++a)
      for (NodeId b = 0; b < t.num_npus(); ++b)
        for (int limit : {16, 2}) {
          const std::vector<Route> want = r.equal_cost_routes(a, b, limit),
                                   got = cache.equal_cost_routes(a, b, limit);
          ASSERT_EQ(got.size(), want.size()) << spec << " " << a << "->" << b;
          for (size_t i = 0; i < want.size(); ++i) {
            EXPECT_EQ(got[i].links, want[i].links) << spec << " " << a << "->" << b;
            EXPECT_EQ(got[i].latency, want[i].latency);
            EXPECT_EQ(got[i].bottleneck, want[i].bottleneck);
          }
          compared += !want.empty();
        }
    EXPECT_GT(compared, t.num_npus()) << spec;
  }
}

// An NPU whose one link leads to a switch has the switch's routes behind that link (kept per
// switch): the same routes, in the same order and choice under a limit, as the full search from
// the NPU, which it makes once a second link (to a switch that leads nowhere, added last so that
// every other id stays) is there.
TEST(Routing, AnNpusOneLinkLeadsToItsSwitchsRoutes) {
  std::mt19937_64 rng(31);
  const std::vector<Topology> topologies = synth::testing::fabrics(
      {"leafspine:4x4,spines=3", "leafspine:2x4,spines=8", "dragonfly:3x3x2", "switch:6",
       "nvcluster:2x4,net=fattree", "ring:3,bw=25GB/s,lat=1us x switch:3,bw=50GB/s,lat=0.5us"},
      rng, 10);
  int shortcut = 0;
  for (const Topology& t : topologies) {
    TopologyBuilder b(t.name());
    for (NodeId v = 0; v < t.num_npus(); ++v) b.add_npu(t.node(v).name, t.node(v).router);
    std::vector<NodeId> handle(t.num_nodes());
    for (NodeId v = 0; v < t.num_nodes(); ++v)
      handle[v] = t.is_npu(v) ? v : b.add_switch(t.node(v).name);
    for (const Link& k : t.links())
      b.add_link(handle[k.src], handle[k.dst], k.bandwidth, k.latency, k.name);
    const NodeId nowhere = b.add_switch("nowhere");
    for (NodeId v = 0; v < t.num_npus(); ++v) b.add_link(v, nowhere, 1'000'000'000, 1'000'000);
    const Topology searched = b.build();
    const Router r(t), full(searched);
    for (NodeId u = 0; u < t.num_npus(); ++u) {
      shortcut += t.out_links(u).size() == 1 && t.is_switch(t.link(t.out_links(u)[0]).dst);
      for (int limit : {8, 2, 1})
        for (Bandwidth narrowest : {Bandwidth{0}, Bandwidth{100'000'000'000}}) {
          const auto got = r.switch_routes_from(u, limit, narrowest),
                     want = full.switch_routes_from(u, limit, narrowest);
          ASSERT_EQ(got.size(), want.size());
          for (NodeId v = 0; v < t.num_npus(); ++v) {
            ASSERT_EQ(got[v].size(), want[v].size()) << t.name() << " " << u << "->" << v;
            for (size_t i = 0; i < want[v].size(); ++i) {
              EXPECT_EQ(got[v][i].links, want[v][i].links) << t.name() << " " << u << "->" << v;
              EXPECT_EQ(got[v][i].latency, want[v][i].latency);
              EXPECT_EQ(got[v][i].bottleneck, want[v][i].bottleneck);
            }
          }
        }
    }
  }
  EXPECT_GT(shortcut, 50);
}

// The visitors pass the routes of switch_routes_from and quickest_switch_routes_from one by one,
// in their order, and with `to` those to the NPUs flagged alone: on single-link NPUs (kept switch
// routes), multi-link ones, mixed widths (where the quickest routes join the least-latency ones)
// and random fabrics.
TEST(Routing, TheVisitorsPassTheRoutesInOrder) {
  std::mt19937_64 rng(37);
  const std::vector<Topology> topologies = synth::testing::fabrics(
      {"leafspine:4x4,spines=3", "nvcluster:2x4,net=fattree", "dragonfly:3x3x2",
       "ring:3,bw=25GB/s,lat=1us x switch:3,bw=50GB/s,lat=0.5us"},
      rng, 10);
  int visited = 0;
  for (const Topology& t : topologies) {
    const Router r(t);
    for (NodeId u = 0; u < t.num_npus(); ++u) {
      // Every NPU, or some (`to`: the others get none).
      std::vector<char> some(t.num_npus());
      for (char& x : some) x = static_cast<char>(rng() % 2);
      const std::vector<char>* every = nullptr;
      const std::vector<char>* flagged = &some;
      for (const Bytes bytes : {Bytes{1} << 10, Bytes{32} << 20})
        for (const std::vector<char>* to : {every, flagged}) {
          const auto want = r.quickest_switch_routes_from(u, bytes, 4);
          std::vector<std::vector<std::vector<LinkId>>> got(t.num_npus());
          r.for_each_quickest_switch_route(
              u, bytes, 4,
              [&](NodeId v, std::span<const LinkId> l) { got[v].emplace_back(l.begin(), l.end()); },
              to);
          for (NodeId v = 0; v < t.num_npus(); ++v) {
            const size_t expected = !to || (*to)[v] ? want[v].size() : 0;
            ASSERT_EQ(got[v].size(), expected) << t.name() << " " << u << "->" << v;
            for (size_t i = 0; i < expected; ++i) EXPECT_EQ(got[v][i], want[v][i].links);
            visited += static_cast<int>(expected);
          }
        }
      const auto want = r.switch_routes_from(u, 2, 0);
      std::vector<std::vector<std::vector<LinkId>>> got(t.num_npus());
      r.for_each_switch_route(u, 2, 0, [&](NodeId v, std::span<const LinkId> l) {
        got[v].emplace_back(l.begin(), l.end());
      });
      for (NodeId v = 0; v < t.num_npus(); ++v) {
        ASSERT_EQ(got[v].size(), want[v].size()) << t.name() << " " << u << "->" << v;
        for (size_t i = 0; i < want[v].size(); ++i) EXPECT_EQ(got[v][i], want[v][i].links);
      }
    }
  }
  EXPECT_GT(visited, 500);
}

// Routers that share a RouteMemo (a plan and a matcher's channels per chunk size, over one
// topology or several) give the routes a Router alone gives: the least-latency and the quickest,
// to every NPU or to those flagged, whether the search is the memo's first (made for every NPU)
// or kept, and past the memo's budget, where it keeps no more. Over topologies of as many NPUs,
// which the memo tells apart by their fingerprints.
TEST(Routing, RoutersSharingAMemoGiveTheRoutesOfOneAlone) {
  std::mt19937_64 rng(41);
  const std::vector<Topology> topologies = synth::testing::fabrics(
      {"leafspine:4x4,spines=3", "leafspine:4x4,spines=2", "nvcluster:2x4,net=fattree",
       "nvcluster:2x4,net=rail", "dragonfly:3x3x2",
       "ring:3,bw=25GB/s,lat=1us x switch:3,bw=50GB/s,lat=0.5us"},
      rng, 12);
  for (const size_t budget : {RouteMemo::kMostRoutes, size_t{40}}) {
    RouteMemo memo(budget);
    int routes = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (const Topology& t : topologies) {
        const Router alone(t);
        for (NodeId u = 0; u < t.num_npus(); ++u) {
          std::vector<char> some(t.num_npus());
          for (char& x : some) x = static_cast<char>(rng() % 2);
          for (const Bytes bytes : {Bytes{1} << 10, Bytes{32} << 20})
            for (const std::vector<char>* to : {static_cast<std::vector<char>*>(nullptr), &some}) {
              const Router shared(t, &memo);  // a Router per question, as a plan per chunk size
              std::vector<std::vector<std::vector<LinkId>>> want(t.num_npus()), got(want);
              alone.for_each_quickest_switch_route(
                  u, bytes, 4,
                  [&](NodeId v, std::span<const LinkId> l) {
                    want[v].emplace_back(l.begin(), l.end());
                  },
                  to);
              shared.for_each_quickest_switch_route(
                  u, bytes, 4,
                  [&](NodeId v, std::span<const LinkId> l) {
                    got[v].emplace_back(l.begin(), l.end());
                  },
                  to);
              ASSERT_EQ(got, want) << t.name() << " from " << u << ", " << bytes << " B, pass "
                                   << pass << ", budget " << budget;
              const auto quickest = shared.quickest_switch_routes_from(u, bytes, 4);
              const auto expected = alone.quickest_switch_routes_from(u, bytes, 4);
              ASSERT_EQ(quickest.size(), expected.size());
              for (size_t v = 0; v < expected.size(); ++v) {
                ASSERT_EQ(quickest[v].size(), expected[v].size())
                    << t.name() << " " << u << "->" << v;
                for (size_t i = 0; i < expected[v].size(); ++i) {
                  EXPECT_EQ(quickest[v][i].links, expected[v][i].links);
                  EXPECT_EQ(quickest[v][i].latency, expected[v][i].latency);
                  EXPECT_EQ(quickest[v][i].bottleneck, expected[v][i].bottleneck);
                }
                routes += static_cast<int>(expected[v].size());
              }
            }
        }
      }
    EXPECT_GT(routes, 2000);
  }
}

// A source asked once gets a search that stops at its destination, and the routes come from the
// source's costs alone: the same routes as the router's, whether a pair is the first its source
// asks for (a fresh cache per pair, as a ring asks) or a later one (the whole search kept).
TEST(Routing, RouteCacheFirstPairsGiveTheRoutersRoutes) {
  std::vector<Topology> topologies;
  for (const char* spec : {"nvcluster:4x4,net=fattree", "leafspine:4x4,spines=3", "dragonfly:3x3x2",
                           "dgx1", "mesh2d:3x3,router=true", "switch:6",
                           "ring:3,bw=25GB/s,lat=1us x switch:3,bw=50GB/s,lat=0.5us"})
    topologies.push_back(generate(spec));
  std::mt19937_64 rng(11);
  for (int i = 0; i < 40; ++i) topologies.push_back(synth::testing::random_topology(rng, 10));
  for (const Topology& t : topologies) {
    const Router r(t);
    RouteCache ring(r);  // each source once, in ring order
    for (NodeId a = 0; a < t.num_npus(); ++a)
      for (NodeId b = 0; b < t.num_npus(); ++b) {
        RouteCache fresh(r);
        const std::vector<Route> want = r.equal_cost_routes(a, b, 16),
                                 first = fresh.equal_cost_routes(a, b, 16),
                                 again = fresh.equal_cost_routes(a, b, 16),
                                 ringed = b == (a + 1) % t.num_npus()
                                              ? ring.equal_cost_routes(a, b, 16)
                                              : want;
        ASSERT_EQ(first.size(), want.size()) << t.name() << " " << a << "->" << b;
        ASSERT_EQ(again.size(), want.size()) << t.name() << " " << a << "->" << b;
        ASSERT_EQ(ringed.size(), want.size()) << t.name() << " " << a << "->" << b;
        for (size_t k = 0; k < want.size(); ++k) {
          EXPECT_EQ(first[k].links, want[k].links) << t.name() << " " << a << "->" << b;
          EXPECT_EQ(again[k].links, want[k].links) << t.name() << " " << a << "->" << b;
          EXPECT_EQ(ringed[k].links, want[k].links) << t.name() << " " << a << "->" << b;
          EXPECT_EQ(first[k].latency, want[k].latency);
          EXPECT_EQ(first[k].bottleneck, want[k].bottleneck);
        }
      }
  }
}

}  // namespace
}  // namespace tenet::topo
