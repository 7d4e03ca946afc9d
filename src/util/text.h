// Small text helpers shared by parsers of what people write by hand
// (comma-separated filters, colon-separated paths, mount lists, key = value
// files) and of short procfs/sysfs files.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace launchguard {

// The non-empty items between separators: "a,,b," -> {"a", "b"}.
std::vector<std::string> split_list(std::string_view text, char separator);

// A decimal integer that is the whole text ("-3", "42"; not "+5", " 7" or
// "7s"); nullopt also when it does not fit in a long.
std::optional<long> whole_number(std::string_view text);

// With ASCII letters in lower case; other bytes (UTF-8 included) unchanged.
std::string ascii_lower(std::string_view text);

// Without the ASCII whitespace (space, \t, \n, \r, \v, \f) at either end.
std::string_view trim(std::string_view text);

}  // namespace launchguard
