// A small table printer for results: aligned Markdown for people, CSV for machines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tenet::bench {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Throws tenet::Error when the row's width differs from the header's.
  void add_row(std::vector<std::string> row);
  size_t rows() const { return rows_.size(); }

  // GitHub Markdown with columns padded to line up; numbers (cells starting with a digit)
  // right-aligned.
  std::string markdown() const;
  // RFC 4180 CSV: cells with commas, quotes or newlines are quoted, quotes doubled.
  std::string csv() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// The rows of an RFC 4180 CSV text (quoted cells, doubled quotes; what Table::csv writes), the
// header first.
std::vector<std::vector<std::string>> parse_csv(std::string_view text);

}  // namespace tenet::bench
