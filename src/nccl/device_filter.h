// NCCL's device-name filters: NCCL_IB_HCA (ncclIbInitDevices in NCCL's
// src/transport/net_ib/init.cc, parseStringList and matchIfList in
// src/misc/utils.cc) and NCCL_SOCKET_IFNAME (ncclOsFindInterfaces in
// src/os/linux.cc).
//   "mlx5"          prefix: mlx5_0, mlx5_10, ...
//   "=mlx5_0"       exact names only
//   "^mlx5_1"       everything except (prefix), "^=" exclude exact
//   "mlx5_0:1"      HCA and port (IB only)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace launchguard::nccl {

struct FilterEntry {
    std::string name;
    int port = -1;  // -1 = any port
    int rail = -1;  // NCCL_IB_HCA <hca>:<port>:<rail>:<plane> (2.30+); -1 = absent
    int plane = -1;
};

struct DeviceFilter {
    std::string text;      // the original value, quotes and all
    bool exclude = false;  // leading '^'
    bool exact = false;    // '=' (after '^' if any)
    std::vector<FilterEntry> entries;
    bool ignored = false;  // NCCL_SOCKET_IFNAME of length <= 1 is ignored by NCCL
};

DeviceFilter parse_hca_filter(std::string_view text);
DeviceFilter parse_ifname_filter(std::string_view text);

// Does the filter select this device/port? port = -1 matches any port entry.
bool matches(const DeviceFilter& filter, std::string_view device, int port = -1);

}  // namespace launchguard::nccl
