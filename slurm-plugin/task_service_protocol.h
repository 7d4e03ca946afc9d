// What a task sends launchguard-task-service and what it gets back
// (docs/design/SLURM_PLUGIN.md, "The task service"). Pure C++ with no Slurm
// dependency: the small plugin encodes requests and decodes answers, the
// service the other way round, and both are unit-tested here
// (tests/unit/slurm_plugin/).
//
// On the wire, a message is a header and key/value records, every field
// ended by a NUL byte, and an "end" record last:
//
//   launchguard-task/1 \0 mode \0 enforce \0 env \0 NCCL_DEBUG=WARN \0 ... end \0 \0
//
// NUL is the one byte no argument, environment entry or message can hold (as
// in /proc/PID/environ), so nothing needs escaping, and the small plugin that
// srun loads on every launch carries no JSON library for it. A message cut
// short has no "end" record and is refused as a whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context/launch_context.h"
#include "finding/mode.h"
#include "mount_namespace.h"
#include "util/error.h"

namespace launchguard::slurm {

// The largest request the service reads: a job environment is bounded by
// the kernel's ARG_MAX for exec (2 MiB by default), twice for the host's copy.
inline constexpr std::size_t kMaxTaskRequestBytes = 8U << 20;
inline constexpr std::size_t kMaxTaskAnswerBytes = 4U << 20;

// The job's host environment as a request carries it: NAME=VALUE entries,
// each ended by a NUL, in the order they came. The service unpacks it only
// for a task that moved into a container, the one case its checks read it
// (container_placement.h); decoding it into a map for every task cost a few
// per cent of the service's time (docs/performance.md, thirteenth round).
class PackedEnvironment {
public:
    PackedEnvironment() = default;
    explicit PackedEnvironment(const Environment& env);
    // `entry` is NAME=VALUE with a name; a NUL in it ends it.
    void add(std::string_view entry);
    // A later entry of a name replaces an earlier one, as setenv() would.
    [[nodiscard]] Environment unpack() const;
    [[nodiscard]] bool empty() const { return entries_.empty(); }
    template <typename Visit>
    void for_each_entry(Visit visit) const {
        std::string_view rest = entries_;
        while (!rest.empty()) {
            const std::size_t end = rest.find('\0');
            visit(rest.substr(0, end));
            rest.remove_prefix(end + 1);
        }
    }
    friend bool operator==(const PackedEnvironment&, const PackedEnvironment&) = default;

private:
    std::string entries_;
};

struct TaskRequest {
    std::vector<std::string> plugin_args;  // the plugstack line's arguments, as the plugin got them
    Mode mode = Mode::enforce;             // the step's mode: the site's, or the --launchguard it allows
    Environment env;                       // the task's environment as slurmstepd will exec it
    // The job's environment as user_init saw it on the host, before pyxis
    // merged the image's (HostSide); absent when user_init kept none.
    std::optional<PackedEnvironment> host_env;
    // The task's mount namespace in task_init_privileged, before any
    // plugin's task_init moved it (container_placement.h).
    std::optional<MountNamespace> forked_namespace;
    std::optional<std::uint32_t> job_id;
    std::optional<std::uint32_t> step_id;
    std::optional<std::uint32_t> job_nodes;
    bool first_task = false;  // local task 0: the one that logs and tells the user
};

struct TaskEnvChange {
    std::string name;
    std::optional<std::string> value;  // nullopt: unset
    friend bool operator==(const TaskEnvChange&, const TaskEnvChange&) = default;
};

struct TaskAnswer {
    bool block = false;                    // fail the task (slurm_spank_task_init returns -1)
    std::vector<std::string> log_info;     // lines for the slurmd log
    std::vector<std::string> log_error;    // error lines for the slurmd log
    std::vector<std::string> tell_user;    // lines for the user's stderr
    std::vector<TaskEnvChange> env_patch;  // applied in order before exec
};

// Writes a request field by field into one buffer. The task's side uses it
// over Slurm's own arrays (the plugstack arguments, the job's environment),
// so that a freshly forked task allocates once instead of once per entry:
// each new heap page costs a task a page fault (docs/performance.md).
class TaskRequestWriter {
public:
    explicit TaskRequestWriter(std::size_t expected_bytes = 0);
    void plugin_arg(std::string_view arg) { record("arg", arg); }
    void mode(Mode mode);
    void env_entry(std::string_view name_equals_value) { record("env", name_equals_value); }
    // The host's environment was kept (even if it is empty), then its entries.
    void host_env_kept() { record("host-env-kept", "1"); }
    void host_env_entry(std::string_view name_equals_value) { record("host-env", name_equals_value); }
    void forked_namespace(const MountNamespace& ns);
    void number(std::string_view key, std::uint32_t value);  // "job", "step", "nodes"
    void first_task(bool first) { record("first-task", first ? "1" : "0"); }
    std::string finish() &&;

private:
    void record(std::string_view key, std::string_view value);
    void field(std::string_view text);
    std::string bytes_;
};

// Tells, as a message's bytes arrive, whether it is whole: whether its "end"
// record has ended. Each side stops reading there instead of waiting for the
// other to close the connection, which would be one more wake-up of a
// blocked reader per message: 100 to 700 µs each on a VM with expensive
// cross-CPU wake-ups (docs/performance.md). The decoders still judge the
// message; this only says when to stop reading.
class MessageEnd {
public:
    // `received` is every byte so far, the earlier ones unchanged since the
    // last call; each byte is looked at once.
    bool reached(std::string_view received) noexcept;

private:
    std::size_t scanned_ = 0;      // bytes looked at
    std::size_t field_start_ = 0;  // where the field being read began
    std::size_t fields_ = 0;       // fields ended so far, the header first
    bool end_key_ = false;         // the last key was "end": its value ends the message
    bool reached_ = false;
};

std::string encode_task_request(const TaskRequest& request);
Result<TaskRequest> decode_task_request(std::string_view bytes);
std::string encode_task_answer(const TaskAnswer& answer);
Result<TaskAnswer> decode_task_answer(std::string_view bytes);

}  // namespace launchguard::slurm
