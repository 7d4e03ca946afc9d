// The fleet report as text for a terminal, as JSON (shape in docs/fleet.md),
// and as one self-contained HTML page: inline CSS and SVG, no script, nothing
// fetched, so it opens from a file share or a CI artifact on an offline
// cluster.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "fleet/fleet.h"

namespace launchguard::fleet {

// At most `limit` names, then "… (+N more)".
std::string abbreviate_nodes(const std::vector<std::string>& nodes, std::size_t limit = 6);
// 1021 -> "1,021".
std::string thousands(std::size_t n);

std::string render_fleet_text(const FleetReport& report);
boost::json::value fleet_to_json(const FleetReport& report);
// Rows of the nodes x rules view shown per class; the rest are counted.
inline constexpr std::size_t kHtmlRowsPerClass = 200;
std::string render_fleet_html(const FleetReport& report);

}  // namespace launchguard::fleet
