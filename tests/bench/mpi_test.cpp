// `mpirun -n 3 tenet bench` writes exactly the rows of a single process (wall-clock columns
// aside), and a failure before the run stops every rank with one message and no files.
// Built only when CMake found MPI and an mpirun (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "bench/table.hpp"
#include "topo/io.hpp"

namespace tenet::bench {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int status;
  std::string out, err;
};

// Runs a shell command line; stdout and stderr captured in files under `dir`.
Ran shell(const std::string& command, const fs::path& dir) {
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  const int raw =
      std::system(fmt::format("{} > '{}' 2> '{}'", command, out.string(), err.string()).c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : 128, topo::read_file(out.string()),
          topo::read_file(err.string())};
}

std::string mpirun(int processes) {
  // --oversubscribe: more processes than this machine's cores (Open MPI's mpirun, Debian's
  // default).
  return fmt::format("'{}' --oversubscribe {} {} '{}'", TENET_MPIEXEC, TENET_MPIEXEC_NUMPROC_FLAG,
                     processes, TENET_BINARY);
}

// The CSV's rows without the named wall-clock column.
std::vector<std::vector<std::string>> rows_without(const fs::path& csv, const std::string& column) {
  auto rows = parse_csv(topo::read_file(csv.string()));
  EXPECT_FALSE(rows.empty()) << csv;
  if (rows.empty()) return rows;
  const auto at = std::find(rows[0].begin(), rows[0].end(), column);
  EXPECT_NE(at, rows[0].end()) << column;
  const auto index = static_cast<size_t>(at - rows[0].begin());
  for (auto& row : rows) {
    EXPECT_GT(row.size(), index);
    if (row.size() > index) row.erase(row.begin() + static_cast<std::ptrdiff_t>(index));
  }
  return rows;
}

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    // Open MPI refuses to run as root (CI containers) unless told twice.
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    dir_ = fs::temp_directory_path() /
           fmt::format("tenet_mpi_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(Mpi, ThreeProcessesWriteTheRowsOfOne) {
  // Cases of different cost (an 8-NPU hypercube beside 4-NPU rings), not-applicable baselines,
  // replays on a backend, and training-iteration simulations.
  topo::write_file_atomically((dir_ / "suite.yaml").string(), R"(name: mpi
topologies: [ring:4, switch:6, "mesh2d:2x3", hypercube:8]
collectives: [all-reduce, all-gather, all-to-all]
sizes: [64KiB, 4MiB]
chunks: [1, auto]
networks: [analytical]
workloads: [resnet50, {model: gpt3-175b, tp: 2, batch: 1, seq-len: 64}]
sim-algorithms: [tenet, ring]
)");
  const std::string suite = (dir_ / "suite.yaml").string();
  const Ran one = shell(
      fmt::format("'{}' bench '{}' -j 1 -o '{}'", TENET_BINARY, suite, (dir_ / "one").string()),
      dir_);
  ASSERT_EQ(one.status, 0) << one.out << one.err;
  const Ran three = shell(
      fmt::format("{} bench '{}' -o '{}'", mpirun(3), suite, (dir_ / "three").string()), dir_);
  ASSERT_EQ(three.status, 0) << three.out << three.err;
  EXPECT_NE(three.out.find("over 3 MPI processes"), std::string::npos) << three.out;
  EXPECT_NE(three.out.find("on 3 processes (MPI) x 1 thread each"), std::string::npos) << three.out;
  EXPECT_NE(three.out.find("items (busy seconds) per rank: "), std::string::npos) << three.out;
  EXPECT_NE(one.out.find("on 1 process x 1 thread"), std::string::npos) << one.out;

  const auto a = rows_without(dir_ / "one" / "results.csv", "build_s");
  const auto b = rows_without(dir_ / "three" / "results.csv", "build_s");
  EXPECT_EQ(std::count_if(a.begin(), a.end(), [](const auto& row) { return row[6] == "tenet"; }),
            4 * 3 * 2 * 2)
      << "a tenet row per case";
  EXPECT_EQ(a, b);
  const auto sa = rows_without(dir_ / "one" / "simulations.csv", "sim_s");
  const auto sb = rows_without(dir_ / "three" / "simulations.csv", "sim_s");
  EXPECT_EQ(sa.size(), 1u + 4 * 2 * 1 * 2);
  EXPECT_EQ(sa, sb);
  EXPECT_EQ(topo::read_file((dir_ / "one" / "report.md").string()),
            topo::read_file((dir_ / "three" / "report.md").string()));
}

TEST_F(Mpi, BadInputStopsEveryRankWithOneMessageAndNoFiles) {
  const Ran r = shell(fmt::format("{} bench --quick --compare-to '{}' -o '{}'", mpirun(2),
                                  (dir_ / "old.csv").string(), (dir_ / "out").string()),
                      dir_);
  EXPECT_NE(r.status, 0);
  const std::string message = "old.csv: cannot open file";
  const size_t first = r.err.find(message);
  EXPECT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(message, first + 1), std::string::npos) << "printed by more than one rank:\n"
                                                               << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace tenet::bench
