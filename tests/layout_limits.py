#!/usr/bin/env python3
"""The house's size limits (docs/design.md): a C++ source file under 800 lines, a function under 150.

Usage: layout_limits.py SOURCE_DIR
Reads every .cpp and .hpp under the project's own folders (not build trees). Prints each file or
function over its limit as `path:line: ...` and exits 1; exits 0 when none is.

A function is a brace-delimited body at namespace or class scope whose head (the text since the
last `;`, `{` or `}`) holds a parameter list: functions, member functions, TEST bodies and
PYBIND11_MODULE alike. Lambdas and blocks inside a function count towards that function; namespace,
class, struct, union and enum bodies, and initializers (`= {`, `= [] {`) are not functions.
Comments, string and character literals (raw strings too) are read past, not parsed.
"""

import os
import re
import sys

FILE_LIMIT = 800
FUNCTION_LIMIT = 150
FOLDERS = ["astra", "bench", "chakra", "cli", "export", "python", "sim", "synth", "tests", "topo"]


def in_number(text, i):
    """Whether the ' at `i` is inside a number literal: the token before it starts with a digit."""
    k = i
    while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_.'"):
        k -= 1
    return k < i and text[k].isdigit()


def code_only(text):
    """`text` with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
            continue
        raw = re.match(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            j = text.find(close, i + raw.end())
            j = n if j < 0 else j + len(close)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
            continue
        if c == "'" and in_number(text, i):  # a digit separator (1'000'000), not a literal
            out.append(c)
            i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = min(j + 1, n)
            continue
        out.append(c)
        i += 1
    return "".join(out)


NOT_A_FUNCTION = re.compile(
    r"\bnamespace(?:\s+[\w:]+)?$|"
    r"^(?:template\s*<.*>\s*)?(?:namespace|class|struct|union|enum|extern)\b|=\s*$|=\s*\[.*\]\s*"
    r"(?:\(.*\))?\s*(?:mutable\s*)?(?:->.*)?$|^(?:if|for|while|switch|catch|do|else)\b"
)


def long_functions(text):
    """(first line, lines, head) of each function body over FUNCTION_LIMIT lines."""
    code = code_only(text)
    found = []
    stack = []  # per open brace: (is a function, its line, its head)
    depth_in_function = 0
    line, last = 1, 0
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            head = " ".join(code[last:i].split())
            function = (
                depth_in_function == 0
                and ")" in head
                and not NOT_A_FUNCTION.search(head)
            )
            stack.append((function, line, head))
            depth_in_function += 1 if function else 0
            last = i + 1
        elif c == "}":
            if stack:
                function, first, head = stack.pop()
                if function:
                    depth_in_function -= 1
                    if line - first + 1 > FUNCTION_LIMIT:
                        found.append((first, line - first + 1, head))
            last = i + 1
        elif c == ";":
            last = i + 1
    return found


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = sys.argv[1]
    problems = []
    for folder in FOLDERS:
        for base, dirs, files in os.walk(os.path.join(root, folder)):
            dirs.sort()
            for name in sorted(files):
                if not name.endswith((".cpp", ".hpp")):
                    continue
                path = os.path.join(base, name)
                shown = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                lines = text.count("\n") + (0 if text.endswith("\n") else 1)
                if lines > FILE_LIMIT:
                    problems.append(f"{shown}:1: {lines} lines, over the {FILE_LIMIT} a file may hold")
                for first, length, head in long_functions(text):
                    problems.append(
                        f"{shown}:{first}: a function of {length} lines, over {FUNCTION_LIMIT}: "
                        f"{head if len(head) <= 100 else head[:97] + '...'}"
                    )
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
