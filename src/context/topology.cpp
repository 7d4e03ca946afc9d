#include "context/topology.h"

#include <algorithm>
#include <cctype>

#include "util/text.h"

namespace launchguard {
namespace {

// Bus ids are stored lower case, but callers may pass what a user typed or
// what nvidia-smi prints ("00000000:3B:00.0"): compare case-insensitively and
// accept NVML's 8-digit PCI domain.
std::string normalize_busid(const std::string& busid) {
    std::string out = ascii_lower(busid);
    std::size_t colon = out.find(':');
    if (colon == 8 && std::count(out.begin(), out.end(), ':') == 2 && out.compare(0, 4, "0000") == 0) out.erase(0, 4);
    return out;
}

}  // namespace

const Gpu* NodeTopology::gpu_by_index(int index) const {
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const Gpu& g) { return g.index == index; });
    return it == gpus.end() ? nullptr : &*it;
}

const Gpu* NodeTopology::gpu_by_busid(const std::string& busid) const {
    std::string wanted = normalize_busid(busid);
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const Gpu& g) { return normalize_busid(g.busid) == wanted; });
    return it == gpus.end() ? nullptr : &*it;
}

const Gpu* NodeTopology::gpu_by_uuid(const std::string& uuid) const {
    if (uuid.empty()) return nullptr;
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const Gpu& g) { return g.uuid == uuid; });
    return it == gpus.end() ? nullptr : &*it;
}

std::size_t NodeTopology::active_ib_port_count() const {
    std::size_t n = 0;
    for (const auto& nic : nics) {
        n += static_cast<std::size_t>(
            std::count_if(nic.ports.begin(), nic.ports.end(), [](const IbPort& p) { return p.state == "ACTIVE"; }));
    }
    return n;
}

}  // namespace launchguard
