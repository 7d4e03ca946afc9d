// Node settings read from sysfs and procfs (sysfs_probe.h): CPU power,
// NUMA balancing, the kernel command line, virtualization, page size and
// architecture, the node's identity, and probe_node_facts, which assembles
// them with the PCI subsystem's probes (sysfs_pci_probe.cpp). Network
// devices are read in sysfs_net_probe.cpp; the reading primitives are in
// sysfs_reading.h.
#include "probe/sysfs_probe.h"

#include <sys/utsname.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "probe/sysfs_pci.h"
#include "probe/sysfs_reading.h"
#include "probe/text_file.h"
#include "util/input_file.h"
#include "util/text.h"

namespace launchguard {
namespace {

using sysfs::AttributeDir;
using sysfs::contains;
using sysfs::entries;
using sysfs::is_dir;
using sysfs::is_live;
using sysfs::numbered;
using sysfs::parse_number;
using sysfs::probe_gpudirect;
using sysfs::probe_iommu;
using sysfs::probe_iommu_units;
using sysfs::probe_pcie;
using sysfs::read_attribute;
using sysfs::read_flag;
using sysfs::read_number;
using sysfs::record_file;
using sysfs::recording_reads;

// "0 1 2 3" (cpufreq's affected_cpus) -> CPUs; empty when malformed.
std::vector<unsigned> cpu_numbers(std::string_view text) {
    std::vector<unsigned> cpus;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find_first_of(" \t\n", pos);
        if (end == std::string_view::npos) end = text.size();
        if (end > pos) {
            auto cpu = numbered(text.substr(pos, end - pos), "");
            if (!cpu) return {};
            cpus.push_back(*cpu);
        }
        pos = end + 1;
    }
    return cpus;
}

// cpufreq settings by policy (cpu/cpufreq/policyN, with the CPUs it drives in
// affected_cpus), for the CPUs whose own cpuN/cpufreq link was not there to
// read: a tree recorded by policy, or a kernel that exposes only the policies.
// cpuN/cpufreq is a link to its policy, so on a usual node every CPU was read
// already and this is not called. True when a policy gave a setting.
bool read_cpufreq_policies(const std::string& cpu_dir, CpuPower& power) {
    bool any = false;
    const std::string dir = cpu_dir + "/cpufreq";
    for (const auto& name : entries(dir)) {
        if (!numbered(name, "policy")) continue;
        const std::string base = dir + "/" + name;
        auto affected = read_attribute(base + "/affected_cpus");
        if (!affected) continue;
        std::vector<unsigned> cpus;
        for (unsigned cpu : cpu_numbers(*affected)) {
            if (power.governor.count(cpu) == 0) cpus.push_back(cpu);
        }
        if (cpus.empty()) continue;
        auto governor = read_attribute(base + "/scaling_governor");
        auto scaling_max = read_number<long>(base + "/scaling_max_freq");
        auto cpuinfo_max = read_number<long>(base + "/cpuinfo_max_freq");
        for (unsigned cpu : cpus) {
            if (governor) power.governor[cpu] = *governor;
            if (scaling_max && power.scaling_max_khz.count(cpu) == 0) power.scaling_max_khz[cpu] = *scaling_max;
            if (cpuinfo_max && power.cpuinfo_max_khz.count(cpu) == 0) power.cpuinfo_max_khz[cpu] = *cpuinfo_max;
        }
        any = any || governor.has_value();
    }
    return any;
}

// The first idle state of a CPU that power.cstates looks at for `disable`:
// the first two are polling and the shallowest halt, whose switch no rule
// reads (rules/power_rules.cpp, kFirstDeepState).
constexpr std::size_t kFirstDeepIdleState = 2;

// `set`: NodeFactSet::task leaves the `disable` of the two shallow idle
// states unread (false). On the live sysfs the state names are read from
// the first CPU only and given to the others, unless each CPU has a driver
// of its own (cpuN/cpuidle/driver, CONFIG_CPU_IDLE_MULTIPLE_DRIVERS) or a
// gather is recording: the kernel shows every CPU of a cpuidle driver the
// driver's own state names (drivers/cpuidle/sysfs.c). Either way four of a
// CPU's eleven files on a usual server (docs/performance.md).
Fact<CpuPower> probe_power(const std::string& root, NodeFactSet set) {
    std::string cpu_dir = under_root(root, "sys/devices/system/cpu");
    const bool live = is_live(root);
    CpuPower power;
    bool any_cpu = false;
    std::size_t cpus = 0;
    bool any_setting = false;
    // Names by state number, from the first CPU with idle states; absent
    // while names are read per CPU.
    std::optional<std::map<unsigned, std::string>> driver_names;
    bool names_decided = false;
    for (const auto& name : entries(cpu_dir)) {
        auto cpu = numbered(name, "cpu");
        if (!cpu) continue;
        any_cpu = true;
        ++cpus;
        std::string base = cpu_dir + "/" + name;
        AttributeDir attributes(base, live);
        if (auto g = attributes.read("cpufreq/scaling_governor")) {
            power.governor[*cpu] = *g;
            any_setting = true;
        }
        if (auto v = parse_number<long>(attributes.read("cpufreq/scaling_max_freq"))) power.scaling_max_khz[*cpu] = *v;
        if (auto v = parse_number<long>(attributes.read("cpufreq/cpuinfo_max_freq"))) power.cpuinfo_max_khz[*cpu] = *v;
        std::vector<std::pair<unsigned, std::string>> numbered_states;  // number, directory name
        for (const auto& state : entries(base + "/cpuidle")) {
            if (auto k = numbered(state, "state")) numbered_states.emplace_back(*k, state);
        }
        // state10 sorts before state2 by name; order by number.
        std::sort(numbered_states.begin(), numbered_states.end());
        if (!numbered_states.empty() && !names_decided) {
            names_decided = true;
            if (live && !recording_reads() && !is_dir(base + "/cpuidle/driver")) driver_names.emplace();
        }
        std::vector<std::pair<unsigned, CpuPower::IdleState>> states;
        for (std::size_t index = 0; index < numbered_states.size(); ++index) {
            const auto& [k, state] = numbered_states[index];
            CpuPower::IdleState s;
            const std::string* shared = nullptr;
            if (driver_names) {
                auto it = driver_names->find(k);
                if (it != driver_names->end()) shared = &it->second;
            }
            if (shared != nullptr) {
                s.name = *shared;
            } else {
                s.name = attributes.read("cpuidle/" + state + "/name").value_or(state);
                if (driver_names) driver_names->emplace(k, s.name);
            }
            if (set == NodeFactSet::all || index >= kFirstDeepIdleState) {
                auto disabled = parse_number<long>(attributes.read("cpuidle/" + state + "/disable"));
                s.disabled = disabled.value_or(0) != 0;
            }
            states.emplace_back(k, std::move(s));
        }
        if (!states.empty()) {
            any_setting = true;
            auto& list = power.idle_states[*cpu];
            for (auto& [k, s] : states) list.push_back(std::move(s));
        }
    }
    // Only when a CPU had no cpufreq link: the plugins read this for every step.
    if (any_cpu && power.governor.size() < cpus) any_setting = read_cpufreq_policies(cpu_dir, power) || any_setting;
    power.intel_no_turbo = read_flag(cpu_dir + "/intel_pstate/no_turbo");
    power.cpufreq_boost = read_flag(cpu_dir + "/cpufreq/boost");
    any_setting = any_setting || power.intel_no_turbo || power.cpufreq_boost;
    if (!any_cpu) return Fact<CpuPower>::unknown("no CPU directories under " + cpu_dir);
    if (!any_setting) {
        return Fact<CpuPower>::unknown("no cpufreq, cpuidle or turbo settings under " + cpu_dir +
                                       " (no cpufreq/cpuidle driver, common in VMs)");
    }
    return Fact<CpuPower>::known(std::move(power), cpu_dir);
}

Fact<bool> probe_numa_balancing(const std::string& root) {
    std::string path = under_root(root, "proc/sys/kernel/numa_balancing");
    // 1 = balancing, 2 = memory tiering mode; both migrate pages under the job.
    if (auto v = read_flag(path)) return Fact<bool>::known(*v, path);
    return Fact<bool>::unknown("cannot read " + path + " (kernel without NUMA balancing, or not mounted)");
}

Fact<std::string> probe_cmdline(const std::string& root) {
    std::string path = under_root(root, "proc/cmdline");
    if (auto v = read_attribute(path)) return Fact<std::string>::known(*v, path);
    return Fact<std::string>::unknown("cannot read " + path);
}

// /proc/cpuinfo, recorded for gather; nullopt when unreadable.
std::optional<std::string> read_cpuinfo(const std::string& path) {
    auto text = read_text_file(path);
    if (!text) return std::nullopt;
    record_file(path, *text);
    return std::move(*text);
}

// The value of the first "name : value" line of cpuinfo, trimmed.
std::optional<std::string> cpuinfo_field(std::string_view text, std::string_view name) {
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || trim(line.substr(0, colon)) != name) continue;
        return std::string(trim(line.substr(colon + 1)));
    }
    return std::nullopt;
}

// DMI strings are the most specific evidence of which hypervisor runs the node.
std::optional<std::string> virtualization_from_dmi(const std::string& vendor, const std::string& product) {
    std::string v = ascii_lower(vendor);
    std::string p = ascii_lower(product);
    if (contains(v, "microsoft") && contains(p, "virtual machine")) return "microsoft";
    if (contains(v, "amazon ec2")) return contains(p, "metal") ? std::optional<std::string>("none") : "amazon";
    if (contains(v, "qemu") || contains(p, "kvm") || contains(p, "openstack") || contains(p, "qemu")) return "kvm";
    if (contains(v, "google") && contains(p, "compute engine")) return "google";
    if (contains(v, "vmware")) return "vmware";
    if (contains(v, "xen") || contains(p, "hvm domu")) return "xen";
    if (contains(v, "innotek") || contains(p, "virtualbox")) return "oracle";
    return std::nullopt;
}

// The x86 "hypervisor" bit (CPUID leaf 1, ECX bit 31), set in every x86
// guest: the flag proc/cpuinfo shows as 'hypervisor' (Linux
// X86_FEATURE_HYPERVISOR), without the kernel generating proc/cpuinfo,
// which it does for every CPU on each read (37 us for the 2 CPUs of the
// development VM, so milliseconds for a VM of a hundred vCPUs, in every
// Slurm step). nullopt off x86.
std::optional<bool> cpuid_hypervisor_bit() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0;
    unsigned ebx = 0;
    unsigned ecx = 0;
    unsigned edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return std::nullopt;
    return (ecx & (1U << 31)) != 0;
#else
    return std::nullopt;
#endif
}

Fact<std::string> probe_virtualization(const std::string& root) {
    std::string dmi = under_root(root, "sys/class/dmi/id");
    auto vendor = read_attribute(dmi + "/sys_vendor");
    auto product = read_attribute(dmi + "/product_name");
    if (vendor || product) {
        if (auto v = virtualization_from_dmi(vendor.value_or(""), product.value_or(""))) {
            return Fact<std::string>::known(
                *v, dmi + " (sys_vendor '" + vendor.value_or("") + "', product_name '" + product.value_or("") + "')");
        }
    }
    std::string hyp = under_root(root, "sys/hypervisor/type");
    if (auto t = read_attribute(hyp); t && !t->empty()) return Fact<std::string>::known(*t, hyp);

    // A device tree (Arm booted without ACPI): Xen announces itself in a
    // hypervisor node; QEMU's generic "virt" board is linux,dummy-virt.
    std::string dt = under_root(root, "sys/firmware/devicetree/base");
    if (auto c = read_attribute(dt + "/hypervisor/compatible")) {
        std::string compatible = ascii_lower(*c);
        if (contains(compatible, "xen")) return Fact<std::string>::known("xen", dt + "/hypervisor/compatible");
        if (contains(compatible, "vmware")) return Fact<std::string>::known("vmware", dt + "/hypervisor/compatible");
    }
    if (auto c = read_attribute(dt + "/compatible"); c && contains(*c, "linux,dummy-virt")) {
        return Fact<std::string>::known("qemu", dt + "/compatible 'linux,dummy-virt'");
    }

    // The x86 "hypervisor" flag: the live node asks its own CPU, unless a
    // gather records what it reads; a tree has its proc/cpuinfo.
    std::optional<bool> flagged;
    std::string flag_set;      // where the flag was seen set
    std::string flag_not_set;  // where it was seen clear
    std::string cpuinfo_path = under_root(root, "proc/cpuinfo");
    std::optional<std::string> cpuinfo;
    if (is_live(root) && !recording_reads()) {
        flagged = cpuid_hypervisor_bit();
        flag_set = "CPUID leaf 1 'hypervisor' bit";
        flag_not_set = "CPUID leaf 1 has no 'hypervisor' bit";
    }
    if (!flagged) {
        cpuinfo = read_cpuinfo(cpuinfo_path);
        // x86 sets the "hypervisor" CPUID flag in every guest.
        if (auto flags = cpuinfo ? cpuinfo_field(*cpuinfo, "flags") : std::nullopt) {
            flagged = contains(" " + *flags + " ", " hypervisor ");
            flag_set = cpuinfo_path + " 'hypervisor' flag";
            flag_not_set = cpuinfo_path + " has no 'hypervisor' flag";
        }
    }
    if (flagged && *flagged) return Fact<std::string>::known("vm", flag_set);
    if (vendor || product) {
        return Fact<std::string>::known("none",
                                        dmi + " (sys_vendor '" + vendor.value_or("") + "' is not a known hypervisor)");
    }
    if (flagged) return Fact<std::string>::known("none", flag_not_set);
    // arm64's cpuinfo lists "Features", and no feature says hypervisor: a
    // guest without DMI looks like bare metal there.
    if (cpuinfo) {
        return Fact<std::string>::unknown(
            "no DMI under " + dmi + ", and " + cpuinfo_path +
            " has no x86 'flags' line whose 'hypervisor' flag would tell (arm64 has none)");
    }
    return Fact<std::string>::unknown("neither " + dmi + " nor " + cpuinfo_path + " is readable");
}

// The page size of the kernel that a tree was recorded on. A PMD entry maps
// what one page of 8-byte page-table entries maps: page * page / 8 bytes,
// 2 MiB with 4 KiB pages, 32 MiB with 16 KiB, 512 MiB with arm64's 64 KiB
// (hpage_pmd_size, Linux Documentation/admin-guide/mm/transhuge.rst).
Fact<long> page_size_from_tree(const std::string& root) {
    std::string path = under_root(root, "sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    auto pmd = read_number<long>(path);
    if (!pmd) {
        return Fact<long>::unknown("page size is only known on the live node, or from " + path +
                                   " (transparent huge pages), which the tree at " + root + " lacks");
    }
    for (long page : {4096L, 16384L, 65536L}) {
        if (page * (page / 8) == *pmd) {
            return Fact<long>::known(page, path + " (PMD size " + std::to_string(*pmd) + " bytes)");
        }
    }
    return Fact<long>::unknown(path + " holds " + std::to_string(*pmd) +
                               ", the PMD size of no 4, 16 or 64 KiB page with 8-byte page-table entries");
}

// aarch64 when the tree's cpuinfo is arm64's: its kernel always prints "CPU
// architecture: 8" (arch/arm64/kernel/cpuinfo.c). x86's cpuinfo does not say
// whether the kernel is 64-bit (the lm flag is the CPU's), so it stays unknown.
Fact<std::string> arch_from_tree(const std::string& root) {
    std::string path = under_root(root, "proc/cpuinfo");
    auto cpuinfo = read_cpuinfo(path);
    if (cpuinfo && cpuinfo_field(*cpuinfo, "CPU architecture").value_or("") == "8") {
        return Fact<std::string>::known("aarch64", path + " 'CPU architecture: 8'");
    }
    return Fact<std::string>::unknown("architecture is only known on the live node, or from an arm64 " + path +
                                      ", not from the tree at " + root);
}

}  // namespace

NodeFacts probe_node_facts(const std::string& root, PhaseTimes* times, NodeFactSet set,
                           std::optional<Fact<CpuPower>> power) {
    NodeFacts facts;
    if (power) {
        facts.power = std::move(*power);
    } else {
        PhaseTimer timer(times, "node.power");
        facts.power = probe_power(root, set);
    }
    {
        PhaseTimer timer(times, "node.numa+cmdline+virt");
        facts.numa_balancing = probe_numa_balancing(root);
        facts.kernel_cmdline = probe_cmdline(root);
        facts.virtualization = probe_virtualization(root);
    }
    {
        PhaseTimer timer(times, "node.iommu");
        facts.iommu_groups = set == NodeFactSet::all
                                 ? probe_iommu(root)
                                 : Fact<std::vector<IommuGroup>>::unknown("IOMMU groups are read by node checks only");
        facts.iommu_units = probe_iommu_units(root);
    }
    if (set == NodeFactSet::all) {
        PhaseTimer timer(times, "node.pcie_links");
        facts.pcie_links = probe_pcie(root);
    } else {
        facts.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::unknown(
            "PCIe links are read for the topology's GPUs and NICs only, and the topology is unknown");
    }
    {
        PhaseTimer timer(times, "node.gpudirect");
        facts.gpudirect = probe_gpudirect(root);
    }
    facts.pci_capabilities =
        Fact<std::map<std::string, PciCapabilities>>::unknown("PCI capabilities are read by node checks only");
    if (is_live(root)) {
        long page = ::sysconf(_SC_PAGESIZE);
        facts.page_size = page > 0 ? Fact<long>::known(page, "sysconf(_SC_PAGESIZE)")
                                   : Fact<long>::unknown("sysconf(_SC_PAGESIZE) failed");
        struct utsname uts {};
        facts.arch = ::uname(&uts) == 0 ? Fact<std::string>::known(uts.machine, "uname")
                                        : Fact<std::string>::unknown("uname failed");
    } else {
        facts.page_size = page_size_from_tree(root);
        facts.arch = arch_from_tree(root);
    }
    return facts;
}

namespace {

Fact<std::string> probe_hostname(const std::string& root) {
    const std::string path = under_root(root, "proc/sys/kernel/hostname");
    if (auto name = read_attribute(path); name && !name->empty()) return Fact<std::string>::known(*name, path);
    if (is_live(root)) {
        char name[256] = {};
        if (::gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0')
            return Fact<std::string>::known(name, "gethostname");
    }
    return Fact<std::string>::unknown("cannot read " + path);
}

Fact<std::string> probe_gpu_driver(const std::string& root) {
    const std::string module = under_root(root, "sys/module/nvidia/version");
    if (auto version = read_attribute(module); version && !version->empty())
        return Fact<std::string>::known(*version, module);
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..."
    const std::string proc = under_root(root, "proc/driver/nvidia/version");
    if (auto text = read_text_file(proc, kMaxAttributeBytes)) {
        record_file(proc, *text);
        const std::string_view marker = "Kernel Module";
        if (auto at = text->find(marker); at != std::string::npos) {
            std::string_view rest = trim(std::string_view(*text).substr(at + marker.size()));
            std::string_view version = rest.substr(0, rest.find_first_of(" \t\n"));
            if (!version.empty()) return Fact<std::string>::known(std::string(version), proc);
        }
    }
    const std::string modules = under_root(root, "sys/module");
    if (is_dir(modules) && !is_dir(modules + "/nvidia"))
        return Fact<std::string>::known("not loaded", modules + " has no nvidia module");
    return Fact<std::string>::unknown("neither " + module + " nor " + proc + " is readable");
}

Fact<std::vector<NodeIdentity::Hca>> probe_hcas(const std::string& root) {
    const std::string dir = under_root(root, "sys/class/infiniband");
    if (!is_dir(dir)) {
        if (is_dir(under_root(root, "sys/class")))
            return Fact<std::vector<NodeIdentity::Hca>>::known({}, dir + " absent: no RDMA device");
        return Fact<std::vector<NodeIdentity::Hca>>::unknown("no " + under_root(root, "sys/class"));
    }
    std::vector<NodeIdentity::Hca> hcas;
    for (const auto& name : entries(dir)) {
        NodeIdentity::Hca hca{name, {}, {}};
        hca.model = read_attribute(dir + "/" + name + "/hca_type").value_or("");
        if (hca.model.empty()) hca.model = read_attribute(dir + "/" + name + "/board_id").value_or("");
        hca.firmware = read_attribute(dir + "/" + name + "/fw_ver").value_or("");
        hcas.push_back(std::move(hca));
    }
    return Fact<std::vector<NodeIdentity::Hca>>::known(std::move(hcas), dir);
}

Fact<std::string> probe_peer_memory(const std::string& root) {
    const std::string modules = under_root(root, "sys/module");
    if (!is_dir(modules)) return Fact<std::string>::unknown("no " + modules);
    for (const char* name : {"nvidia_peermem", "nv_peer_mem"}) {
        if (is_dir(modules + "/" + name)) return Fact<std::string>::known(name, modules + "/" + name);
    }
    return Fact<std::string>::known("none", modules + " has neither nvidia_peermem nor nv_peer_mem");
}

}  // namespace

NodeIdentity probe_node_identity(const std::string& root) {
    NodeIdentity identity;
    identity.hostname = probe_hostname(root);
    const std::string release = under_root(root, "proc/sys/kernel/osrelease");
    if (auto text = read_attribute(release); text && !text->empty())
        identity.kernel_release = Fact<std::string>::known(*text, release);
    else if (struct utsname uts{}; is_live(root) && ::uname(&uts) == 0)
        identity.kernel_release = Fact<std::string>::known(uts.release, "uname");
    else
        identity.kernel_release = Fact<std::string>::unknown("cannot read " + release);
    identity.gpu_driver = probe_gpu_driver(root);
    identity.hcas = probe_hcas(root);
    identity.peer_memory = probe_peer_memory(root);
    return identity;
}

}  // namespace launchguard
