// Small helpers for reading the short text files of procfs and sysfs. Every
// probe reads files this way so that errors name the path the same way.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.h"

namespace launchguard {

// The whole file, at most max_bytes of it. procfs files report size 0, so this
// reads until EOF rather than trusting stat.
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes = 16U << 20);

// The file's content without surrounding whitespace, or nullopt when it cannot
// be read (absent, permission, a sysfs attribute that errors on read).
std::optional<std::string> read_trimmed(const std::string& path);

std::string_view trim(std::string_view text);

// "/" + "sys/x" -> "/sys/x"; "/fixture" + "sys/x" -> "/fixture/sys/x".
std::string under_root(const std::string& root, std::string_view relative);

}  // namespace launchguard
