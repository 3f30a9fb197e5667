#include "bench/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "topo/error.hpp"

namespace tenet::bench {

void Table::add_row(std::vector<std::string> row) {
  if (row.size() != header_.size())
    throw Error(fmt::format("table row has {} cells, the header {}", row.size(), header_.size()));
  rows_.push_back(std::move(row));
}

std::string Table::markdown() const {
  std::vector<size_t> width(header_.size(), 3);
  std::vector<bool> numeric(header_.size(), !rows_.empty());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = std::max(width[c], header_[c].size());
    for (const auto& r : rows_) {
      width[c] = std::max(width[c], r[c].size());
      numeric[c] = numeric[c] && !r[c].empty() && std::isdigit(static_cast<unsigned char>(r[c][0]));
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t c = 0; c < cells.size(); ++c)
      out += numeric[c] ? fmt::format(" {:>{}} |", cells[c], width[c])
                        : fmt::format(" {:<{}} |", cells[c], width[c]);
    return out + "\n";
  };
  std::string out = line(header_);
  out += '|';
  for (size_t c = 0; c < header_.size(); ++c)
    out += fmt::format(" {}{} |", std::string(width[c] - 1, '-'), numeric[c] ? ':' : '-');
  out += '\n';
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string Table::csv() const {
  auto cell = [](const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) {
      q += ch;
      if (ch == '"') q += '"';
    }
    q += '"';
    return q;
  };
  std::string out;
  auto row = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) out += ',';
      out += cell(cells[c]);
    }
    out += '\n';
  };
  row(header_);
  for (const auto& r : rows_) row(r);
  return out;
}

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cell += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      rows.back().push_back(std::move(cell));
      cell.clear();
    } else if (ch == '\n') {
      rows.back().push_back(std::move(cell));
      cell.clear();
      rows.emplace_back();
    } else if (ch != '\r') {
      cell += ch;
    }
  }
  if (!cell.empty() || !rows.back().empty()) rows.back().push_back(std::move(cell));
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

}  // namespace tenet::bench
