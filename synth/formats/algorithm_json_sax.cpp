// The reference reader of the algorithm JSON (see algorithm_json_read.cpp): nlohmann's SAX parser,
// the head into a json value, the transfers straight into compact records.
#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>

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
using detail::Range;
using detail::range_of;
using detail::RawTransfer;
using detail::Reader;
using detail::set_field;

// What a reader makes of a file, before the checks that need all of it: the head as a json value,
// the transfers as records with their routes and dependencies in two pools.
struct Parsed {
  json head;
  std::vector<RawTransfer> transfers;
  std::vector<LinkId> route_pool;
  std::vector<TransferId> deps_pool;
  std::optional<Error> problem;  // the first problem in a transfer
  int64_t first_versioned = -1;  // the first transfer with a rate or channel (version 2)
  int64_t first_input = -1;      // the first transfer that sends its input (version 3)
  int64_t first_message = -1;    // the first transfer that carries several chunks (version 4)
};

// The SAX handler (nlohmann::json_sax): the head into `head`, the transfers into `transfers` and
// the two pools. The first problem in a transfer is kept and reported once the head has been
// checked, as a document reader would; a syntax error ends the parse at once.
class Sax : public Parsed {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  Sax(const Reader& r, std::string_view text) : r_(r), text_(text) {}

  bool null() { return scalar(json(nullptr)); }
  bool boolean(bool v) { return scalar(json(v)); }
  bool number_integer(number_integer_t v) { return integer(v, json(v)); }
  bool number_unsigned(number_unsigned_t v) { return integer(Reader::saturate(v), json(v)); }
  bool number_float(number_float_t v, const string_t&) { return scalar(json(v)); }
  bool string(string_t& v) {
    if (state_ == State::Transfer &&
        field_ == Field::Op) {  // every transfer has one: no json value made
      if (v == "copy")
        x_.op = Op::Copy;
      else if (v == "reduce")
        x_.op = Op::Reduce;
      else
        note(path(), fmt::format("unknown op '{}' (copy or reduce)", v));
      return true;
    }
    if (state_ == State::Transfer && field_ == Field::From) {
      if (v == "input")
        x_.from_input = true;
      else
        note(path(),
             fmt::format("unknown source '{}' (\"input\", or no \"from\" for the node's copy)", v));
      return true;
    }
    return scalar(json(std::move(v)));
  }
  bool binary(binary_t&) { return scalar(json()); }  // not in JSON text

  bool start_object(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    if (state_ == State::Head) {
      key_ = std::move(k);
    } else if (state_ == State::Transfer) {
      field_ = field_of(k);
      field_name_ = std::move(k);
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    if (dynamic_cast<const json::out_of_range*>(&e))  // a number past double's range: 1e999
      throw Error(fmt::format("a number is out of range: {}", e.what()), {r_.file()});
    int line = 1, column = 1;  // the byte offset as a line and column
    for (size_t i = 0; i + 1 < position && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    const std::string what = e.what();
    const size_t at = what.find("syntax error");
    throw Error(fmt::format("not valid JSON: {}", at == std::string::npos ? what : what.substr(at)),
                {r_.file(), line, column});
  }

 private:
  enum class State : uint8_t { Head, TransferList, Transfer, List, Skip };

  std::string at() const { return fmt::format("transfers[{}]", transfers.size()); }
  std::string path() const { return fmt::format("{}.{}", at(), field_name_); }
  void note(const std::string& where, const std::string& what) {
    if (!problem) problem = r_.error(where, what);
  }

  // A value in the head: into the object or list being built, or the document itself.
  json& put(json v) {
    if (stack_.empty()) {
      head = std::move(v);
      return head;
    }
    json& top = *stack_.back();
    if (top.is_object()) return top[key_] = std::move(v);
    top.push_back(std::move(v));
    return top.back();
  }

  bool open(bool object) {
    switch (state_) {
      case State::Head:
        if (!object && stack_.size() == 1 && stack_.back()->is_object() && key_ == "transfers") {
          put(json::array());  // a placeholder: the records hold them
          // A second "transfers" replaces the first, as a document's last duplicate key does.
          transfers.clear(), route_pool.clear(), deps_pool.clear();
          first_versioned = first_input = first_message = -1;
          problem.reset();
          state_ = State::TransferList;
          return true;
        }
        stack_.push_back(&put(object ? json::object() : json::array()));
        return true;
      case State::TransferList:
        if (object) {
          state_ = State::Transfer;
          x_ = RawTransfer{};
          x_.route_begin = static_cast<uint32_t>(route_pool.size());
          x_.deps_begin = static_cast<uint32_t>(deps_pool.size());
          return true;
        }
        note(at(), "expected an object, got a list");
        break;
      case State::Transfer:
        if (!object && (field_ == Field::Route || field_ == Field::Deps)) {
          if (field_ == Field::Route) x_.has |= RawTransfer::kRoute;
          state_ = State::List;
          return true;
        }
        if (field_ != Field::Other)
          note(path(), wanted(fmt::format("an {}", object ? "object" : "list")));
        break;
      case State::List:
        note(fmt::format("{}[{}]", path(), listed()),
             fmt::format("expected a whole number, got {}", object ? "an object" : "a list"));
        break;
      case State::Skip:
        ++skip_depth_;
        return true;
    }
    skip_return_ = state_;
    state_ = State::Skip;
    skip_depth_ = 1;
    return true;
  }

  bool close() {
    switch (state_) {
      case State::Head:
        stack_.pop_back();
        return true;
      case State::TransferList:
        state_ = State::Head;
        return true;
      case State::Transfer:
        if (!problem &&
            transfers.size() >= static_cast<size_t>(std::numeric_limits<TransferId>::max()))
          note(at(), "too many transfers (over 2^31)");
        x_.route_size = static_cast<uint32_t>(route_pool.size() - x_.route_begin);
        x_.deps_size = static_cast<uint32_t>(deps_pool.size() - x_.deps_begin);
        if ((x_.has & (RawTransfer::kRate | RawTransfer::kChannel)) && first_versioned < 0)
          first_versioned = static_cast<int64_t>(transfers.size());
        if (x_.from_input && first_input < 0) first_input = static_cast<int64_t>(transfers.size());
        if (x_.count != 1 && first_message < 0)
          first_message = static_cast<int64_t>(transfers.size());
        transfers.push_back(x_);
        state_ = State::TransferList;
        return true;
      case State::List:
        state_ = State::Transfer;
        return true;
      case State::Skip:
        if (--skip_depth_ == 0) state_ = skip_return_;
        return true;
    }
    return true;
  }

  // What a field of a transfer wants, and what it got instead.
  std::string wanted(const std::string& got) const {
    const char* want = field_ == Field::Op || field_ == Field::From      ? "a string"
                       : field_ == Field::Route || field_ == Field::Deps ? "a list"
                                                                         : "a whole number";
    return fmt::format("expected {}, got {}", want, got);
  }
  size_t listed() const {
    return field_ == Field::Route ? route_pool.size() - x_.route_begin
                                  : deps_pool.size() - x_.deps_begin;
  }

  bool scalar(json v) {
    switch (state_) {
      case State::Head:
        put(std::move(v));
        return true;
      case State::TransferList:
        note(at(), fmt::format("expected an object, got {}", v.dump()));
        return true;
      case State::Transfer:
        if ((field_ == Field::Start || field_ == Field::End) && v.is_null()) {
          x_.has |= field_ == Field::Start ? RawTransfer::kStart
                                           : RawTransfer::kEnd;  // given as not timed
        } else if (field_ != Field::Other) {
          note(path(), wanted(v.dump()));
        }
        return true;
      case State::List:
        note(fmt::format("{}[{}]", path(), listed()),
             fmt::format("expected a whole number, got {}", v.dump()));
        return true;
      case State::Skip:
        return true;
    }
    return true;
  }

  // v within its range, or the problem noted.
  bool within(int64_t v, Range range, const char* unit = "") {
    if (v >= range.lo && v <= range.hi) return true;
    note(state_ == State::List ? fmt::format("{}[{}]", path(), listed()) : path(),
         v < 0 && *unit ? fmt::format("negative time {} {}", v, unit)
                        : fmt::format("{} is out of range [{}, {}]", v, range.lo, range.hi));
    return false;
  }

  bool integer(int64_t v, json as_json) {
    if (state_ == State::Head || state_ == State::TransferList || state_ == State::Skip)
      return scalar(std::move(as_json));
    if (state_ == State::List) {
      if (within(v, kItemRange)) {
        if (field_ == Field::Route)
          route_pool.push_back(static_cast<LinkId>(v));
        else
          deps_pool.push_back(static_cast<TransferId>(v));
      }
      return true;
    }
    switch (field_) {
      case Field::Id:
        if (within(v, range_of(field_)) && v != static_cast<int64_t>(transfers.size()))
          note(path(), fmt::format("transfer ids must count up from 0 in list order: expected {}",
                                   transfers.size()));
        break;
      case Field::Op:
      case Field::From:
      case Field::Route:
      case Field::Deps:
        note(path(), wanted(as_json.dump()));
        break;
      case Field::Other:
        break;
      default:
        if (within(v, range_of(field_), field_ == Field::Start || field_ == Field::End ? "ps" : ""))
          set_field(x_, field_, v);
        break;
    }
    return true;
  }

  const Reader& r_;
  std::string_view text_;
  State state_ = State::Head, skip_return_ = State::Head;
  int skip_depth_ = 0;
  std::vector<json*> stack_;  // the head's open objects and lists
  std::string key_;           // the head's pending key
  Field field_ = Field::Other;
  std::string field_name_;
  RawTransfer x_;
};

[[noreturn]] void fail_versioned(const Reader& r, int64_t i, const RawTransfer& x) {
  r.fail(fmt::format("transfers[{}].{}", i, x.has & RawTransfer::kRate ? "rate_Bps" : "channel"),
         fmt::format("{} need version 2 of the format",
                     x.has & RawTransfer::kRate ? "rates" : "channels"));
}

// The checks that need the whole file, and the algorithm.
Algorithm build(const Reader& r, const Parsed& sax) {
  int64_t version = 0;
  Algorithm a = build_head(r, sax.head, version);
  if (sax.problem) throw *sax.problem;
  // What needs the whole file: chunk ids against the collective, dependencies against the count.
  const int64_t chunks = a.collective.num_chunks();
  const int64_t n = static_cast<int64_t>(sax.transfers.size());
  if (version < 2 && sax.first_versioned >= 0)
    fail_versioned(r, sax.first_versioned, sax.transfers[sax.first_versioned]);
  if (version < 3 && sax.first_input >= 0)
    r.fail(fmt::format("transfers[{}].from", sax.first_input),
           "a transfer that sends its input (\"from\": \"input\") needs version 3 of the format");
  if (version < 4 && sax.first_message >= 0)
    r.fail(fmt::format("transfers[{}].count", sax.first_message),
           "a transfer that carries several chunks (\"count\") needs version 4 of the format");
  a.reserve(sax.transfers.size(), sax.route_pool.size(), sax.deps_pool.size());
  for (int64_t i = 0; i < n; ++i) {
    const RawTransfer& x = sax.transfers[i];
    const std::span<const TransferId> deps(sax.deps_pool.data() + x.deps_begin, x.deps_size);
    add_checked(r, a, i, x, {sax.route_pool.data() + x.route_begin, x.route_size}, deps, chunks, n);
  }
  return a;
}

}  // namespace

Algorithm parse_algorithm_json_reference(std::string_view text, const std::string& file) {
  Reader r(file);
  Sax sax(r, text);
  json::sax_parse(text.begin(), text.end(), &sax);
  return build(r, sax);
}

}  // namespace tenet::synth
