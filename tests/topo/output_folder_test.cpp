// Output folders written whole or not at all (topo/output_folder.hpp).
#include "topo/output_folder.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "tests/topo/test_util.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"

namespace tenet::topo {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Every entry under `dir`, relative, hidden ones included.
std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.insert(fs::relative(e.path(), dir).string());
  return out;
}

// The pid of a process that has exited (and been reaped): what a killed run leaves in names.
int dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

TEST(OutputFolder, CommitsTheSetAndRemovesWhatItReplaces) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir + "/chakra");
  write_file_atomically(dir + "/chakra/g.5.et", "stale rank");
  write_file_atomically(dir + "/notes.txt", "the user's");
  write_file_atomically(dir + "/a.json", "old");
  OutputFolder out(dir);
  write_file_atomically(out.stage("a.json"), "new");
  write_file_atomically(out.stage("chakra/g.0.et"), "rank 0");
  write_file_atomically(fs::path(out.staging_dir()) / "chakra" / "g.1.et",
                        "rank 1");  // beside, not named
  out.remove_at_commit("chakra/g.5.et");
  out.remove_at_commit("a.json");  // staged: kept
  // Nothing is visible before the commit.
  EXPECT_EQ(read_file(dir + "/a.json"), "old");
  EXPECT_FALSE(fs::exists(dir + "/chakra/g.0.et"));
  const std::vector<std::string> paths = out.commit();
  EXPECT_EQ(paths, (std::vector<std::string>{dir + "/a.json", dir + "/chakra/g.0.et",
                                             dir + "/chakra/g.1.et"}));
  EXPECT_EQ(read_file(dir + "/a.json"), "new");
  EXPECT_EQ(listing(dir), (std::set<std::string>{"a.json", "chakra", "chakra/g.0.et",
                                                 "chakra/g.1.et", "notes.txt"}));
}

// A format dropped after staging (the export's ASTRA-sim emulation refused the graph) leaves its
// part of the folder as it was, stale files included, and the rest of the set commits.
TEST(OutputFolder, ADroppedPartIsNeitherWrittenNorCleared) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir + "/chakra");
  write_file_atomically(dir + "/chakra/g.5.et", "old rank 5");
  write_file_atomically(dir + "/chakra/system.json", "old system");
  OutputFolder out(dir);
  write_file_atomically(out.stage("a.json"), "new");
  write_file_atomically(out.stage("chakra/g.0.et"), "rank 0");
  write_file_atomically(fs::path(out.staging_dir()) / "chakra" / "g.1.et",
                        "rank 1");  // beside, not named
  write_file_atomically(out.stage("chakraX/keep"), "not under chakra/");
  out.remove_at_commit("chakra/g.5.et");
  out.remove_at_commit("./chakra/system.json");
  out.drop("chakra");
  EXPECT_EQ(out.commit(), (std::vector<std::string>{dir + "/a.json", dir + "/chakraX/keep"}));
  EXPECT_EQ(listing(dir), (std::set<std::string>{"a.json", "chakra", "chakra/g.5.et",
                                                 "chakra/system.json", "chakraX", "chakraX/keep"}));
  EXPECT_EQ(read_file(dir + "/chakra/g.5.et"), "old rank 5");
}

// Reading files whole: read_file, and FileBytes (mapped when regular), give the bytes of a file,
// an empty one, and a pipe, and name the path when there is no file to read.
TEST(ReadFile, GivesTheBytesOrACleanError) {
  TempDir tmp;
  std::string bytes(100'000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 % 251);
  write_file_atomically(tmp.file("big"), bytes);
  write_file_atomically(tmp.file("empty"), "");
  EXPECT_EQ(read_file(tmp.file("big")), bytes);
  EXPECT_EQ(FileBytes(tmp.file("big")).view(), bytes);
  EXPECT_EQ(read_file(tmp.file("empty")), "");
  EXPECT_EQ(FileBytes(tmp.file("empty")).view(), "");
  const std::string fifo = tmp.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    FILE* f = std::fopen(fifo.c_str(), "w");
    std::fputs("through a pipe", f);
    std::fclose(f);
    ::_exit(0);
  }
  EXPECT_EQ(FileBytes(fifo).view(), "through a pipe");
  ::waitpid(child, nullptr, 0);
  std::filesystem::create_directories(tmp.file("folder"));
  for (const std::string& path : {tmp.file("missing"), tmp.file("folder")}) {
    try {
      FileBytes b(path);
      ADD_FAILURE() << path << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(OutputFolder, NotCommittedLeavesTheFolderAsItWas) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  write_file_atomically(dir + "/a.json", "old");
  {
    OutputFolder out(dir);
    write_file_atomically(out.stage("a.json"), "new");
    write_file_atomically(out.stage("b.json"), "new");
  }  // a failure: thrown before commit()
  EXPECT_EQ(listing(dir), std::set<std::string>{"a.json"});
  EXPECT_EQ(read_file(dir + "/a.json"), "old");
}

TEST(OutputFolder, ABlockedTargetFailsBeforeAnythingMoves) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  write_file_atomically(dir + "/a.json", "old");
  write_file_atomically(dir + "/chakra", "a file where the folder goes");
  OutputFolder out(dir);
  write_file_atomically(out.stage("a.json"), "new");
  write_file_atomically(out.stage("chakra/g.0.et"), "rank 0");
  try {
    out.commit();
    FAIL() << "committed through a file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create folder " + dir + "/chakra: " + dir +
                                         "/chakra is a file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_file(dir + "/a.json"), "old");
}

TEST(OutputFolder, AKilledCommitIsCompletedByTheNextReader) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  const int pid = dead_pid();
  const std::string stage = ".tenet-stage." + std::to_string(pid);
  fs::create_directories(dir + "/" + stage + "/chakra");
  // Killed half-way through step 2: a.json moved, chakra/g.0.et not yet, g.7.et not yet removed.
  fs::create_directories(dir + "/chakra");
  write_file_atomically(dir + "/a.json", "new");
  write_file_atomically(dir + "/" + stage + "/chakra/g.0.et", "new rank 0");
  write_file_atomically(dir + "/chakra/g.0.et", "old rank 0");
  write_file_atomically(dir + "/chakra/g.7.et", "old rank 7");
  write_file_atomically(
      dir + "/.tenet-commit." + std::to_string(pid),
      R"({"stage": ")" + stage +
          R"(", "move": ["a.json", "chakra/g.0.et"], "remove": ["chakra/g.7.et"]})");
  EXPECT_EQ(read_file(dir + "/chakra/g.0.et"), "new rank 0");  // the reader completes it first
  EXPECT_EQ(listing(dir), (std::set<std::string>{"a.json", "chakra", "chakra/g.0.et"}));
}

TEST(OutputFolder, WhatAKilledRunLeftBeforeCommittingGoes) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  const int pid = dead_pid();
  fs::create_directories(dir + "/.tenet-stage." + std::to_string(pid) + "/chakra");
  write_file_atomically(dir + "/.tenet-stage." + std::to_string(pid) + "/a.json",
                        "never committed");
  write_file_atomically(dir + "/a.json.tmp." + std::to_string(pid), "half");
  write_file_atomically(dir + "/a.json", "old");
  // A live process's stage (this test's own pid) is another run at work: kept.
  fs::create_directories(dir + "/.tenet-stage." + std::to_string(::getpid()));
  settle_folder(dir);
  EXPECT_EQ(listing(dir),
            (std::set<std::string>{"a.json", ".tenet-stage." + std::to_string(::getpid())}));
  OutputFolder out(dir);  // and a writer settles too (its own stage replaces the leftover one)
  EXPECT_EQ(read_file(dir + "/a.json"), "old");
}

// Killed while writing its journal (the kill -9 test caught this): the commit was never decided,
// so the folder holds the old set, and even a reader drops the half-written journal.
TEST(OutputFolder, AJournalKilledWhileBeingWrittenIsDroppedByAReader) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  const std::string pid = std::to_string(dead_pid());
  fs::create_directories(dir);
  write_file_atomically(dir + "/a.json", "old");
  write_file_atomically(dir + "/.tenet-commit." + pid + ".tmp." + pid, "");
  EXPECT_EQ(read_file(dir + "/a.json"), "old");
  EXPECT_EQ(listing(dir), (std::set<std::string>{"a.json"}));
}

TEST(OutputFolder, AnUnreadableJournalIsAClearError) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  write_file_atomically(dir + "/.tenet-commit." + std::to_string(dead_pid()), "{not json");
  try {
    settle_folder(dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unreadable commit journal of a killed run"),
              std::string::npos)
        << e.what();
  }
}

TEST(OutputFolder, AJournalNamingFilesOutsideItsFolderIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  write_file_atomically(tmp.file("precious"), "keep");
  const std::string journal = dir + "/.tenet-commit." + std::to_string(dead_pid());
  write_file_atomically(journal,
                        R"({"stage": ".tenet-stage.1", "move": [], "remove": ["../precious"]})");
  EXPECT_THROW(settle_folder(dir), Error);
  write_file_atomically(journal, R"({"stage": "..", "move": [], "remove": []})");
  EXPECT_THROW(settle_folder(dir), Error);
  EXPECT_EQ(read_file(tmp.file("precious")), "keep");
}

}  // namespace
}  // namespace tenet::topo
