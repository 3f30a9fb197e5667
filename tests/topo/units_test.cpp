#include "topo/units.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "topo/error.hpp"

namespace tenet {
namespace {

TEST(Units, ParsesSizes) {
  EXPECT_EQ(parse_bytes("512B"), 512);
  EXPECT_EQ(parse_bytes("64MiB"), 64LL << 20);
  EXPECT_EQ(parse_bytes("1 GiB"), 1LL << 30);
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536);
  EXPECT_EQ(parse_bytes("2GB"), 2'000'000'000);
  EXPECT_EQ(parse_bytes("0B"), 0);
}

TEST(Units, ParsesBandwidths) {
  EXPECT_EQ(parse_bandwidth("50GB/s"), 50'000'000'000);
  EXPECT_EQ(parse_bandwidth("80GiB/s"), 80LL << 30);
  EXPECT_EQ(parse_bandwidth("400Gbps"), 50'000'000'000);
  EXPECT_EQ(parse_bandwidth("1.5TB/s"), 1'500'000'000'000);
  EXPECT_EQ(parse_bandwidth("100 MB/s"), 100'000'000);
}

TEST(Units, ParsesTimes) {
  EXPECT_EQ(parse_time("0.5us"), 500'000);
  EXPECT_EQ(parse_time("500ns"), 500'000);
  EXPECT_EQ(parse_time("250ps"), 250);
  EXPECT_EQ(parse_time("2ms"), 2'000'000'000);
  EXPECT_EQ(parse_time("1s"), kPicosPerSecond);
  EXPECT_EQ(parse_time("0.1us"), 100'000);
  EXPECT_EQ(parse_time("1e3ns"), 1'000'000);
}

TEST(Units, RejectsBadQuantitiesWithClearMessages) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { parse_bandwidth("50"); }).find("has no unit"), std::string::npos);
  EXPECT_NE(message([] { parse_bandwidth("50GB"); }).find("unknown bandwidth unit 'GB'"),
            std::string::npos);
  EXPECT_NE(message([] { parse_time("5 parsecs"); }).find("unknown time unit"), std::string::npos);
  EXPECT_NE(message([] { parse_bytes("-3MiB"); }).find("negative"), std::string::npos);
  EXPECT_NE(message([] { parse_bandwidth("-1GB/s"); }).find("positive"), std::string::npos);
  EXPECT_NE(message([] { parse_bandwidth("0GB/s"); }).find("positive"), std::string::npos);
  EXPECT_NE(message([] { parse_bytes("3.3B"); }).find("whole number"), std::string::npos);
  EXPECT_NE(message([] { parse_bytes("9999999TiB"); }).find("absurdly large"), std::string::npos);
  EXPECT_NE(message([] { parse_time("2h"); }).find("unknown time unit"), std::string::npos);
  EXPECT_NE(message([] { parse_time("99999s"); }).find("absurdly large"), std::string::npos);
  EXPECT_NE(message([] { parse_bytes(""); }).find("empty"), std::string::npos);
  EXPECT_NE(message([] { parse_bytes("GiB"); }).find("not a valid size"), std::string::npos);
  EXPECT_NE(message([] { parse_bytes("1..5GiB"); }).find("not a valid size"), std::string::npos);
}

TEST(Units, CanonicalFormsParseBackExactly) {
  for (Bytes b : {Bytes{0}, Bytes{1}, Bytes{1000}, Bytes{1024}, Bytes{1536}, Bytes{64} << 20,
                  Bytes{3'000'000'000}, Bytes{123'456'789}})
    EXPECT_EQ(parse_bytes(canonical_bytes(b)), b) << canonical_bytes(b);
  for (Bandwidth bw : {Bandwidth{1}, Bandwidth{50'000'000'000}, Bandwidth{80} << 30,
                       Bandwidth{12'500'000'000}, Bandwidth{107'374'182}})
    EXPECT_EQ(parse_bandwidth(canonical_bandwidth(bw)), bw) << canonical_bandwidth(bw);
  for (Time t : {Time{0}, Time{1}, Time{500'000}, Time{1'500'000}, Time{3} * kPicosPerSecond})
    EXPECT_EQ(parse_time(canonical_time(t)), t) << canonical_time(t);
  EXPECT_EQ(canonical_bandwidth(50'000'000'000), "50GB/s");
  EXPECT_EQ(canonical_time(500'000), "500ns");
  EXPECT_EQ(canonical_bytes(64 << 20), "64MiB");
}

TEST(Units, HumanForms) {
  EXPECT_EQ(format_bytes(1LL << 30), "1 GiB");
  // One unit family: binary always, to four significant digits.
  EXPECT_EQ(format_bytes(60 << 10), "60 KiB");
  EXPECT_EQ(format_bytes(46170), "45.09 KiB");
  EXPECT_EQ(format_bytes(1'000'000), "976.6 KiB");
  EXPECT_EQ(format_bytes(1'000'000'000), "953.7 MiB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bandwidth(50'000'000'000), "50 GB/s");
  EXPECT_EQ(format_time(1'500'000), "1.5 us");
  EXPECT_EQ(format_time(0), "0 ps");
}

TEST(Units, TransferTimeIsExactAndRoundsUp) {
  EXPECT_EQ(transfer_time(1 << 20, 50'000'000'000), 20'971'520);  // 1 MiB at 50 GB/s
  EXPECT_EQ(transfer_time(1, 3), 333'333'333'334);                // rounds up
  EXPECT_EQ(transfer_time(0, 1), 0);
  EXPECT_EQ(transfer_time(1LL << 40, 1LL << 30), 1024 * kPicosPerSecond);  // no overflow
}

// Small products take a 64-bit division, large ones a 128-bit one: both the exact ceiling, on
// either side of where bytes x 10^12 leaves 64 bits (about 9.2 MB) and of where adding bw - 1
// would.
TEST(Units, TransferTimeIsTheExactCeilingOnEitherSideOf64Bits) {
  auto exact = [](Bytes b, Bandwidth bw) {
    return static_cast<Time>((static_cast<Int128>(b) * kPicosPerSecond + bw - 1) / bw);
  };
  std::mt19937_64 rng(5);
  const Bytes edge = std::numeric_limits<int64_t>::max() / kPicosPerSecond;
  for (int i = 0; i < 20000; ++i) {
    const Bytes b = i % 2 ? edge - 50 + static_cast<Bytes>(rng() % 100)
                          : static_cast<Bytes>(rng() % (Bytes{1} << 40));
    const Bandwidth bw = 1 + static_cast<Bandwidth>(rng() % 1'000'000'000'000'000);
    EXPECT_EQ(transfer_time(b, bw), exact(b, bw)) << b << " B at " << bw << " B/s";
  }
  EXPECT_EQ(transfer_time(edge, 1'000'000'000'000'000), exact(edge, 1'000'000'000'000'000));
}

}  // namespace
}  // namespace tenet
