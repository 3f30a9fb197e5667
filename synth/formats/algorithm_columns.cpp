#include "synth/formats/algorithm_columns.hpp"

#include <formats/algorithm_columns.pb.h>  // generated (synth/CMakeLists.txt)

#include <cstdint>
#include <limits>
#include <vector>

#include "synth/formats/algorithm_json_detail.hpp"

namespace tenet::synth {

std::string transfers_to_columns(const Algorithm& a) {
  columns::Transfers m;
  const auto n = static_cast<TransferId>(a.size());
  const bool rates = a.has_rates();
  for (TransferId i = 0; i < n; ++i) {
    const Transfer& x = a[i];
    m.add_chunk(x.chunk);
    m.add_src(x.src);
    m.add_dst(x.dst);
    m.add_reduce(x.op == Op::Reduce);
    m.add_from_input(x.from_input);
    m.add_channel(x.channel);
    m.add_count(x.count);
    m.add_start_ps(x.start);
    m.add_end_ps(x.end);
    if (rates) m.add_rate(a.rate(i));
    const std::span<const LinkId> route = a.route(i);
    m.add_route_length(static_cast<uint32_t>(route.size()));
    for (LinkId l : route) m.add_route_links(l);
    const std::span<const TransferId> deps = a.deps(i);
    m.add_deps_count(static_cast<uint32_t>(deps.size()));
    for (TransferId d : deps) m.add_deps_back(i - d);
  }
  return m.SerializeAsString();
}

bool add_transfers_from_columns(std::string_view bytes, Algorithm& a) {
  columns::Transfers m;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return false;
  const int n = m.chunk_size();
  if (m.src_size() != n || m.dst_size() != n || m.reduce_size() != n || m.from_input_size() != n ||
      m.channel_size() != n || m.count_size() != n || m.start_ps_size() != n ||
      m.end_ps_size() != n || (m.rate_size() != 0 && m.rate_size() != n) ||
      m.route_length_size() != n || m.deps_count_size() != n)
    return false;
  using detail::range_of;
  using detail::RawTransfer;
  const auto within = [](int64_t v, detail::Field f) {
    return v >= range_of(f).lo && v <= range_of(f).hi;
  };
  const detail::Reader r("<cache>");
  const int64_t chunks = a.collective.num_chunks();
  std::vector<LinkId> route;
  std::vector<TransferId> deps;
  int64_t next_link = 0, next_dep = 0;
  a.reserve(static_cast<size_t>(n), static_cast<size_t>(m.route_links_size()),
            static_cast<size_t>(m.deps_back_size()));
  try {
    for (int i = 0; i < n; ++i) {
      RawTransfer x;
      x.has = RawTransfer::kChunk | RawTransfer::kSrc | RawTransfer::kDst | RawTransfer::kRoute;
      x.chunk = m.chunk(i);
      x.op = m.reduce(i) ? Op::Reduce : Op::Copy;
      x.from_input = m.from_input(i);
      if (!within(x.chunk, detail::Field::Chunk) || !within(m.src(i), detail::Field::Src) ||
          !within(m.dst(i), detail::Field::Dst) || !within(m.channel(i), detail::Field::Channel) ||
          !within(m.count(i), detail::Field::Count) || m.start_ps(i) < -1 || m.end_ps(i) < -1 ||
          (m.rate_size() > 0 && m.rate(i) != 0 && !within(m.rate(i), detail::Field::Rate)))
        return false;
      x.src = m.src(i);
      x.dst = m.dst(i);
      x.channel = static_cast<uint16_t>(m.channel(i));
      x.count = static_cast<uint16_t>(m.count(i));
      x.start = m.start_ps(i);
      x.end = m.end_ps(i);
      x.rate = m.rate_size() > 0 ? m.rate(i) : 0;
      const int64_t links = m.route_length(i), dependencies = m.deps_count(i);
      if (links > m.route_links_size() - next_link || dependencies > m.deps_back_size() - next_dep)
        return false;
      route.clear();
      for (int64_t k = 0; k < links; ++k) {
        const int32_t l = m.route_links(static_cast<int>(next_link + k));
        if (l < 0) return false;
        route.push_back(l);
      }
      next_link += links;
      deps.clear();
      for (int64_t k = 0; k < dependencies; ++k) {
        const int64_t d = int64_t{i} - m.deps_back(static_cast<int>(next_dep + k));
        if (d < 0 || d >= n) return false;
        deps.push_back(static_cast<TransferId>(d));
      }
      next_dep += dependencies;
      detail::add_checked(r, a, i, x, route, deps, chunks, n);
    }
  } catch (const Error&) {
    return false;
  }
  return next_link == m.route_links_size() && next_dep == m.deps_back_size();
}

}  // namespace tenet::synth
