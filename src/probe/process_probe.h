// Facts about one process and the container it runs in: CPU affinity,
// /dev/shm size, the memlock limit and effective capabilities. Each comes
// in a "this process" form (system calls) and a "process PID" form (procfs
// under an injectable root, so tests replay a recorded /proc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context/cpu_set.h"
#include "context/launch_context.h"
#include "util/error.h"

namespace launchguard {

// The status file of a process (proc_root/PID/status), read once: its CPU
// mask, capabilities and uid all come from the same text. The kernel writes
// the file afresh on every read, walking the process's memory map for its
// Vm lines, so each read of it costs tens of microseconds in a VM.
struct ProcessStatus {
    std::string path;
    Result<std::string> text;
};
ProcessStatus read_process_status(int pid, const std::string& proc_root = "/proc");

Result<CpuSet> current_affinity();
// Cpus_allowed_list of proc_root/PID/status.
Result<CpuSet> process_affinity(int pid, const std::string& proc_root = "/proc");
Result<CpuSet> affinity_of(const ProcessStatus& status);

// Size in bytes of the filesystem mounted at root/dev/shm.
Result<std::uint64_t> shm_size(const std::string& root);

// RLIMIT_MEMLOCK soft limit; nullopt means unlimited.
Result<std::optional<std::uint64_t>> current_memlock();
// The soft "Max locked memory" of proc_root/PID/limits.
Result<std::optional<std::uint64_t>> process_memlock(int pid, const std::string& proc_root = "/proc");
// RLIMIT_NOFILE soft limit of this process; nullopt means unlimited.
Result<std::optional<std::uint64_t>> current_open_files();
// The soft limit on the line of a /proc/PID/limits text that starts with
// `key` ("Max open files"); nullopt means unlimited.
Result<std::optional<std::uint64_t>> parse_process_limit(std::string_view limits_text, std::string_view key,
                                                         const std::string& origin);
// Parses the text of a /proc/PID/limits file; origin names it in errors.
Result<std::optional<std::uint64_t>> parse_memlock_limit(std::string_view limits_text, const std::string& origin);

// "CAP_IPC_LOCK", ... for each bit set; bits beyond the known table become "CAP_<n>".
std::vector<std::string> decode_capabilities(std::uint64_t mask);
// CapEff of proc_root/PID/status (pid 0 means "self").
Result<std::vector<std::string>> process_capabilities(int pid, const std::string& proc_root = "/proc");
// The effective set of this process (capget): one system call, where
// /proc/self/status is six and a parse.
Result<std::vector<std::string>> current_capabilities();
// Effective uid of proc_root/PID/status is 0.
Result<bool> process_runs_as_root(int pid, const std::string& proc_root = "/proc");
bool current_runs_as_root();

// The container facts of a task: live system calls for this process, or
// procfs when pid is given; /dev/shm is looked up under root. `status` is
// the pid's status file when the caller has read it already.
ContainerFacts probe_container(const std::string& root, std::optional<int> pid, const std::string& proc_root = "/proc",
                               const ProcessStatus* status = nullptr);

}  // namespace launchguard
