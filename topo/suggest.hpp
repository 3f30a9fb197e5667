// "Did you mean ...?": the known names closest to a mistyped one, for error messages.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tenet {

// Optimal string alignment distance (Levenshtein with adjacent transpositions), case-insensitive.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidates a user plausibly meant by `typed`, best first (at most `limit`): those within
// an edit distance of 1 for words of up to 3 letters, max(2, |typed| / 3) beyond, and those `typed`
// is a prefix of or that are a prefix of `typed` (torus -> torus2d, torus3d). Empty when nothing is
// close.
std::vector<std::string> nearest(std::string_view typed, std::span<const std::string> candidates,
                                 size_t limit = 3);

// " (did you mean 'a' or 'b'?)" for `nearest`'s answer, or "" when it is empty.
std::string did_you_mean(std::string_view typed, std::span<const std::string> candidates,
                         size_t limit = 3);

}  // namespace tenet
