#include "topo/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>

namespace tenet {

size_t edit_distance(std::string_view a, std::string_view b) {
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  };
  // Three rows: two back for transpositions.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), row(b.size() + 1);
  std::iota(prev.begin(), prev.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] =
          std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        row[j] = std::min(row[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, row);
  }
  return prev[b.size()];
}

std::vector<std::string> nearest(std::string_view typed, std::span<const std::string> candidates,
                                 size_t limit) {
  if (typed.empty()) return {};
  const size_t allowed = typed.size() <= 3 ? 1 : std::max<size_t>(2, typed.size() / 3);
  auto starts = [](std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && edit_distance(s.substr(0, prefix.size()), prefix) == 0;
  };
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : candidates) {
    if (c.empty()) continue;
    size_t d = edit_distance(typed, c);
    // A prefix either way counts as close (torus -> torus2d; synthesize -> synth), ranked after
    // the near misses of the same length.
    if (d > allowed && typed.size() >= 3 && (starts(c, typed) || starts(typed, c))) d = allowed;
    if (d <= allowed) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (auto& [d, c] : scored)
    if (out.size() < limit && std::find(out.begin(), out.end(), c) == out.end())
      out.push_back(std::move(c));
  return out;
}

std::string did_you_mean(std::string_view typed, std::span<const std::string> candidates,
                         size_t limit) {
  const std::vector<std::string> near = nearest(typed, candidates, limit);
  if (near.empty()) return "";
  std::string list;
  for (size_t i = 0; i < near.size(); ++i)
    list += fmt::format("{}'{}'", i == 0 ? "" : i + 1 == near.size() ? " or " : ", ", near[i]);
  return fmt::format(" (did you mean {}?)", list);
}

}  // namespace tenet
