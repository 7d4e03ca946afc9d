// Human byte sizes used in profiles and flags: "1GiB", "512MiB", "64KiB",
// "1G" (binary, like Kubernetes' Gi and Docker's --shm-size), or plain bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/error.h"

namespace launchguard {

Result<std::uint64_t> parse_byte_size(std::string_view text);
// "1 GiB", "64 MiB", "1001 bytes": the largest binary unit that divides evenly.
std::string format_byte_size(std::uint64_t bytes);

}  // namespace launchguard
