// Kubernetes resource quantities ("500m", "2", "1.5", "16Gi", "1e3") as the
// API server reads them, scaled to an integer unit and rounded up as it does.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace launchguard::kubernetes {

// CPU in millicores: "500m" -> 500, "2" -> 2000, "0.25" -> 250.
std::optional<std::int64_t> parse_millicores(std::string_view text);
// Bytes: "16Gi" -> 17179869184, "1G" -> 1000000000, "128974848" -> 128974848.
std::optional<std::int64_t> parse_quantity_bytes(std::string_view text);

}  // namespace launchguard::kubernetes
