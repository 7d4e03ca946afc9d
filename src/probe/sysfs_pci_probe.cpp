// The PCI subsystem under sysfs: IOMMU groups and units, PCIe link states
// and capabilities, GPUDirect RDMA's peer memory (sysfs_pci.h, sysfs_probe.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "probe/sysfs_pci.h"
#include "probe/sysfs_probe.h"
#include "probe/sysfs_reading.h"
#include "probe/text_file.h"
#include "util/input_file.h"
#include "util/text.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;
using sysfs::entries;
using sysfs::is_dir;
using sysfs::read_attribute;
using sysfs::read_number;
using sysfs::record_file;

// The kind of IOMMU from the name its driver registers it under in
// /sys/class/iommu: arm-smmu-v3.c "smmu3.%pa", arm-smmu.c "smmu.%pa",
// Intel's dmar.c "dmar%d", AMD's init.c "ivhd%d" (Linux drivers/iommu/).
std::string iommu_kind(std::string_view name) {
    if (name.starts_with("smmu3.")) return "arm-smmu-v3";
    if (name.starts_with("smmu.")) return "arm-smmu";
    if (name.starts_with("dmar")) return "intel-vt-d";
    if (name.starts_with("ivhd")) return "amd-vi";
    return {};
}

std::optional<PcieLink> read_link(const std::string& dev, const char* speed_file, const char* width_file) {
    auto speed = read_attribute(dev + "/" + speed_file);
    auto width = read_number<int>(dev + "/" + width_file);
    std::optional<double> gts = speed ? parse_link_speed(*speed) : std::nullopt;
    if (!gts && (!width || *width <= 0)) return std::nullopt;
    PcieLink link;
    link.speed_gts = gts.value_or(0);
    link.width = width.value_or(0);
    return link;
}

std::optional<PcieLinkRecord> read_pcie_link(const std::string& dir, const std::string& busid) {
    auto current = read_link(dir + "/" + busid, "current_link_speed", "current_link_width");
    auto max = read_link(dir + "/" + busid, "max_link_speed", "max_link_width");
    if (!current && !max) return std::nullopt;
    PcieLinkRecord rec;
    rec.busid = ascii_lower(busid);
    rec.current = current.value_or(PcieLink{});
    rec.max = max.value_or(PcieLink{});
    return rec;
}

// NCCL's peer-memory markers (ncclIbGdrSupport, src/transport/net_ib/gdr.cc),
// relative to the root.
constexpr std::array kPeerMemoryMarkers = std::to_array<std::string_view>({
    "sys/kernel/mm/memory_peers/nv_mem/version",
    "sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "sys/module/nvidia_peermem/version",
});

std::uint32_t read_le(std::string_view bytes, std::size_t offset, std::size_t width) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < width; ++i)
        v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
    return v;
}

}  // namespace

namespace sysfs {

Fact<std::vector<IommuUnit>> probe_iommu_units(const std::string& root) {
    std::string dir = under_root(root, "sys/class/iommu");
    if (!is_dir(dir)) {
        if (is_dir(under_root(root, "sys/class"))) {
            return Fact<std::vector<IommuUnit>>::known({}, dir + " absent: no IOMMU registered");
        }
        return Fact<std::vector<IommuUnit>>::unknown("no " + under_root(root, "sys/class") + " to list IOMMUs in");
    }
    std::vector<IommuUnit> units;
    for (const auto& name : entries(dir)) units.push_back(IommuUnit{name, iommu_kind(name)});
    return Fact<std::vector<IommuUnit>>::known(std::move(units), dir);
}

Fact<std::vector<IommuGroup>> probe_iommu(const std::string& root) {
    std::string dir = under_root(root, "sys/kernel/iommu_groups");
    if (!is_dir(dir)) {
        // With sysfs present, a missing iommu_groups means no IOMMU translates anything.
        if (is_dir(under_root(root, "sys/kernel"))) {
            return Fact<std::vector<IommuGroup>>::known({}, dir + " absent: IOMMU disabled");
        }
        return Fact<std::vector<IommuGroup>>::unknown("no " + under_root(root, "sys/kernel") +
                                                      " to read IOMMU groups from");
    }
    std::vector<IommuGroup> groups;
    for (const auto& id : entries(dir)) {
        IommuGroup g;
        g.id = id;
        g.type = read_attribute(dir + "/" + id + "/type").value_or("");
        for (const auto& dev : entries(dir + "/" + id + "/devices")) g.devices.push_back(ascii_lower(dev));
        groups.push_back(std::move(g));
    }
    // Numeric order ("2" before "10") keeps evidence readable.
    std::sort(groups.begin(), groups.end(), [](const IommuGroup& a, const IommuGroup& b) {
        return a.id.size() != b.id.size() ? a.id.size() < b.id.size() : a.id < b.id;
    });
    return Fact<std::vector<IommuGroup>>::known(std::move(groups), dir);
}

std::map<std::string, PcieLinkRecord> read_pcie_links(const std::string& root) {
    std::string dir = under_root(root, "sys/bus/pci/devices");
    std::map<std::string, PcieLinkRecord> links;
    for (const auto& busid : entries(dir)) {
        if (auto rec = read_pcie_link(dir, busid)) links[rec->busid] = std::move(*rec);
    }
    return links;
}

Fact<std::map<std::string, PcieLinkRecord>> probe_pcie(const std::string& root) {
    std::string dir = under_root(root, "sys/bus/pci/devices");
    if (!is_dir(dir)) return Fact<std::map<std::string, PcieLinkRecord>>::unknown("no " + dir);
    return Fact<std::map<std::string, PcieLinkRecord>>::known(read_pcie_links(root), dir);
}

void apply_link(PciLinkState& state, const std::map<std::string, PcieLinkRecord>& links, const std::string& busid) {
    auto it = links.find(ascii_lower(busid));
    if (it == links.end()) return;
    if (it->second.current.width > 0 || it->second.current.speed_gts > 0) state.current = it->second.current;
    if (it->second.max.width > 0 || it->second.max.speed_gts > 0) state.max = it->second.max;
}

Fact<GpuDirectRdma> probe_gpudirect(const std::string& root) {
    GpuDirectRdma gdr;
    for (auto marker : kPeerMemoryMarkers) {
        std::string path = under_root(root, marker);
        std::error_code ec;
        // NCCL tests with access(F_OK): existence is enough.
        if (fs::exists(path, ec)) {
            gdr.peer_memory.push_back(path);
            read_attribute(path);  // for a gathered tree: the file must be there to be found again
        }
    }
    gdr.peermem_module_loaded = is_dir(under_root(root, "sys/module/nvidia_peermem"));
    if (auto text = read_text_file(under_root(root, "proc/driver/nvidia/version"), kMaxAttributeBytes)) {
        record_file(under_root(root, "proc/driver/nvidia/version"), *text);
        std::string_view first = *text;
        first = trim(first.substr(0, first.find('\n')));
        gdr.nvidia_driver = std::string(first);
    }
    gdr.kernel_release = read_attribute(under_root(root, "proc/sys/kernel/osrelease"));
    if (!is_dir(under_root(root, "sys/kernel")) && !is_dir(under_root(root, "sys/module"))) {
        return Fact<GpuDirectRdma>::unknown("no " + under_root(root, "sys/kernel") + " or " +
                                            under_root(root, "sys/module") + " to look for peer-memory modules in");
    }
    return Fact<GpuDirectRdma>::known(
        std::move(gdr), under_root(root, "sys/kernel/mm/memory_peers") + ", " + under_root(root, "sys/module"));
}

}  // namespace sysfs

PciCapabilities parse_pci_capabilities(std::string_view config) {
    constexpr std::size_t kExtendedStart = 0x100;
    constexpr std::size_t kConfigSize = 0x1000;
    constexpr std::uint32_t kAcsId = 0x000D;
    constexpr std::uint32_t kAtsId = 0x000F;
    constexpr std::size_t kControlOffset = 6;
    PciCapabilities caps;
    if (config.size() < kExtendedStart + 4) return caps;
    caps.extended_readable = true;
    std::size_t offset = kExtendedStart;
    // At most one capability per dword of the extended space: a loop in the
    // list (a broken device) ends there.
    for (int guard = 0; guard < static_cast<int>((kConfigSize - kExtendedStart) / 4); ++guard) {
        if (offset < kExtendedStart || offset + 8 > config.size()) break;
        std::uint32_t header = read_le(config, offset, 4);
        // An all-zero or all-ones header ends the list (no capability, or a
        // device that did not answer).
        if (header == 0 || header == 0xffffffffU) break;
        std::uint32_t id = header & 0xffffU;
        if (id == kAcsId) caps.acs_control = static_cast<std::uint16_t>(read_le(config, offset + kControlOffset, 2));
        if (id == kAtsId) caps.ats_control = static_cast<std::uint16_t>(read_le(config, offset + kControlOffset, 2));
        std::size_t next = (header >> 20) & 0xffcU;
        if (next == 0) break;
        offset = next;
    }
    return caps;
}

Fact<std::map<std::string, PciCapabilities>> probe_pci_capabilities(const std::string& root,
                                                                    const std::vector<std::string>& busids) {
    std::string dir = under_root(root, "sys/bus/pci/devices");
    if (!is_dir(dir)) return Fact<std::map<std::string, PciCapabilities>>::unknown("no " + dir);
    std::map<std::string, PciCapabilities> out;
    for (const auto& busid : busids) {
        if (busid.empty() || out.count(busid) != 0) continue;
        std::string path = dir + "/" + busid + "/config";
        // Config space is 4 KiB at most; read_text_file takes bytes as they are.
        auto bytes = read_text_file(path, 4096);
        if (!bytes) continue;
        record_file(path, *bytes);
        out[busid] = parse_pci_capabilities(*bytes);
    }
    return Fact<std::map<std::string, PciCapabilities>>::known(std::move(out), dir + "/*/config");
}

std::optional<double> parse_link_speed(std::string_view text) {
    text = trim(text);
    // strtod needs a terminated string; the text is short.
    std::string s(text);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || v <= 0) return std::nullopt;
    std::string_view rest = trim(std::string_view(end));
    if (rest.substr(0, 4) != "GT/s") return std::nullopt;
    return v;
}

Fact<std::map<std::string, PcieLinkRecord>> probe_pcie_links(const std::string& root,
                                                             const std::vector<std::string>& busids) {
    std::string dir = under_root(root, "sys/bus/pci/devices");
    if (!is_dir(dir)) return Fact<std::map<std::string, PcieLinkRecord>>::unknown("no " + dir);
    std::map<std::string, PcieLinkRecord> links;
    for (const auto& busid : busids) {
        if (busid.empty() || links.count(ascii_lower(busid)) != 0) continue;
        if (auto rec = read_pcie_link(dir, ascii_lower(busid))) links[rec->busid] = std::move(*rec);
    }
    return Fact<std::map<std::string, PcieLinkRecord>>::known(std::move(links), dir);
}

}  // namespace launchguard
