// The JSON topology cache slurmd writes and every task reads. What loads
// must survive a write/read round trip unchanged (but for the source it
// records).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/topology_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto topo = launchguard::topology_from_json(text, "cache.json");
    if (!topo.ok()) return 0;
    std::string written = launchguard::topology_to_json(*topo);
    auto again = launchguard::topology_from_json(written, "rewritten.json");
    if (!again.ok()) std::abort();
    again->source = topo->source;  // the reader records where it read from
    if (launchguard::topology_to_json(*again) != written) std::abort();
    return 0;
}
