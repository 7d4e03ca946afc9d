// Helpers for the short text files of procfs and sysfs. Reading goes through
// util/input_file.h (read_text_file), so probes refuse FIFOs and devices and
// bound every read the same way as the rest of launchguard.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.h"
#include "util/input_file.h"
#include "util/text.h"  // trim, which probes use with read_text_file

namespace launchguard {

// The file's content without surrounding whitespace, or nullopt when it cannot
// be read (absent, permission, a sysfs attribute that errors on read).
std::optional<std::string> read_trimmed(const std::string& path);

// "/" + "sys/x" -> "/sys/x"; "/fixture" + "sys/x" -> "/fixture/sys/x".
std::string under_root(const std::string& root, std::string_view relative);

}  // namespace launchguard
