#include "task_service.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <utility>
#include <vector>

#include "container_placement.h"
#include "decision_log.h"
#include "engine/profile_loader.h"
#include "probe/process_probe.h"
#include "probe/rooted_file_view.h"
#include "probe/text_file.h"
#include "service_client.h"
#include "step_node.h"
#include "task_check.h"
#include "util/text.h"

namespace launchguard::slurm {
namespace {

// What /proc/PID/status says of the task's ids.
struct TaskIds {
    uid_t uid = 0;  // effective
    gid_t gid = 0;  // effective
    std::vector<gid_t> groups;
};

std::optional<unsigned long> id_number(std::string_view text) {
    const auto number = whole_number(text);
    if (!number || *number < 0) return std::nullopt;
    return static_cast<unsigned long>(*number);
}

// The second of "real<TAB>effective<TAB>saved<TAB>fs".
std::optional<unsigned long> effective_id(std::string_view ids) {
    const auto words = split_list(ids, '\t');
    if (words.size() < 2) return std::nullopt;
    return id_number(words[1]);
}

Result<TaskIds> task_ids_of(const ProcessStatus& status) {
    const std::string& path = status.path;
    const auto& text = status.text;
    if (!text) return text.error();
    TaskIds ids;
    bool have_uid = false;
    bool have_gid = false;
    for (const std::string& full_line : split_list(*text, '\n')) {
        const std::string_view line = full_line;
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view key = line.substr(0, colon);
        const std::string_view value = trim(line.substr(colon + 1));
        if (key == "Uid") {
            if (auto uid = effective_id(value)) ids.uid = static_cast<uid_t>(*uid), have_uid = true;
        } else if (key == "Gid") {
            if (auto gid = effective_id(value)) ids.gid = static_cast<gid_t>(*gid), have_gid = true;
        } else if (key == "Groups") {
            for (const std::string& group : split_list(value, ' ')) {
                if (auto id = id_number(group)) ids.groups.push_back(static_cast<gid_t>(*id));
            }
        }
    }
    if (!have_uid || !have_gid) return make_file_error(path, 0, "has no Uid or Gid line");
    return ids;
}

// The task's user and groups for this thread's file access, and back to the
// service's own at the end. Linux keeps the filesystem ids and the groups per
// thread; the system calls are made directly, because the C library's
// setgroups() changes every thread of the process.
class TaskFileAccess {
public:
    TaskFileAccess(const TaskFileAccess&) = delete;
    TaskFileAccess& operator=(const TaskFileAccess&) = delete;

    static std::optional<std::string> adopt(const TaskIds& ids, std::optional<TaskFileAccess>& out) {
        out.emplace();
        // A service that is not root (a test, a user trying it) reads as
        // itself, which is right only for its own user's tasks.
        if (::geteuid() != 0) {
            if (ids.uid == ::geteuid()) return std::nullopt;
            return "the service does not run as root, and the task is another user's";
        }
        const int count = ::getgroups(0, nullptr);
        if (count < 0) return "getgroups failed";
        out->saved_groups_.resize(static_cast<std::size_t>(count));
        if (::getgroups(count, out->saved_groups_.data()) != count) return "getgroups failed";
        out->saved_fsuid_ = static_cast<uid_t>(::syscall(SYS_setfsuid, static_cast<uid_t>(-1)));
        out->saved_fsgid_ = static_cast<gid_t>(::syscall(SYS_setfsgid, static_cast<gid_t>(-1)));
        out->active_ = true;
        if (::syscall(SYS_setgroups, ids.groups.size(), ids.groups.data()) != 0)
            return "cannot take the task's groups (the service must run as root)";
        (void)::syscall(SYS_setfsgid, ids.gid);
        (void)::syscall(SYS_setfsuid, ids.uid);
        // setfsuid() reports the previous id only: ask again to see the change.
        if (static_cast<uid_t>(::syscall(SYS_setfsuid, static_cast<uid_t>(-1))) != ids.uid ||
            static_cast<gid_t>(::syscall(SYS_setfsgid, static_cast<gid_t>(-1))) != ids.gid)
            return "cannot take the task's user for reading its files (the service must run as root)";
        return std::nullopt;
    }

    TaskFileAccess() = default;
    ~TaskFileAccess() {
        if (!active_) return;
        (void)::syscall(SYS_setfsuid, saved_fsuid_);
        (void)::syscall(SYS_setfsgid, saved_fsgid_);
        (void)::syscall(SYS_setgroups, saved_groups_.size(), saved_groups_.data());
    }

private:
    bool active_ = false;
    uid_t saved_fsuid_ = 0;
    gid_t saved_fsgid_ = 0;
    std::vector<gid_t> saved_groups_;
};

// How long a step's file answers serve its later tasks. A step's tasks reach
// task_init within milliseconds of each other; a task that arrives later
// than this (or a file that changes in between) is looked at afresh.
constexpr auto kStepFilesLifetime = std::chrono::seconds(2);
// Steps whose answers are kept at once: a node may start steps of several
// jobs at the same moment.
constexpr std::size_t kStepFilesKept = 8;

}  // namespace

std::optional<std::string> TaskService::answer_request(int fd, int pid, const std::string& request) noexcept {
    try {
        if (request.empty()) return std::nullopt;
        auto decoded = decode_task_request(request);
        if (!decoded) {
            TaskAnswer refused;
            refused.log_error.push_back("the task service refused the request: " + decoded.error().to_string());
            (void)send_message(fd, encode_task_answer(refused));
            return "task " + std::to_string(pid) + ": " + decoded.error().to_string();
        }
        (void)send_message(fd, encode_task_answer(serve(std::move(*decoded), pid)));
        return std::nullopt;
    } catch (...) {
        return "task " + std::to_string(pid) + ": the connection failed (out of memory?)";
    }
}

std::shared_ptr<const Result<Profile>> TaskService::profile(const std::string& name_or_path) {
    // A site profile is a file the operator may change: read it again when
    // its modification time or size did (one stat per task), as each step
    // reads it afresh without the service. Embedded profiles never change.
    std::optional<FileStamp> stamp;
    if (!name_or_path.empty() && name_or_path.front() == '/') {
        struct stat st {};
        if (::stat(name_or_path.c_str(), &st) == 0)
            stamp = FileStamp{st.st_mtim.tv_sec, st.st_mtim.tv_nsec, static_cast<std::int64_t>(st.st_size)};
    }
    auto& loaded = profiles_[name_or_path];
    if (!loaded.profile || !*loaded.profile || loaded.stamp != stamp) {
        loaded.profile = std::make_shared<const Result<Profile>>(load_profile(name_or_path));
        loaded.stamp = stamp;
    }
    return loaded.profile;
}

std::optional<NodeSnapshot> TaskService::node_snapshot(const PluginConfig& config) {
    const ProbeOptions options = node_probe_options(config);
    const std::string key = options.topology_cache.value_or("") + '\n' + options.hwloc_xml.value_or("") + '\n' +
                            options.sysfs_root.value_or("");
    const auto now = std::chrono::steady_clock::now();
    // As long as a step would take the node facts cache (node-facts-max-age):
    // the service is one long step.
    const bool fresh = node_ && node_->key == key && node_->snapshot &&
                       now - node_->read_at < std::chrono::seconds(config.node_facts_max_age);
    if (!fresh) {
        auto read = probe_node_snapshot(options);
        node_ = NodeRead{key, now, read ? std::optional<NodeSnapshot>(std::move(read).value()) : std::nullopt};
    }
    return node_->snapshot;
}

TaskAnswer TaskService::check(TaskRequest& request, int pid, const PluginConfig& config, PhaseTimes* times,
                              std::size_t& from_step_files) {
    const std::string process_dir = "/proc/" + std::to_string(pid);
    PhaseTimer gather_timer(times, "task_facts");
    // One read of the task's status file for its ids here, and for its CPU
    // mask, capabilities and uid in the check.
    ProcessStatus status = read_process_status(pid);
    auto ids = task_ids_of(status);
    if (!ids)
        return cannot_check("cannot read the task's ids: " + ids.error().to_string(), request.first_task,
                            config.on_error == OnError::block);

    TaskView view;
    view.mode = request.mode;
    view.env = std::move(request.env);
    view.root = process_dir + "/root";
    view.pid = pid;
    view.status = std::move(status);
    view.forked_in = request.forked_namespace;
    view.now = mount_namespace_of(process_dir);
    if (!(view.forked_in && view.now && *view.forked_in == *view.now)) {
        if (auto mountinfo = read_text_file(process_dir + "/mountinfo", 1U << 20))
            view.root_directory = root_mount_directory(*mountinfo);
    }
    // The host's side, which the task could not see any more: the job's
    // environment from before pyxis, and the service's own "/". Only a task
    // that moved into another mount namespace has a host side to compare
    // (place_task); for the others it is not unpacked.
    const std::string node_name = short_hostname();
    std::optional<HostSide> host;
    if (request.host_env && moved_after_fork(view.forked_in, view.now)) {
        host = HostSide{
            request.host_env->unpack(),
            std::make_shared<RootedFileView>("/", "host filesystem of " + node_name + " (seen by the task service)")};
        view.host = &*host;
    }
    // The step's earlier tasks looked at the same files the same way, when
    // their root, mount namespace, user and groups are the task's.
    auto own_files = std::make_shared<RootedFileView>(view.root);
    std::shared_ptr<SharedFileAnswers> step_answers;
    struct stat root_st {};
    if (request.job_id && request.step_id && view.now && ::stat(view.root.c_str(), &root_st) == 0) {
        StepFilesKey key{*request.job_id,
                         *request.step_id,
                         *view.now,
                         static_cast<std::uint64_t>(root_st.st_dev),
                         static_cast<std::uint64_t>(root_st.st_ino),
                         ids->uid,
                         ids->gid,
                         {ids->groups.begin(), ids->groups.end()}};
        std::sort(key.groups.begin(), key.groups.end());
        step_answers = step_file_answers(key);
        view.files = std::make_shared<SharedAnswersFileView>(std::move(own_files), step_answers);
    } else {
        view.files = std::move(own_files);
    }
    gather_timer.stop();
    PhaseTimer node_timer(times, "node_snapshot");
    view.node = node_snapshot(config);
    node_timer.stop();
    view.job_id = request.job_id;
    view.step_id = request.step_id;
    view.job_nodes = request.job_nodes;
    view.first_task = request.first_task;
    view.node_name = node_name;

    // The site's profile as the service, before it takes the task's user.
    const auto loaded = profile(config.profile);
    std::optional<TaskFileAccess> access;
    if (auto failed = TaskFileAccess::adopt(*ids, access))
        return cannot_check(*failed, request.first_task, config.on_error == OnError::block);
    const std::size_t answered_before = step_answers ? step_answers->answered_from_memory() : 0;
    TaskAnswer answer = check_task(std::move(view), *loaded, config, times);
    if (step_answers) from_step_files = step_answers->answered_from_memory() - answered_before;
    return answer;
}

std::shared_ptr<SharedFileAnswers> TaskService::step_file_answers(const StepFilesKey& key) {
    const auto now = std::chrono::steady_clock::now();
    const std::lock_guard<std::mutex> lock(step_files_mutex_);
    std::erase_if(step_files_, [&](const StepFiles& kept) { return now - kept.first_asked >= kStepFilesLifetime; });
    for (const StepFiles& kept : step_files_) {
        if (kept.key == key) return kept.answers;
    }
    if (step_files_.size() >= kStepFilesKept) step_files_.erase(step_files_.begin());  // the oldest
    step_files_.push_back(StepFiles{key, now, std::make_shared<SharedFileAnswers>()});
    return step_files_.back().answers;
}

TaskAnswer TaskService::serve(TaskRequest request, int pid) noexcept {
    try {
        auto config = parse_plugin_args(request.plugin_args);
        if (!config) return cannot_check("plugstack.conf: " + config.error().to_string(), request.first_task, false);
        const auto arrived = std::chrono::steady_clock::now();
        std::string busy;
        const auto held = check_lock_.acquire(pid, std::chrono::milliseconds(config->node_read_timeout * 500), busy);
        if (!held)
            return cannot_check("task " + std::to_string(pid) + " was not checked: " + busy, request.first_task,
                                config->on_error == OnError::block);
        const auto started = std::chrono::steady_clock::now();
        PhaseTimes times;
        std::size_t from_step_files = 0;
        TaskAnswer answer = check(request, pid, *config, config->timing ? &times : nullptr, from_step_files);
        if (config->timing) {
            // timing=1: what the service spent, beside the task's own line.
            using std::chrono::duration_cast;
            using std::chrono::microseconds;
            const auto now = std::chrono::steady_clock::now();
            answer.log_info.push_back("timing task service: waited=" +
                                      std::to_string(duration_cast<microseconds>(started - arrived).count()) +
                                      "us check=" + std::to_string(duration_cast<microseconds>(now - started).count()) +
                                      "us " + times.to_string() + " step_files=" + std::to_string(from_step_files));
        }
        return answer;
    } catch (const std::exception& e) {
        try {
            return cannot_check(std::string("the task service failed: ") + e.what(), request.first_task, false);
        } catch (...) {
        }
    } catch (...) {
    }
    return TaskAnswer{};
}

}  // namespace launchguard::slurm
