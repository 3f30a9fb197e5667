#include "topo/quoting.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/topo/test_util.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"

namespace tenet::topo {
namespace {

using testing::TempDir;

TEST(Quoting, OneLineEscapesWhatWouldBreakTheLine) {
  EXPECT_EQ(one_line("plain name: ring 8"), "plain name: ring 8");
  EXPECT_EQ(one_line("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(one_line(std::string("nul\0x\x1b[31m\x7f", 11)), "nul\\x00x\\x1b[31m\\x7f");
  // Bytes that are not UTF-8 are escaped one by one; UTF-8 stays as it is.
  EXPECT_EQ(one_line("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(one_line("\xe2\x80"), "\\xe2\\x80");  // a character cut short
  EXPECT_EQ(one_line("gpu-\xc3\xa9t\xc3\xa9 \xe2\x86\x92"), "gpu-\xc3\xa9t\xc3\xa9 \xe2\x86\x92");
  // C1 controls and the Unicode line and paragraph separators (line breaks to YAML 1.1).
  EXPECT_EQ(one_line("a\xc2\x85"
                     "b\xe2\x80\xa8"
                     "c\xe2\x80\xa9"),
            "a\\u0085b\\u2028c\\u2029");
  for (const std::string s : {"\n\xff`x`\r", "\xc3", "\xed\xa0\x80\n"}) {
    const std::string line = one_line(s);
    EXPECT_TRUE(valid_utf8(line)) << line;
    for (char ch : line) EXPECT_GE(static_cast<unsigned char>(ch), 0x20) << line;
  }
}

// Each word, given to sh, is the name's bytes exactly, and runs nothing.
TEST(Quoting, ShellQuotedIsOneWordThatShReadsBack) {
  TempDir tmp;
  const std::string marker = tmp.file("PWNED");
  const std::vector<std::string> names = {
      "it's",
      "a`touch " + marker + "`b",
      "$(touch " + marker + ")",
      "\"; touch " + marker + "; echo \"",
      "'; touch " + marker + "; echo '",
      "line\ntouch " + marker + "\n",
      "\xff\xfe\\ $HOME !x *",
      "-n",
      "",
  };
  for (const std::string& name : names) {
    const std::string out = tmp.file("out");
    const std::string command = fmt::format("printf '%s' {} > {}", shell_quoted(name, "a name"),
                                            shell_quoted(out, "the output"));
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    EXPECT_EQ(read_file(out), name) << command;
    EXPECT_FALSE(std::filesystem::exists(marker)) << command;
  }
}

TEST(Quoting, ANulByteIsRefusedByName) {
  try {
    shell_quoted(std::string("ab\0c", 4), "the workload's file name");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "the workload's file name 'ab\\x00c' holds a NUL byte (at offset 2), which a shell "
              "word cannot hold");
  }
}

}  // namespace
}  // namespace tenet::topo
