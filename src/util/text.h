// Small text helpers shared by parsers of lists people write by hand
// (comma-separated filters, colon-separated paths, mount lists).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace launchguard {

// The non-empty items between separators: "a,,b," -> {"a", "b"}.
std::vector<std::string> split_list(std::string_view text, char separator);

}  // namespace launchguard
