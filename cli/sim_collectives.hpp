// `tenet sim`'s per-collective breakdown (sim::SimResult::collective_rows): a table and its totals
// per group kind as text, and the rows as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/system.hpp"

namespace tenet::cli {

// The table, the slowest rows first (at most `shown`; the JSON has every row), then the totals per
// group kind, point-to-point messages among them.
void print_collective_rows(const sim::SimResult& r, int shown);
nlohmann::ordered_json collective_rows_json(const sim::SimResult& r);
// The point-to-point messages per group kind (SimResult::message_rows).
nlohmann::ordered_json message_rows_json(const sim::SimResult& r);

}  // namespace tenet::cli
