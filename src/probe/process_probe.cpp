#include "probe/process_probe.h"

#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "probe/text_file.h"

namespace launchguard {
namespace {

// Capability numbers from linux/capability.h, in order; the kernel never
// renumbers them, so a table is safer than depending on libcap.
constexpr std::array<std::string_view, 41> kCapabilityNames = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
};

std::string pid_dir(int pid, const std::string& proc_root) {
    return under_root(proc_root, pid > 0 ? std::to_string(pid) : std::string("self"));
}

std::string status_path(int pid, const std::string& proc_root) { return pid_dir(pid, proc_root) + "/status"; }

// The value after "Key:" in the text of a /proc/PID/status file read from `path`.
Result<std::string> status_field_of(std::string_view text, const std::string& path, std::string_view key) {
    std::string_view rest = text;
    while (!rest.empty()) {
        std::size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        std::size_t colon = line.find(':');
        if (colon != std::string_view::npos && line.substr(0, colon) == key)
            return std::string(trim(line.substr(colon + 1)));
    }
    return make_file_error(path, 0, "no " + std::string(key) + " line");
}

template <typename T>
Fact<T> to_fact(Result<T> r, std::string source) {
    if (!r) return Fact<T>::unknown(r.error().to_string());
    return Fact<T>::known(std::move(r).value(), std::move(source));
}

}  // namespace

Result<CpuSet> current_affinity() {
    // Start at the glibc default and grow: nodes with > 1024 CPUs exist.
    for (int ncpus = CPU_SETSIZE; ncpus <= (1 << 16); ncpus *= 2) {
        cpu_set_t* mask = CPU_ALLOC(static_cast<unsigned>(ncpus));
        if (mask == nullptr) return make_error("sched_getaffinity: out of memory");
        std::size_t size = CPU_ALLOC_SIZE(static_cast<unsigned>(ncpus));
        if (::sched_getaffinity(0, size, mask) == 0) {
            CpuSet set;
            for (int c = 0; c < ncpus; ++c) {
                if (CPU_ISSET_S(static_cast<unsigned>(c), size, mask)) set.add(static_cast<unsigned>(c));
            }
            CPU_FREE(mask);
            return set;
        }
        int err = errno;
        CPU_FREE(mask);
        if (err != EINVAL) return make_error(std::string("sched_getaffinity: ") + std::strerror(err));
    }
    return make_error("sched_getaffinity: mask wider than 65536 CPUs");
}

ProcessStatus read_process_status(int pid, const std::string& proc_root) {
    std::string path = status_path(pid, proc_root);
    // A procfs file of a few KiB: bounded as sysfs attributes are.
    auto text = read_text_file(path, kMaxAttributeBytes);
    return ProcessStatus{std::move(path), std::move(text)};
}

Result<CpuSet> affinity_of(const ProcessStatus& status) {
    if (!status.text) return status.text.error();
    auto list = status_field_of(*status.text, status.path, "Cpus_allowed_list");
    if (!list) return list.error();
    auto set = CpuSet::parse_list(*list);
    if (!set) return make_file_error(status.path, 0, set.error().message);
    return set;
}

Result<CpuSet> process_affinity(int pid, const std::string& proc_root) {
    return affinity_of(read_process_status(pid, proc_root));
}

Result<std::uint64_t> shm_size(const std::string& root) {
    std::string path = under_root(root, "dev/shm");
    struct statvfs vfs {};
    if (::statvfs(path.c_str(), &vfs) != 0)
        return make_file_error(path, 0, std::string("statvfs: ") + std::strerror(errno));
    return static_cast<std::uint64_t>(vfs.f_blocks) * static_cast<std::uint64_t>(vfs.f_frsize);
}

namespace {

// The soft limit getrlimit gave (`ok`: it succeeded); nullopt means
// unlimited. The resource is not a parameter: glibc types it as an enum in C++.
Result<std::optional<std::uint64_t>> soft_limit(bool ok, const struct rlimit& lim, const char* name) {
    if (!ok) return make_error(std::string("getrlimit(") + name + "): " + std::strerror(errno));
    if (lim.rlim_cur == RLIM_INFINITY) return std::optional<std::uint64_t>();
    return std::optional<std::uint64_t>(static_cast<std::uint64_t>(lim.rlim_cur));
}

}  // namespace

Result<std::optional<std::uint64_t>> current_memlock() {
    struct rlimit lim {};
    const bool ok = ::getrlimit(RLIMIT_MEMLOCK, &lim) == 0;
    return soft_limit(ok, lim, "RLIMIT_MEMLOCK");
}

Result<std::optional<std::uint64_t>> current_open_files() {
    struct rlimit lim {};
    const bool ok = ::getrlimit(RLIMIT_NOFILE, &lim) == 0;
    return soft_limit(ok, lim, "RLIMIT_NOFILE");
}

Result<std::optional<std::uint64_t>> parse_process_limit(std::string_view text, std::string_view key,
                                                         const std::string& origin) {
    int line_no = 0;
    while (!text.empty()) {
        std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        ++line_no;
        if (line.substr(0, key.size()) != key) continue;
        // Columns: name, soft limit, hard limit, unit.
        std::string_view soft = trim(line.substr(key.size()));
        soft = soft.substr(0, soft.find_first_of(" \t"));
        if (soft == "unlimited") return std::optional<std::uint64_t>();
        std::uint64_t value = 0;
        auto [ptr, ec] = std::from_chars(soft.data(), soft.data() + soft.size(), value);
        if (ec != std::errc() || ptr != soft.data() + soft.size()) {
            return make_file_error(origin, line_no, "cannot parse the soft limit '" + std::string(soft) + "'");
        }
        return std::optional<std::uint64_t>(value);
    }
    return make_file_error(origin, 0, "no '" + std::string(key) + "' line");
}

Result<std::optional<std::uint64_t>> parse_memlock_limit(std::string_view text, const std::string& origin) {
    return parse_process_limit(text, "Max locked memory", origin);
}

Result<std::optional<std::uint64_t>> process_memlock(int pid, const std::string& proc_root) {
    std::string path = pid_dir(pid, proc_root) + "/limits";
    auto text = read_text_file(path);
    if (!text) return text.error();
    return parse_memlock_limit(*text, path);
}

std::vector<std::string> decode_capabilities(std::uint64_t mask) {
    std::vector<std::string> names;
    for (unsigned bit = 0; bit < 64; ++bit) {
        if (((mask >> bit) & 1U) == 0) continue;
        names.emplace_back(bit < kCapabilityNames.size() ? std::string(kCapabilityNames[bit])
                                                         : "CAP_" + std::to_string(bit));
    }
    return names;
}

namespace {

// CapEff of a status file's text, by name.
Result<std::vector<std::string>> capabilities_of(std::string_view status, const std::string& path) {
    auto hex = status_field_of(status, path, "CapEff");
    if (!hex) return hex.error();
    std::uint64_t mask = 0;
    auto [ptr, ec] = std::from_chars(hex->data(), hex->data() + hex->size(), mask, 16);
    if (ec != std::errc() || ptr != hex->data() + hex->size()) {
        return make_file_error(path, 0, "CapEff '" + *hex + "' is not a hex mask");
    }
    return decode_capabilities(mask);
}

// Whether the effective uid in a status file's text is 0.
Result<bool> runs_as_root_of(std::string_view status, const std::string& path) {
    // "Uid:\treal\teffective\tsaved\tfs"
    auto uids = status_field_of(status, path, "Uid");
    if (!uids) return uids.error();
    std::string_view rest = *uids;
    rest = trim(rest.substr(std::min(rest.size(), rest.find_first_of(" \t"))));
    std::string_view effective = rest.substr(0, rest.find_first_of(" \t"));
    return effective == "0";
}

}  // namespace

Result<std::vector<std::string>> process_capabilities(int pid, const std::string& proc_root) {
    const ProcessStatus status = read_process_status(pid, proc_root);
    if (!status.text) return status.text.error();
    return capabilities_of(*status.text, status.path);
}

Result<std::vector<std::string>> current_capabilities() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
    // glibc has no capget wrapper; libcap would be a dependency for one call.
    if (::syscall(SYS_capget, &header, data.data()) != 0)
        return make_error(std::string("capget: ") + std::strerror(errno));
    const std::uint64_t mask = data[0].effective | (std::uint64_t{data[1].effective} << 32);
    return decode_capabilities(mask);
}

Result<bool> process_runs_as_root(int pid, const std::string& proc_root) {
    const ProcessStatus status = read_process_status(pid, proc_root);
    if (!status.text) return status.text.error();
    return runs_as_root_of(*status.text, status.path);
}

bool current_runs_as_root() { return ::geteuid() == 0; }

ContainerFacts probe_container(const std::string& root, std::optional<int> pid, const std::string& proc_root,
                               const ProcessStatus* status) {
    ContainerFacts facts;
    facts.shm_bytes = to_fact(shm_size(root), "statvfs " + under_root(root, "dev/shm"));
    if (pid) {
        std::string dir = pid_dir(*pid, proc_root);
        // A live process's limits are asked of the kernel: prlimit() is two
        // system calls where reading /proc/PID/limits is five, and the kernel
        // formats that file's sixteen lines on every read. A recorded
        // procfs, or a process prlimit may not ask about, is read from its file.
        struct rlimit memlock {};
        struct rlimit open_files {};
        if (proc_root == "/proc" && ::prlimit(*pid, RLIMIT_MEMLOCK, nullptr, &memlock) == 0 &&
            ::prlimit(*pid, RLIMIT_NOFILE, nullptr, &open_files) == 0) {
            const std::string asked = "prlimit(" + std::to_string(*pid) + ", ";
            facts.memlock = to_fact(soft_limit(true, memlock, "RLIMIT_MEMLOCK"), asked + "RLIMIT_MEMLOCK)");
            facts.open_files = to_fact(soft_limit(true, open_files, "RLIMIT_NOFILE"), asked + "RLIMIT_NOFILE)");
        } else {
            // One read of the limits file for both limits.
            std::string path = dir + "/limits";
            auto text = read_text_file(path, kMaxAttributeBytes);
            facts.memlock = to_fact(
                text ? parse_memlock_limit(*text, path) : Result<std::optional<std::uint64_t>>(text.error()), path);
            facts.open_files = to_fact(text ? parse_process_limit(*text, "Max open files", path)
                                            : Result<std::optional<std::uint64_t>>(text.error()),
                                       path);
        }
        // And one read of the status file for the capabilities and the uid,
        // unless the caller's read serves.
        std::optional<ProcessStatus> read_here;
        if (status == nullptr) status = &read_here.emplace(read_process_status(*pid, proc_root));
        const std::string& status_file = status->path;
        const auto& status_text = status->text;
        facts.capabilities = to_fact(status_text ? capabilities_of(*status_text, status_file)
                                                 : Result<std::vector<std::string>>(status_text.error()),
                                     status_file + " CapEff");
        facts.runs_as_root =
            to_fact(status_text ? runs_as_root_of(*status_text, status_file) : Result<bool>(status_text.error()),
                    status_file + " Uid");
    } else {
        facts.memlock = to_fact(current_memlock(), "getrlimit(RLIMIT_MEMLOCK) of launchguard");
        facts.open_files = to_fact(current_open_files(), "getrlimit(RLIMIT_NOFILE) of launchguard");
        facts.capabilities = to_fact(current_capabilities(), "capget() of launchguard");
        facts.runs_as_root = Fact<bool>::known(current_runs_as_root(), "geteuid() of launchguard");
    }
    return facts;
}

}  // namespace launchguard
