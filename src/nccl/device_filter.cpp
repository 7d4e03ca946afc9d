// NCCL_IB_HCA / NCCL_SOCKET_IFNAME as NCCL 2.30 reads them:
//   ncclIbInitDevices (transport/net_ib/init.cc) and ncclOsFindInterfaces
//   (os/linux.cc) strip one leading '^' (exclude), then one leading '='
//   (exact), in that order only; parseStringList (misc/utils.cc) splits the
//   rest on ',' (empty entries vanish, as with strtok_r) and each entry on
//   ':' into name, port, rail, plane (atoi; absent or empty -> -1); matchIf
//   compares a prefix (strncmp over strlen(filter name)) or, when exact, the
//   whole string; matchPort treats -1 on either side as "any"; matchIfList
//   with an empty list selects everything, before the '^' inversion.
//
// Nothing strips quotes or spaces anywhere on that path, so `"mlx5_0"` is a
// filter for names starting with a double quote and matches no device, and
// `^"mlx5_0"` excludes nothing.
#include "nccl/device_filter.h"

#include <cstdlib>
#include <string>

namespace launchguard::nccl {
namespace {

constexpr std::size_t kMaxIbFilters = 32;        // MAX_IB_DEVS
constexpr std::size_t kMaxIfnameFilters = 16;    // MAX_IFS
constexpr std::size_t kFilterNameCapacity = 63;  // netIf.prefix is char[64]

// atoi semantics for the port/rail/plane fields: leading number, else 0.
int leading_int(std::string_view text) {
    std::string copy(text);
    return std::atoi(copy.c_str());
}

// ncclOsStrSep (strsep) on ':' — consumes one field from `rest`; nullopt
// once the string is exhausted, like strsep returning NULL.
std::optional<std::string_view> take_field(std::optional<std::string_view>& rest) {
    if (!rest) return std::nullopt;
    std::string_view all = *rest;
    auto colon = all.find(':');
    if (colon == std::string_view::npos) {
        rest.reset();
        return all;
    }
    rest = all.substr(colon + 1);
    return all.substr(0, colon);
}

int optional_int_field(std::optional<std::string_view>& rest) {
    auto field = take_field(rest);
    return (field && !field->empty()) ? leading_int(*field) : -1;
}

DeviceFilter parse_filter(std::string_view text, std::size_t max_entries) {
    DeviceFilter filter;
    filter.text = std::string(text);
    // parseStringList works on a C string: anything after a NUL is invisible.
    text = text.substr(0, text.find('\0'));
    if (!text.empty() && text.front() == '^') {
        filter.exclude = true;
        text.remove_prefix(1);
    }
    if (!text.empty() && text.front() == '=') {
        filter.exact = true;
        text.remove_prefix(1);
    }
    std::size_t start = 0;
    while (start <= text.size() && filter.entries.size() < max_entries) {
        auto comma = text.find(',', start);
        std::string_view item =
            text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        std::optional<std::string_view> rest = item;
        auto name = take_field(rest);
        if (name && !name->empty()) {
            FilterEntry entry;
            entry.name = std::string(name->substr(0, kFilterNameCapacity));
            entry.port = optional_int_field(rest);
            entry.rail = optional_int_field(rest);
            entry.plane = optional_int_field(rest);
            filter.entries.push_back(std::move(entry));
        }
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return filter;
}

}  // namespace

DeviceFilter parse_hca_filter(std::string_view text) { return parse_filter(text, kMaxIbFilters); }

DeviceFilter parse_ifname_filter(std::string_view text) {
    DeviceFilter filter = parse_filter(text, kMaxIfnameFilters);
    // ncclFindInterfaces uses the variable only when strlen(env) > 1;
    // otherwise it auto-selects (ib*, NCCL_COMM_ID subnet, not docker/lo/virbr, ...).
    filter.ignored = filter.text.substr(0, filter.text.find('\0')).size() <= 1;
    return filter;
}

bool matches(const DeviceFilter& filter, std::string_view device, int port) {
    // An ignored NCCL_SOCKET_IFNAME does not restrict anything; NCCL's own
    // automatic choice applies instead.
    if (filter.ignored) return true;
    bool listed = filter.entries.empty();  // matchIfList: no list selects everything
    for (const auto& entry : filter.entries) {
        bool name_matches = filter.exact ? device == entry.name : device.starts_with(entry.name);
        bool port_matches = port == -1 || entry.port == -1 || port == entry.port;
        if (name_matches && port_matches) {
            listed = true;
            break;
        }
    }
    // The inversion applies to the whole result, empty list included: "^"
    // alone (or "^=") deselects every device.
    return listed != filter.exclude;
}

}  // namespace launchguard::nccl
