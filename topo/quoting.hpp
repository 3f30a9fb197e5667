// Names written into text that another program interprets: a POSIX shell script (ASTRA-sim's
// run.sh), a gnuplot script, a YAML file, and comments in any of them. A name is user input (a
// topology's, an algorithm's, a file's) and may hold any byte; what is written from it must mean
// that name and nothing else to the reader, whatever its bytes.
#pragma once

#include <string>
#include <string_view>

namespace tenet::topo {

// `text` as one line of display text, for a comment or a title: each ASCII control byte (below
// 0x20, and 0x7f) is written as a visible escape (\n, \r, \t, \xNN), each byte that is not part
// of valid UTF-8 as \xNN, and the C1 controls and Unicode line and paragraph separators (U+0080 to
// U+009F, U+2028, U+2029: line breaks to YAML 1.1 and some editors) as \uNNNN. The result is
// valid UTF-8 and holds no line break, so a comment ends where its writer ends it.
std::string one_line(std::string_view text);

// `text` as one word for a POSIX shell: in single quotes, inside which every byte but ' stands for
// itself (no expansion, no escapes, any byte >= 0x01), each ' written as '\''. Throws
// tenet::Error naming `what` when `text` holds a NUL byte, which no shell word can hold.
std::string shell_quoted(std::string_view text, std::string_view what);

}  // namespace tenet::topo
