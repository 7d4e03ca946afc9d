#include "probe/sysfs_probe.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
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

#include "probe/text_file.h"
#include "util/file_descriptor.h"
#include "util/text.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;

bool is_live(const std::string& root) { return root.empty() || root == "/"; }

// The recording of this thread's gather, if one is under way.
thread_local RecordSysfsReads::Active* t_recording = nullptr;

}  // namespace

struct RecordSysfsReads::Active {
    SysfsRecording& recording;
    std::string prefix;           // "/" or "/fixture/": what the probes' paths start with
    std::string resolved_prefix;  // the same with links resolved, for resolved paths
};

RecordSysfsReads::RecordSysfsReads(SysfsRecording& recording, const std::string& root) : previous_(t_recording) {
    std::error_code ec;
    fs::path resolved = fs::canonical(root.empty() ? "/" : root, ec);
    active_ = std::make_unique<Active>(
        Active{recording, under_root(root, ""), ec ? std::string() : under_root(resolved.string(), "")});
    t_recording = active_.get();
}

RecordSysfsReads::~RecordSysfsReads() { t_recording = previous_; }

namespace {

// `path` below `prefix`, without it; nullopt when it is not below it.
std::optional<std::string> below(const std::string& path, const std::string& prefix) {
    if (prefix.empty() || path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) {
        return std::nullopt;
    }
    return path.substr(prefix.size());
}

void record_file(const std::string& path, const std::string& content) {
    if (t_recording == nullptr) return;
    if (auto relative = below(path, t_recording->prefix)) t_recording->recording.files[*relative] = content;
}

void record_directory(const std::string& path) {
    if (t_recording == nullptr) return;
    if (auto relative = below(path, t_recording->prefix)) t_recording->recording.directories.insert(*relative);
}

void record_other_entry(const std::string& path) {
    if (t_recording == nullptr) return;
    if (auto relative = below(path, t_recording->prefix)) t_recording->recording.other_entries.insert(*relative);
}

void record_link(const std::string& path, const fs::path& resolved) {
    if (t_recording == nullptr) return;
    auto relative = below(path, t_recording->prefix);
    if (!relative) return;
    auto target = below(resolved.string(), t_recording->resolved_prefix);
    t_recording->recording.links[*relative] = target ? *target : "sys/devices/" + resolved.filename().string();
}

// Directory entry names, sorted; empty when the directory is absent. Uses
// error codes: a vanished sysfs entry must not throw out of a probe.
std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) return names;
    record_directory(dir);
    for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec) break;
        // sysfs and procfs have no hidden names; a recorded tree in git has
        // .keep files, or its empty directories (no IOMMU group) are lost.
        if (it->path().filename().string().starts_with('.')) continue;
        names.push_back(it->path().filename().string());
        // The probes go by the names in a listing (cpu12, state3, a bus id)
        // even when they read nothing inside them.
        if (t_recording != nullptr) {
            std::error_code type_ec;
            if (it->is_directory(type_ec))
                record_directory(it->path().string());
            else
                record_other_entry(it->path().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

bool is_dir(const std::string& path) {
    std::error_code ec;
    const bool directory = fs::is_directory(path, ec);
    if (directory) record_directory(path);
    return directory;
}

// A short sysfs or procfs attribute, without surrounding whitespace; nullopt
// when it cannot be read (absent, permission, an attribute that errors on read).
std::optional<std::string> read_attribute(const std::string& path) {
    auto text = read_text_file(path, kMaxAttributeBytes);
    if (!text) return std::nullopt;
    record_file(path, *text);
    return std::string(trim(*text));
}

// "cpu12" -> 12, for the per-CPU directories only.
std::optional<unsigned> numbered(std::string_view name, std::string_view prefix) {
    if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size()) return std::nullopt;
    unsigned v = 0;
    auto digits = name.substr(prefix.size());
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
    return v;
}

template <typename T>
std::optional<T> read_number(const std::string& path) {
    auto text = read_attribute(path);
    if (!text) return std::nullopt;
    T v{};
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (ec != std::errc() || ptr != text->data() + text->size()) return std::nullopt;
    return v;
}

std::optional<bool> read_flag(const std::string& path) {
    auto v = read_number<long>(path);
    if (!v) return std::nullopt;
    return *v != 0;
}

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

template <typename T>
std::optional<T> parse_number(const std::optional<std::string>& text) {
    if (!text) return std::nullopt;
    T v{};
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (ec != std::errc() || ptr != text->data() + text->size()) return std::nullopt;
    return v;
}

// The attributes of one sysfs directory (a CPU's), read relative to it.
// read_attribute goes through read_text_file, which looks at the whole path
// before it opens it and then reads to the end: six system calls and two
// walks of an eight-component path per file. probe_power reads eleven files
// per CPU on a node with four idle states, and on 128 CPUs that took 14 ms of
// every Slurm step, most of what the step then waited for
// (docs/performance.md). Here a file costs an openat of the short relative
// path, one read and a close, and an fstatat first outside the live sysfs
// (a recorded tree may hold anything; sysfs holds no FIFOs or devices). An
// attribute is at most a page, and a short read of a regular file is its
// end; a file that fills the page is read the usual way.
class AttributeDir {
public:
    explicit AttributeDir(std::string path, bool live)
        : path_(std::move(path)), live_(live), fd_(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}

    // The attribute without surrounding whitespace, as read_attribute gives it.
    std::optional<std::string> read(const std::string& relative) {
        if (fd_.get() < 0) return std::nullopt;
        if (!live_) {
            struct stat st {};
            if (::fstatat(fd_.get(), relative.c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
        }
        UniqueFd file(::openat(fd_.get(), relative.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
        if (file.get() < 0) return std::nullopt;
        buffer_.resize(kPage);
        ssize_t n = 0;
        do {
            n = ::read(file.get(), buffer_.data(), buffer_.size());
        } while (n < 0 && errno == EINTR);
        if (n < 0) return std::nullopt;
        if (static_cast<std::size_t>(n) == buffer_.size()) return read_attribute(path_ + "/" + relative);
        buffer_.resize(static_cast<std::size_t>(n));
        if (t_recording != nullptr) record_file(path_ + "/" + relative, buffer_);
        return std::string(trim(buffer_));
    }

private:
    static constexpr std::size_t kPage = 4096;
    std::string path_;
    bool live_;
    UniqueFd fd_;
    std::string buffer_;
};

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
            if (live && t_recording == nullptr && !is_dir(base + "/cpuidle/driver")) driver_names.emplace();
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
    if (is_live(root) && t_recording == nullptr) {
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

// NCCL's peer-memory markers (ncclIbGdrSupport, src/transport/net_ib/gdr.cc),
// relative to the root.
constexpr std::array kPeerMemoryMarkers = std::to_array<std::string_view>({
    "sys/kernel/mm/memory_peers/nv_mem/version",
    "sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "sys/module/nvidia_peermem/version",
});

// Five small reads: this is in every node snapshot, the Slurm step's too.
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

std::uint32_t read_le(std::string_view bytes, std::size_t offset, std::size_t width) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < width; ++i)
        v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
    return v;
}

// sys/class/infiniband/<hca>/device links to the PCI device directory.
std::string hca_busid(const std::string& hca_dir) {
    std::error_code ec;
    fs::path target = fs::canonical(hca_dir + "/device", ec);
    if (ec) return {};
    record_link(hca_dir + "/device", target);
    std::string name = target.filename().string();
    return name.find(':') != std::string::npos ? ascii_lower(name) : std::string();
}

// The last component of where a sysfs link points ("mlx5_core" for a
// device's driver link); empty when it does not resolve.
std::string link_name(const std::string& link) {
    std::error_code ec;
    fs::path target = fs::canonical(link, ec);
    if (ec) return {};
    record_link(link, target);
    return target.filename().string();
}

}  // namespace

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

std::optional<double> parse_ib_rate(std::string_view text) {
    std::string s(trim(text));
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || v < 0) return std::nullopt;
    if (trim(std::string_view(end)).substr(0, 6) != "Gb/sec") return std::nullopt;
    return v;
}

std::string parse_ib_state(std::string_view text) {
    text = trim(text);
    std::size_t colon = text.find(':');
    return std::string(colon == std::string_view::npos ? text : trim(text.substr(colon + 1)));
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

std::vector<NetInterface> read_net_interfaces(const std::string& root) {
    std::vector<NetInterface> out;
    std::string net_dir = under_root(root, "sys/class/net");
    for (const auto& name : entries(net_dir)) {
        // "unknown" is what lo and some virtual devices report while passing traffic.
        std::string oper = read_attribute(net_dir + "/" + name + "/operstate").value_or("unknown");
        bool up = oper != "down" && oper != "lowerlayerdown" && oper != "notpresent" && oper != "dormant";
        out.push_back(NetInterface{name, up});
    }
    return out;
}

std::vector<NetInterface> augment_topology_from_sysfs(NodeTopology& topo, const std::string& root,
                                                      const std::map<std::string, PcieLinkRecord>* links,
                                                      Fact<std::map<std::string, PcieLinkRecord>>* gpu_nic_links) {
    bool used = false;

    std::string ib_dir = under_root(root, "sys/class/infiniband");
    for (const auto& hca : entries(ib_dir)) {
        std::string hca_dir = ib_dir + "/" + hca;
        auto nic = std::find_if(topo.nics.begin(), topo.nics.end(), [&](const Nic& n) { return n.hca == hca; });
        if (nic == topo.nics.end()) {
            Nic added;
            added.hca = hca;
            added.busid = hca_busid(hca_dir);
            for (const auto& netdev : entries(hca_dir + "/device/net")) added.netdevs.push_back(netdev);
            added.numa_node = read_number<int>(hca_dir + "/device/numa_node").value_or(-1);
            if (auto cpus = read_attribute(hca_dir + "/device/local_cpulist")) {
                if (auto set = CpuSet::parse_list(*cpus)) added.local_cpus = *set;
            }
            topo.nics.push_back(std::move(added));
            nic = topo.nics.end() - 1;
        }
        if (nic->driver.empty()) nic->driver = link_name(hca_dir + "/device/driver");
        if (nic->uverbs.empty()) {
            for (const auto& name : entries(hca_dir + "/device/infiniband_verbs")) {
                if (name.starts_with("uverbs")) nic->uverbs.push_back(name);
            }
        }
        for (const auto& port_name : entries(hca_dir + "/ports")) {
            auto number = numbered(port_name, "");
            if (!number) continue;
            std::string pdir = hca_dir + "/ports/" + port_name;
            auto port = std::find_if(nic->ports.begin(), nic->ports.end(),
                                     [&](const IbPort& p) { return p.number == static_cast<int>(*number); });
            if (port == nic->ports.end()) {
                IbPort p;
                p.number = static_cast<int>(*number);
                nic->ports.push_back(p);
                port = nic->ports.end() - 1;
            }
            if (auto s = read_attribute(pdir + "/state")) port->state = parse_ib_state(*s);
            if (auto s = read_attribute(pdir + "/phys_state")) port->phys_state = parse_ib_state(*s);
            if (auto s = read_attribute(pdir + "/rate")) port->rate_gbps = parse_ib_rate(*s);
            if (auto s = read_attribute(pdir + "/link_layer")) port->link_layer = *s;
            used = true;
        }
        std::sort(nic->ports.begin(), nic->ports.end(),
                  [](const IbPort& a, const IbPort& b) { return a.number < b.number; });
    }

    std::map<std::string, PcieLinkRecord> read_here;
    if (links == nullptr && gpu_nic_links != nullptr) {
        std::vector<std::string> busids;
        for (const auto& gpu : topo.gpus) busids.push_back(gpu.busid);
        for (const auto& nic : topo.nics) busids.push_back(nic.busid);
        *gpu_nic_links = probe_pcie_links(root, busids);
        links = gpu_nic_links->is_known() ? &gpu_nic_links->value() : &read_here;
    } else if (links == nullptr) {
        read_here = read_pcie_links(root);
        links = &read_here;
    }
    if (!links->empty()) {
        for (auto& gpu : topo.gpus) apply_link(gpu.link, *links, gpu.busid);
        for (auto& nic : topo.nics) apply_link(nic.link, *links, nic.busid);
        used = true;
    }

    std::vector<NetInterface> interfaces = read_net_interfaces(root);
    for (const auto& netdev : interfaces) {
        auto it = std::find_if(topo.interfaces.begin(), topo.interfaces.end(),
                               [&](const NetInterface& i) { return i.name == netdev.name; });
        if (it == topo.interfaces.end())
            topo.interfaces.push_back(netdev);
        else
            it->up = netdev.up;
        used = true;
    }

    if (used)
        topo.source += (topo.source.empty() ? "" : " + ") + std::string("sysfs under ") + (root.empty() ? "/" : root);
    return interfaces;
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
