// The fast reader of the algorithm JSON (see algorithm_json_read.cpp): simdjson's DOM parser over
// a file laid out as Tenet writes it, in slices, the transfers straight into the algorithm.
#include <simdjson.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/algorithm_json_detail.hpp"

namespace tenet::synth {
namespace {

using nlohmann::json;

using detail::add_checked;
using detail::build_head;
using detail::Field;
using detail::field_of;
using detail::kItemRange;
using detail::range_of;
using detail::RawTransfer;
using detail::Reader;
using detail::set_field;

// The head's values as nlohmann would make them (whole numbers >= 0 unsigned).
json to_nlohmann(simdjson::dom::element e) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::ARRAY: {
      json list = json::array();
      for (simdjson::dom::element x : simdjson::dom::array(e)) list.push_back(to_nlohmann(x));
      return list;
    }
    case T::OBJECT: {
      json object = json::object();
      for (simdjson::dom::key_value_pair kv : simdjson::dom::object(e))
        object[std::string(kv.key)] = to_nlohmann(kv.value);
      return object;
    }
    case T::INT64: {
      const int64_t v = int64_t(e);
      return v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
    }
    case T::UINT64:
      return json(uint64_t(e));
    case T::DOUBLE:
      return json(double(e));
    case T::STRING:
      return json(std::string(std::string_view(e)));
    case T::BOOL:
      return json(bool(e));
    case T::NULL_VALUE:
      return json(nullptr);
  }
  return json();
}

// What the fast reader builds: the algorithm itself, its transfers added as they are read (no
// records beside it).
struct FastBuild {
  Reader r{"<fast>"};
  Algorithm a;
  int64_t version = 0, chunks = 0;
  std::vector<LinkId> route;
  std::vector<TransferId> deps;
};

// The fast reader's transfers: false for anything the reference reader must look at.
bool read_transfers_fast(simdjson::dom::array list, FastBuild& f) {
  for (simdjson::dom::element item : list) {
    simdjson::dom::object o;
    if (item.get_object().get(o)) return false;
    const auto i = static_cast<int64_t>(f.a.size());
    if (i >= std::numeric_limits<TransferId>::max()) return false;
    RawTransfer x;
    f.route.clear();
    f.deps.clear();
    unsigned seen = 0;
    for (simdjson::dom::key_value_pair kv : o) {
      const Field field = field_of(kv.key);
      if (field == Field::Other) continue;  // unknown fields are skipped, whatever they hold
      if (seen & (1u << static_cast<unsigned>(field))) return false;
      seen |= 1u << static_cast<unsigned>(field);
      if (field == Field::From) {
        std::string_view from;
        if (kv.value.get_string().get(from) || from != "input") return false;
        x.from_input = true;
      } else if (field == Field::Op) {
        std::string_view op;
        if (kv.value.get_string().get(op)) return false;
        if (op == "copy")
          x.op = Op::Copy;
        else if (op == "reduce")
          x.op = Op::Reduce;
        else
          return false;
      } else if (field == Field::Route || field == Field::Deps) {
        simdjson::dom::array items;
        if (kv.value.get_array().get(items)) return false;
        for (simdjson::dom::element e : items) {
          int64_t v = 0;
          if (e.get_int64().get(v) || v < kItemRange.lo || v > kItemRange.hi) return false;
          if (field == Field::Route)
            f.route.push_back(static_cast<LinkId>(v));
          else
            f.deps.push_back(static_cast<TransferId>(v));
        }
        if (field == Field::Route) x.has |= RawTransfer::kRoute;
      } else if ((field == Field::Start || field == Field::End) && kv.value.is_null()) {
        x.has |=
            field == Field::Start ? RawTransfer::kStart : RawTransfer::kEnd;  // given as not timed
      } else {
        int64_t v = 0;
        if (kv.value.get_int64().get(v) || v < range_of(field).lo || v > range_of(field).hi)
          return false;
        if (field == Field::Id && v != i) return false;
        set_field(x, field, v);
      }
    }
    if ((x.has & (RawTransfer::kRate | RawTransfer::kChannel)) && f.version < 2) return false;
    if (x.from_input && f.version < 3) return false;
    if (x.count != 1 && f.version < 4) return false;
    try {
      add_checked(f.r, f.a, i, x, f.route, f.deps, f.chunks, std::nullopt);
    } catch (const Error&) {
      return false;
    }
  }
  return true;
}

// simdjson's parser reused over one slice of the text at a time, as a list: "[" slice "]".
class Slices {
 public:
  // The value of the slice text[b, e) made a list, or an error.
  simdjson::simdjson_result<simdjson::dom::element> parse(std::string_view text, size_t b,
                                                          size_t e) {
    buffer_.assign(1, '[');
    buffer_.append(text.substr(b, e - b));
    buffer_.push_back(']');
    buffer_.reserve(buffer_.size() +
                    simdjson::SIMDJSON_PADDING);  // what the parser may read past the end
    return parser_.parse(buffer_.data(), buffer_.size(), false);
  }

 private:
  simdjson::dom::parser parser_;
  std::string buffer_;
};

// The fast reader (see the top). It reads a file laid out as Tenet writes it, the transfers the
// last field of the top object, in slices of a few megabytes (so that simdjson's parser, which
// needs several times the text's size, reuses a few tens of megabytes instead of taking half a
// gigabyte), and is nothing for anything it does not take as it is. The slices are cut where
// the text reads "}," then "{" (between two transfers), without knowing whether that is inside
// a string or deeper in the file: a wrong cut leaves a slice whose string or brackets are not
// closed, which does not parse, so the reader gives up rather than read anything wrong.
std::optional<Algorithm> read_fast(std::string_view text, size_t slice_bytes,
                                   const std::function<void(size_t)>& done_with) {
  constexpr std::string_view kWhite = " \t\r\n", kKey = "\"transfers\"";
  // The list's brackets: `"transfers": [` (its first mention: a search from the end would read
  // through the whole list, every page of a 2.6 GB file, before anything is parsed), then `]` and
  // `}` at the end.
  const size_t key = text.find(kKey);
  if (key == std::string_view::npos) return std::nullopt;
  const size_t colon = text.find_first_not_of(kWhite, key + kKey.size());
  if (colon == std::string_view::npos || text[colon] != ':') return std::nullopt;
  const size_t open = text.find_first_not_of(kWhite, colon + 1),
               brace = text.find_last_not_of(kWhite);
  if (open == std::string_view::npos || text[open] != '[' || text[brace] != '}' || brace <= open)
    return std::nullopt;
  const size_t close = text.find_last_not_of(kWhite, brace - 1);
  if (text[close] != ']' || close <= open) return std::nullopt;

  // The head: the text with the list emptied. Its last field must be "transfers", once: otherwise
  // the brackets found are not the list's.
  const std::string head_text =
      std::string(text.substr(0, open + 1)) + std::string(text.substr(close));
  simdjson::dom::parser head_parser;
  simdjson::dom::object top;
  if (head_parser.parse(head_text).get_object().get(top)) return std::nullopt;
  json head;
  bool last_is_list = false;
  for (simdjson::dom::key_value_pair kv : top) {
    last_is_list = false;
    if (kv.key == "transfers") {
      simdjson::dom::array list;
      if (head.contains("transfers") || kv.value.get_array().get(list) || list.size() != 0)
        return std::nullopt;
      head["transfers"] = json::array();  // a placeholder: the transfers are read below
      last_is_list = true;
    } else {
      head[std::string(kv.key)] =
          to_nlohmann(kv.value);  // a key given twice: the last, as nlohmann has it
    }
  }
  if (!last_is_list) return std::nullopt;
  FastBuild f;
  try {
    f.a = build_head(f.r, head, f.version);
  } catch (const Error&) {
    return std::nullopt;
  }
  f.chunks = f.a.collective.num_chunks();

  // The items, a slice at a time; every slice but the last ends before a comma, and holds items.
  Slices slices;
  for (size_t b = open + 1; b < close;) {
    size_t e = close;
    for (size_t at = b + std::max<size_t>(slice_bytes, 1); at < close; ++at) {
      at = text.find("},", at);
      if (at == std::string_view::npos || at >= close) break;
      if (const size_t next = text.find_first_not_of(kWhite, at + 2);
          next < close && text[next] == '{') {
        e = at + 1;
        break;
      }
    }
    simdjson::dom::array items;
    if (slices.parse(text, b, e).get_array().get(items) || (e < close && items.size() == 0))
      return std::nullopt;
    if (!read_transfers_fast(items, f)) return std::nullopt;
    b = e + 1;  // past the comma
    if (done_with) done_with(b);
  }
  // What needs every transfer: dependencies against the count.
  const auto n = static_cast<int64_t>(f.a.size());
  for (TransferId id = 0; id < n; ++id)
    for (TransferId d : f.a.deps(id))
      if (d >= n) return std::nullopt;
  return std::move(f.a);
}

}  // namespace

std::optional<Algorithm> parse_algorithm_json_fast(std::string_view text, size_t slice_bytes,
                                                   const std::function<void(size_t)>& done_with) {
  return read_fast(text, slice_bytes,
                   done_with);  // nothing where the reference reader must say why, in its words
}

}  // namespace tenet::synth
