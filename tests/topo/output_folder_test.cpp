// Output folders written whole or not at all (topo/output_folder.hpp).
#include "topo/output_folder.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/topo/test_util.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/no_follow.hpp"
#include "topo/shown_paths.hpp"

namespace tenet::topo {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Every entry under `dir`, relative, hidden ones included.
std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.insert(e.path().lexically_relative(dir).string());
  return out;
}

// A name of Tenet's random pattern: what a run leaves.
std::string random_name(const std::string& prefix) {
  return prefix + no_follow::random_name_suffix();
}

// What a run killed inside step 2 leaves: its stage holding the files not yet moved, and its
// journal. Returns the stage's name.
std::string plant_killed_commit(const std::string& dir, const std::vector<std::string>& move,
                                const std::vector<std::string>& remove) {
  const std::string stage = random_name(".tenet-stage.");
  fs::create_directories(dir + "/" + stage);
  nlohmann::json j{{"stage", stage}, {"move", move}, {"remove", remove}};
  write_file_atomically(dir + "/" + random_name(".tenet-commit."), j.dump());
  return stage;
}

// The message of the tenet::Error `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OutputFolder, CommitsTheSetAndRemovesWhatItReplaces) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir + "/chakra");
  write_file_atomically(dir + "/chakra/g.5.et", "stale rank");
  write_file_atomically(dir + "/notes.txt", "the user's");
  write_file_atomically(dir + "/algorithm.json", "old");
  write_file_atomically(dir + "/algorithm.xml", "old format");
  OutputFolder out(dir);
  write_file_atomically(out.stage("algorithm.json"), "new");
  write_file_atomically(out.stage("chakra/g.0.et"), "rank 0");
  write_file_atomically(fs::path(out.staging_dir()) / "chakra" / "g.1.et",
                        "rank 1");  // beside, not named
  out.remove_at_commit("chakra/g.5.et");
  out.remove_at_commit("algorithm.json");  // staged: kept
  out.remove_at_commit("algorithm.xml");   // not written by this set: goes
  // Nothing is visible before the commit.
  EXPECT_EQ(read_file(dir + "/algorithm.json"), "old");
  EXPECT_FALSE(fs::exists(dir + "/chakra/g.0.et"));
  const std::vector<std::string> paths = out.commit();
  EXPECT_EQ(paths, (std::vector<std::string>{dir + "/algorithm.json", dir + "/chakra/g.0.et",
                                             dir + "/chakra/g.1.et"}));
  EXPECT_EQ(read_file(dir + "/algorithm.json"), "new");
  EXPECT_EQ(listing(dir), (std::set<std::string>{"algorithm.json", "chakra", "chakra/g.0.et",
                                                 "chakra/g.1.et", "notes.txt"}));
}

// Only Tenet's own output names are ever removed, whatever a caller or a journal asks.
TEST(OutputFolder, RemovesOnlyOutputNames) {
  EXPECT_TRUE(is_output_name("algorithm.json"));
  EXPECT_TRUE(is_output_name("chakra/algorithm.3.et"));
  EXPECT_TRUE(is_output_name("astra-sim/run.sh"));
  EXPECT_TRUE(is_output_name("workload.12.et"));
  for (const char* other : {"notes.txt", "thesis.tmp.31999", "chakra", "../algorithm.json",
                            "/etc/passwd", "a/../algorithm.json", "x.et", ".3.et", "a.b3.et", ""})
    EXPECT_FALSE(is_output_name(other)) << other;
  TempDir tmp;
  OutputFolder out(tmp.file("out"));
  EXPECT_THROW(out.remove_at_commit("notes.txt"), Error);
  // The journal is JSON: a name that is not UTF-8 is refused when staged, with the name shown.
  EXPECT_NE(error_of([&] { out.stage("w\xff.0.et"); }).find("w\\xff.0.et' is not valid UTF-8"),
            std::string::npos);
}

// A later set that writes fewer formats leaves only its own: the folder describes one run.
TEST(OutputFolder, AReplacedTreeKeepsOnlyThisSetsFiles) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir + "/astra-sim/workload");
  write_file_atomically(dir + "/astra-sim/run.sh", "old");
  write_file_atomically(dir + "/astra-sim/workload/w.0.et", "old");
  fs::create_directories(dir + "/plots");
  write_file_atomically(dir + "/plots/old.svg", "old");
  OutputFolder out(dir);
  out.replace_tree_at_commit("astra-sim");
  out.replace_tree_at_commit("plots");
  write_file_atomically(out.stage("plots/new.svg"), "new");
  out.commit();
  EXPECT_EQ(listing(dir), (std::set<std::string>{"plots", "plots/new.svg"}));
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
  write_file_atomically(out.stage("algorithm.json"), "new");
  write_file_atomically(out.stage("chakra/g.0.et"), "rank 0");
  write_file_atomically(fs::path(out.staging_dir()) / "chakra" / "g.1.et",
                        "rank 1");  // beside, not named
  write_file_atomically(out.stage("chakraX/g.0.et"), "not under chakra/");
  out.remove_at_commit("chakra/g.5.et");
  out.remove_at_commit("./chakra/system.json");
  out.drop("chakra");
  EXPECT_EQ(out.commit(),
            (std::vector<std::string>{dir + "/algorithm.json", dir + "/chakraX/g.0.et"}));
  EXPECT_EQ(listing(dir),
            (std::set<std::string>{"algorithm.json", "chakra", "chakra/g.5.et",
                                   "chakra/system.json", "chakraX", "chakraX/g.0.et"}));
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
  std::filesystem::permissions(tmp.file("big"), std::filesystem::perms(0644));  // (any umask)
  EXPECT_TRUE(FileBytes(tmp.file("big")).mapped());
  // A file others may write is read whole, never mapped: truncated in place while mapped, the
  // next page read would kill the process (SIGBUS).
  std::filesystem::permissions(tmp.file("big"), std::filesystem::perms::others_write,
                               std::filesystem::perm_options::add);
  {
    const FileBytes shared(tmp.file("big"));
    EXPECT_FALSE(shared.mapped());
    ASSERT_EQ(::truncate(tmp.file("big").c_str(), 10), 0);
    EXPECT_EQ(shared.view(), bytes);
  }
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
  EXPECT_NE(error_of([&] {
              out.commit();
            }).find("cannot create folder " + dir + "/chakra: " + dir + "/chakra is a file"),
            std::string::npos);
  EXPECT_EQ(read_file(dir + "/a.json"), "old");
}

// A staged file that cannot be written is named, in the error, as the file it was to become: not
// by the stage's descriptor (/proc/self/fd/<n>/...), a path the user never gave. Here the staged
// path is longer than a path may be (ENAMETOOLONG, whoever runs the test).
TEST(OutputFolder, AStagedWriteErrorNamesTheFileItWasToBecome) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  std::string relative = "chakra";
  while (relative.size() < 4200) relative += "/" + std::string(200, 'd');
  relative += "/g.0.et";
  OutputFolder out(dir);
  const std::string staged = out.stage(relative);
  try {
    write_file_atomically(staged, "rank 0");
    FAIL() << "a path of " << staged.size() << " characters was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, dir + "/" + relative);
    EXPECT_EQ(std::string(e.what()).find(".tenet-stage"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("/proc/self/fd"), std::string::npos) << e.what();
  }
}

// What is under a registered root is shown under its folder while registered, and only that (not
// the root itself, nor a longer name); afterwards a path is shown as it is.
TEST(ShownPaths, AStagedPathIsShownAsItsFolderWhileItsStageLives) {
  const std::string root = "/proc/self/fd/7";
  {
    const shown_paths::Registration r(root, "out");
    EXPECT_EQ(Error("x", {root + "/chakra/g.0.et"}).where().file, "out/chakra/g.0.et");
    EXPECT_EQ(shown_paths::shown(root), root);  // (an error about the stage itself)
    EXPECT_EQ(shown_paths::shown("/proc/self/fd/77/a.json"), "/proc/self/fd/77/a.json");
    EXPECT_EQ(shown_paths::shown("/proc/self/fd/7a.json"), "/proc/self/fd/7a.json");
    {
      const shown_paths::Registration inner(root, "out2/");
      EXPECT_EQ(shown_paths::shown(root + "/a.json"), "out2/a.json");
    }
    EXPECT_EQ(shown_paths::shown(root + "/a.json"), "out/a.json");
  }
  EXPECT_EQ(Error("x", {root + "/a.json"}).where().file, root + "/a.json");
}

// A link inside the folder is never written or removed through, even where Tenet's own files go.
TEST(OutputFolder, NeverWritesThroughALinkInsideTheFolder) {
  TempDir tmp;
  const std::string dir = tmp.file("out"), elsewhere = tmp.file("elsewhere");
  fs::create_directories(dir);
  fs::create_directories(elsewhere);
  write_file_atomically(elsewhere + "/g.0.et", "precious");
  fs::create_directory_symlink(elsewhere, dir + "/chakra");
  OutputFolder out(dir);
  write_file_atomically(out.stage("chakra/g.0.et"), "rank 0");
  out.replace_tree_at_commit("chakra");
  EXPECT_NE(error_of([&] { out.commit(); }).find(dir + "/chakra is a symbolic link"),
            std::string::npos);
  EXPECT_EQ(read_file(elsewhere + "/g.0.et"), "precious");
  // A link where a file goes is replaced as a link: the file it named is untouched.
  fs::remove(dir + "/chakra");
  fs::create_symlink(elsewhere + "/g.0.et", dir + "/algorithm.json");
  OutputFolder again(dir);
  write_file_atomically(again.stage("algorithm.json"), "new");
  again.commit();
  EXPECT_FALSE(fs::is_symlink(dir + "/algorithm.json"));
  EXPECT_EQ(read_file(dir + "/algorithm.json"), "new");
  EXPECT_EQ(read_file(elsewhere + "/g.0.et"), "precious");
}

// Whoever may write the output folder may rename a live run's stage and put a link at its name:
// the staged files still go into the stage (written through its descriptor), never where the link
// points, and the commit refuses to move anything (its journal would name the link).
TEST(OutputFolder, AStageRenamedAndReplacedByALinkIsStillWrittenInPlace) {
  TempDir tmp;
  const std::string dir = tmp.file("out"), elsewhere = tmp.file("elsewhere");
  fs::create_directories(elsewhere);
  OutputFolder out(dir);
  const std::string staged = out.stage("chakra/g.0.et");
  std::string stage;
  for (const std::string& name : listing(dir))
    if (name.starts_with(".tenet-stage.") && name.find('/') == std::string::npos) stage = name;
  ASSERT_FALSE(stage.empty());
  fs::rename(dir + "/" + stage, dir + "/moved");
  fs::create_directory_symlink(elsewhere, dir + "/" + stage);
  write_file_atomically(staged, "rank 0");
  EXPECT_FALSE(fs::exists(elsewhere + "/chakra"));
  // (Read without read_file's lock: the stage's own flock, this run's, would hold it off.)
  std::ifstream in(dir + "/moved/chakra/g.0.et");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "rank 0");
  EXPECT_NE(error_of([&] { out.commit(); }).find("moved or replaced"), std::string::npos);
  EXPECT_EQ(listing(dir),
            (std::set<std::string>{stage, "moved", "moved/chakra", "moved/chakra/g.0.et"}));
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

// A run killed inside step 2: readers refuse the folder (it may mix two runs) and change nothing;
// the next writer completes the commit, then commits its own set.
TEST(OutputFolder, AKilledCommitIsRefusedByReadersAndCompletedByTheNextWriter) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir + "/chakra");
  // Killed half-way through step 2: algorithm.json moved, chakra/g.0.et not yet, g.7.et not yet
  // removed.
  write_file_atomically(dir + "/algorithm.json", "new");
  write_file_atomically(dir + "/chakra/g.0.et", "old rank 0");
  write_file_atomically(dir + "/chakra/g.7.et", "old rank 7");
  const std::string stage =
      plant_killed_commit(dir, {"algorithm.json", "chakra/g.0.et"}, {"chakra/g.7.et"});
  fs::create_directories(dir + "/" + stage + "/chakra");
  write_file_atomically(dir + "/" + stage + "/chakra/g.0.et", "new rank 0");
  const std::set<std::string> before = listing(dir);
  EXPECT_NE(
      error_of([&] { read_file(dir + "/chakra/g.0.et"); }).find("was killed during its commit"),
      std::string::npos);
  EXPECT_NE(error_of([&] { FileBytes b(dir + "/algorithm.json"); }).find("killed"),
            std::string::npos);
  EXPECT_EQ(listing(dir), before);  // a reader changes nothing
  OutputFolder out(dir);
  EXPECT_EQ(read_file(dir + "/chakra/g.0.et"), "new rank 0");
  out.commit();
  EXPECT_EQ(listing(dir), (std::set<std::string>{"algorithm.json", "chakra", "chakra/g.0.et"}));
}

// What killed runs left before deciding goes when the folder is written again; the user's own
// files that merely look like temporaries, and a live run's stage, stay.
TEST(OutputFolder, OnlyAKilledRunsOwnLeftoversGo) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  const std::string dead = random_name(".tenet-stage."), live = random_name(".tenet-stage."),
                    half_journal = random_name(".tenet-commit-tmp.");
  fs::create_directories(dir + "/" + dead + "/chakra");
  write_file_atomically(dir + "/" + dead + "/algorithm.json", "never committed");
  write_file_atomically(dir + "/" + half_journal, "{\"stage\":");
  fs::create_directories(dir + "/thesis.tmp.31999/chapter");
  write_file_atomically(dir + "/thesis.tmp.31999/chapter/1.tex", "the user's");
  write_file_atomically(dir + "/notes.txt.tmp.4242", "the user's");
  write_file_atomically(dir + "/.tenet-stage.4242", "old-style name: not ours to judge");
  // A live run (here: this test) holds its stage's flock; a pid in another namespace says nothing.
  fs::create_directories(dir + "/" + live);
  const int fd = ::open((dir + "/" + live).c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  { OutputFolder out(dir); }
  std::set<std::string> left = listing(dir);
  EXPECT_EQ(left, (std::set<std::string>{"thesis.tmp.31999", "thesis.tmp.31999/chapter",
                                         "thesis.tmp.31999/chapter/1.tex", "notes.txt.tmp.4242",
                                         ".tenet-stage.4242", live}));
  ::close(fd);
}

TEST(OutputFolder, AnUnreadableJournalIsAClearError) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  write_file_atomically(dir + "/" + random_name(".tenet-commit."), "{not json");
  EXPECT_NE(
      error_of([&] { OutputFolder out(dir); }).find("unreadable commit journal of a killed run"),
      std::string::npos);
}

// A planted journal (a folder someone shared) acts inside the folder, on Tenet's names, or not at
// all: outside files, links and the user's own files are never touched.
TEST(OutputFolder, APlantedJournalTouchesNothingOutsideTenetsNames) {
  TempDir tmp;
  const std::string dir = tmp.file("out"), outside = tmp.file("ssh");
  fs::create_directories(dir);
  fs::create_directories(outside);
  write_file_atomically(tmp.file("precious"), "keep");
  write_file_atomically(outside + "/authorized_keys", "keep");
  write_file_atomically(dir + "/notes.txt", "keep");
  const std::string stage = random_name(".tenet-stage.");
  const auto plant = [&](const nlohmann::json& j) {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().starts_with(".tenet-commit.")) fs::remove(e.path());
    fs::remove_all(dir + "/" + stage);
    fs::create_directories(dir + "/" + stage);
    write_file_atomically(dir + "/" + stage + "/authorized_keys", "attacker's key");
    fs::create_directory_symlink(outside, dir + "/" + stage + "/plots");
    write_file_atomically(dir + "/" + random_name(".tenet-commit."), j.dump());
  };
  fs::create_directory_symlink(outside, dir + "/chakra");
  const std::vector<nlohmann::json> journals = {
      {{"stage", stage}, {"move", nlohmann::json::array()}, {"remove", {"../precious"}}},
      {{"stage", ".."}, {"move", nlohmann::json::array()}, {"remove", nlohmann::json::array()}},
      {{"stage", stage}, {"move", {"chakra/authorized_keys"}}, {"remove", nlohmann::json::array()}},
      {{"stage", stage}, {"move", nlohmann::json::array()}, {"remove", {"chakra/authorized_keys"}}},
      {{"stage", stage}, {"move", {"plots/authorized_keys"}}, {"remove", nlohmann::json::array()}},
      {{"stage", stage}, {"move", nlohmann::json::array()}, {"remove", {"notes.txt"}}},
  };
  for (const nlohmann::json& j : journals) {
    plant(j);
    EXPECT_NE(error_of([&] { read_file(dir + "/notes.txt"); }), "") << j.dump();
    try {
      OutputFolder out(dir);
      out.commit();
    } catch (const Error&) {
    }
    EXPECT_EQ(read_file(tmp.file("precious")), "keep") << j.dump();
    EXPECT_EQ(std::set<std::string>(listing(outside)), std::set<std::string>{"authorized_keys"});
    std::ifstream keys(outside + "/authorized_keys");
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(keys), {}), "keep") << j.dump();
    EXPECT_TRUE(fs::exists(dir + "/notes.txt")) << j.dump();
  }
}

// A planted journal that moves a file into place under a name Tenet does not write (the user's own
// notes, a dotfile a shell reads) is refused whole: nothing moves, not even its output names.
TEST(OutputFolder, APlantedJournalMovesNothingButTenetsNames) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  write_file_atomically(dir + "/notes.txt", "keep");
  for (const std::string& target :
       {std::string("notes.txt"), std::string(".envrc"), std::string("src/build.sh")}) {
    const std::string stage = plant_killed_commit(dir, {"algorithm.json", target}, {});
    fs::create_directories(fs::path(dir + "/" + stage + "/" + target).parent_path());
    write_file_atomically(dir + "/" + stage + "/" + target, "attacker's");
    write_file_atomically(dir + "/" + stage + "/algorithm.json", "attacker's");
    EXPECT_NE(error_of([&] { OutputFolder out(dir); }).find("which Tenet does not write"),
              std::string::npos)
        << target;
    std::ifstream notes(dir + "/notes.txt");  // (Tenet's readers refuse the folder meanwhile)
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(notes), {}), "keep") << target;
    EXPECT_FALSE(fs::exists(dir + "/.envrc")) << target;
    EXPECT_FALSE(fs::exists(dir + "/src")) << target;
    EXPECT_FALSE(fs::exists(dir + "/algorithm.json")) << target;
    for (const auto& e : fs::directory_iterator(dir))  // (the next plant's alone)
      if (e.path().filename().string().starts_with(".tenet-")) fs::remove_all(e.path());
  }
}

// Another user's journal is not replayed, whatever it names: the writer refuses the folder and
// says what to remove. (Needs root, to give the journal to another user.)
TEST(OutputFolder, AnotherUsersJournalIsNotReplayed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant a file of another user";
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  const std::string stage = plant_killed_commit(dir, {"algorithm.json"}, {});
  write_file_atomically(dir + "/" + stage + "/algorithm.json", "another user's");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().starts_with(".tenet-commit.")) {
      ASSERT_EQ(::chown(e.path().c_str(), 65534, 65534), 0);
    }
  }
  EXPECT_NE(error_of([&] { OutputFolder out(dir); }).find("another user's run"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/algorithm.json"));
}

// Readers heed a killed commit's journal where this user or the folder's owner left it; one another
// user planted in a folder all may write (/tmp) keeps nothing unread, there or in the folders
// below. (Needs root, to give the journal to another user.)
TEST(FolderReadLock, AJournalAnotherUserPlantedKeepsNothingUnread) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant a file of another user";
  TempDir tmp;
  const std::string shared = tmp.file("shared"), below = shared + "/project";
  fs::create_directories(below);
  write_file_atomically(shared + "/topology.yaml", "npus: 2");
  write_file_atomically(below + "/algorithm.json", "{}");
  plant_killed_commit(shared, {"algorithm.json"}, {});
  EXPECT_NE(error_of([&] { read_file(shared + "/topology.yaml"); }).find("killed"),
            std::string::npos);  // (this user's own: heeded)
  for (const auto& e : fs::directory_iterator(shared)) {
    if (e.path().filename().string().starts_with(".tenet-commit.") &&
        ::chown(e.path().c_str(), 65534, 65534) != 0)
      GTEST_SKIP() << "cannot give a file to another user here (a user namespace?)";
  }
  EXPECT_EQ(read_file(shared + "/topology.yaml"), "npus: 2");
  EXPECT_EQ(FileBytes(below + "/algorithm.json").view(), "{}");
}

// Anyone who may open a folder may flock it (any user, in /tmp). Reading one file (each is one
// run's: commits rename files into place whole), a lock held past the grace where no commit is
// under way (no journal that counts) is read past with a note, once per folder: a later read there
// neither waits nor says it again. Where a journal says a commit is under way the reader waits for
// it, and a reader of a set of files (a Chakra prefix's ranks) for any lock; a lock held past the
// whole wait is an error naming the folder, not a hang.
TEST(FolderReadLock, ALockHeldForEverIsReadPastForOneFileWhereNoCommitIsUnderWay) {
  using std::chrono::milliseconds;
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  const milliseconds wait(5000), grace(100);
  const auto began = std::chrono::steady_clock::now();
  ::testing::internal::CaptureStderr();
  const std::string first_error =
      error_of([&] { FolderReadLock lock(dir, FolderRead::OneFile, wait, grace); });
  const std::string said = ::testing::internal::GetCapturedStderr();
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(first_error, "");
  EXPECT_GE(took, grace);
  EXPECT_LT(took, wait);
  EXPECT_NE(said.find("reading one file without the lock"), std::string::npos) << said;
  EXPECT_NE(said.find(dir), std::string::npos) << said;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(error_of([&] { FolderReadLock lock(dir, FolderRead::OneFile, wait, grace); }), "");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // (read past before: said once)
  // A set of files waits for the lock, whatever is in the folder.
  std::string error =
      error_of([&] { FolderReadLock lock(dir, FolderRead::Set, milliseconds(300), grace); });
  EXPECT_NE(error.find("lock of this folder"), std::string::npos) << error;
  EXPECT_NE(error.find(dir), std::string::npos) << error;
  // A commit under way (its journal, this user's): waited for, up to the whole wait.
  TempDir tmp2;
  const std::string busy = tmp2.file("busy");
  fs::create_directories(busy);
  write_file_atomically(busy + "/" + random_name(".tenet-commit."), R"({"stage":"x"})");
  const int busy_fd = ::open(busy.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(busy_fd, 0);
  ASSERT_EQ(::flock(busy_fd, LOCK_EX), 0);
  error =
      error_of([&] { FolderReadLock lock(busy, FolderRead::OneFile, milliseconds(300), grace); });
  EXPECT_NE(error.find("lock of this folder"), std::string::npos) << error;
  EXPECT_NE(error.find(busy), std::string::npos) << error;
  ::close(busy_fd);
  // Released: taken at once, and the journal of a killed commit refuses the folder.
  EXPECT_NE(error_of([&] {
              FolderReadLock lock(busy, FolderRead::OneFile, milliseconds(100));
            }).find("killed during its commit"),
            std::string::npos);
  ::close(fd);
  EXPECT_EQ(error_of([&] { FolderReadLock lock(dir, FolderRead::Set, milliseconds(100)); }), "");
}

// Two runs writing one folder at once leave exactly the set of the one that committed last: the
// earlier, larger set's extra ranks go although they appeared after the later run began.
TEST(OutputFolder, TwoWritersLeaveTheLastCommittedSet) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  const auto ranks_of = [](std::string_view name) { return name.ends_with(".et"); };
  OutputFolder small(dir), large(dir);
  for (int r = 0; r < 2; ++r)
    write_file_atomically(small.stage("chakra/g." + std::to_string(r) + ".et"), "small");
  for (int r = 0; r < 4; ++r)
    write_file_atomically(large.stage("chakra/g." + std::to_string(r) + ".et"), "large");
  small.remove_matching_at_commit("chakra", ranks_of);
  large.remove_matching_at_commit("chakra", ranks_of);
  large.commit();
  small.commit();
  EXPECT_EQ(listing(dir), (std::set<std::string>{"chakra", "chakra/g.0.et", "chakra/g.1.et"}));
  EXPECT_EQ(read_file(dir + "/chakra/g.1.et"), "small");
}

// A sub-folder the writer cannot write stops the commit before anything moves, as any other
// blocked target (run as an unprivileged user: root writes anywhere).
TEST(OutputFolder, AReadOnlySubFolderFailsBeforeAnythingMoves) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(2);
    const std::string dir = fs::temp_directory_path() / random_name("tenet-ro-");
    int code = 0;
    try {
      fs::create_directories(dir + "/chakra");
      write_file_atomically(dir + "/algorithm.json", "old");
      write_file_atomically(dir + "/chakra/g.0.et", "old");
      fs::permissions(dir + "/chakra", fs::perms::owner_read | fs::perms::owner_exec);
      OutputFolder out(dir);
      write_file_atomically(out.stage("algorithm.json"), "new");
      write_file_atomically(out.stage("chakra/g.0.et"), "new");
      code = error_of([&] { out.commit(); }).find("cannot write in " + dir + "/chakra") ==
                     std::string::npos
                 ? 3
                 : 0;
      if (read_file(dir + "/algorithm.json") != "old") code = 4;
    } catch (...) {
      code = 5;
    }
    fs::permissions(dir + "/chakra", fs::perms::owner_all);
    fs::remove_all(dir);
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 2) GTEST_SKIP() << "cannot drop root privileges here";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Outputs a user names that are not regular files: a pipe is written through, a link to a file
// writes the file it names, a folder is refused; none is replaced.
TEST(WriteFileAtomically, WritesThroughPipesAndLinksAndNeverReplacesThem) {
  TempDir tmp;
  const std::string fifo = tmp.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    std::ifstream in(fifo);
    ::_exit(std::string(std::istreambuf_iterator<char>(in), {}) == "trace" ? 0 : 1);
  }
  write_file_atomically(fifo, "trace");
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  write_file_atomically("/dev/null", "nothing");
  EXPECT_NE(error_of([&] { write_file_atomically("/dev/full", "x"); }).find("/dev/full"),
            std::string::npos);
  write_file_atomically(tmp.file("real"), "old");
  fs::create_symlink(tmp.file("real"), tmp.file("link"));
  write_file_atomically(tmp.file("link"), "new");
  EXPECT_TRUE(fs::is_symlink(tmp.file("link")));
  EXPECT_EQ(read_file(tmp.file("real")), "new");
  fs::create_directories(tmp.file("folder"));
  EXPECT_NE(error_of([&] { write_file_atomically(tmp.file("folder"), "x"); }).find("folder"),
            std::string::npos);
  EXPECT_EQ(listing(tmp.file("")), (std::set<std::string>{"fifo", "real", "link", "folder"}));
}

// An earlier run's file read from a folder a user may have been sent: a file is read whole, a
// missing one is none, a link (to a file or anywhere) and a FIFO are refused by name, and nothing
// is followed or waited for.
TEST(NoFollow, ReadFileAtReadsFilesAndRefusesLinksAndFifos) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tenet_readat_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "plain.csv") << "a,b\n1,2\n";
  std::filesystem::create_symlink(dir / "plain.csv", dir / "link.csv");
  std::filesystem::create_symlink("/etc/passwd", dir / "away.csv");
  ASSERT_EQ(::mkfifo((dir / "fifo.csv").c_str(), 0600), 0);
  std::filesystem::create_directories(dir / "folder.csv");
  const no_follow::Fd root = no_follow::open_root(dir.string());
  EXPECT_EQ(no_follow::read_file_at(root.get(), "plain.csv", "shown"), "a,b\n1,2\n");
  EXPECT_EQ(no_follow::read_file_at(root.get(), "missing.csv", "shown"), std::nullopt);
  for (const char* refused : {"link.csv", "away.csv", "fifo.csv", "folder.csv"}) {
    try {
      no_follow::read_file_at(root.get(), refused, (dir / refused).string());
      ADD_FAILURE() << refused;
    } catch (const Error& e) {
      EXPECT_EQ(e.where().file, (dir / refused).string()) << refused;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tenet::topo
