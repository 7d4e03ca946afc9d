#include "step_verdict.h"

#include <linux/capability.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>
#include <functional>
#include <string_view>

namespace launchguard::slurm {
namespace {

// Two independent 64-bit hashes of the same bytes: a shared verdict is
// another task's, so a collision must be out of reach, not merely rare.
class KeyHasher {
public:
    void add(std::string_view bytes) {
        for (const unsigned char byte : bytes) fnv_ = (fnv_ ^ byte) * 0x100000001b3ULL;
        fnv_ = (fnv_ ^ 0xff) * 0x100000001b3ULL;  // ends the field
        std_ ^= std::hash<std::string_view>{}(bytes) + 0x9e3779b97f4a7c15ULL + (std_ << 6) + (std_ >> 2);
    }
    template <typename T>
    void add_value(const T& value) {
        add(std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
    }
    VerdictKey key() const { return {fnv_, std_}; }

private:
    std::uint64_t fnv_ = 0xcbf29ce484222325ULL;
    std::uint64_t std_ = 0;
};

// Waits while *word == expected, at most until `deadline`; the word is in a
// mapping shared between processes, so the futex is not a private one.
void wait_while(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::steady_clock::time_point deadline) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec timeout{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void wake_all(std::atomic<std::uint32_t>& word) {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, 0x7fffffff, nullptr, nullptr, 0);
}

void put_field(std::string& out, char kind, std::string_view text) { (out += kind).append(text) += '\0'; }

}  // namespace

bool is_per_task_variable(std::string_view name) {
    static constexpr std::array<std::string_view, 8> kPerTask{
        "SLURM_PROCID", "SLURM_LOCALID",        "SLURM_TASK_PID",       "PMI_RANK",
        "PMIX_RANK",    "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"};
    return std::find(kPerTask.begin(), kPerTask.end(), name) != kPerTask.end();
}

std::optional<VerdictInputs> current_verdict_inputs(const Environment& env) {
    VerdictInputs inputs;
    inputs.env = &env;
    inputs.mount_namespace = current_mount_namespace();
    struct stat root {};
    if (!inputs.mount_namespace || ::stat("/", &root) != 0) return std::nullopt;
    inputs.root_dev = root.st_dev;
    inputs.root_ino = root.st_ino;
    inputs.euid = ::geteuid();
    inputs.egid = ::getegid();
    const int count = ::getgroups(0, nullptr);
    if (count < 0) return std::nullopt;
    inputs.groups.resize(static_cast<std::size_t>(count));
    if (count > 0 && ::getgroups(count, inputs.groups.data()) != count) return std::nullopt;
    for (const int resource : {RLIMIT_MEMLOCK, RLIMIT_NOFILE, RLIMIT_STACK}) {
        struct rlimit limit {};
        if (::getrlimit(resource, &limit) != 0) return std::nullopt;
        inputs.limits.append(reinterpret_cast<const char*>(&limit), sizeof limit);
    }
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    std::array<__user_cap_data_struct, 2> caps{};
    if (::syscall(SYS_capget, &header, caps.data()) != 0) return std::nullopt;
    inputs.limits.append(reinterpret_cast<const char*>(caps.data()), sizeof caps);
    return inputs;
}

VerdictKey verdict_key(const VerdictInputs& inputs) {
    KeyHasher hasher;
    const MountNamespace ns = inputs.mount_namespace.value_or(MountNamespace{});
    for (const std::uint64_t id : {ns.dev, ns.ino, inputs.root_dev, inputs.root_ino}) hasher.add_value(id);
    for (const unsigned id : {inputs.euid, inputs.egid}) hasher.add_value(id);
    for (const gid_t group : inputs.groups) hasher.add_value(group);
    hasher.add(inputs.limits);
    if (inputs.env != nullptr) {
        // A map: in name order whatever order the task's entries came in.
        for (const auto& [name, value] : *inputs.env) {
            if (is_per_task_variable(name)) continue;
            hasher.add(name);
            hasher.add(value);
        }
    }
    return hasher.key();
}

std::optional<std::string> encode_shared_answer(const TaskAnswer& answer, std::size_t capacity) {
    std::string out;
    out += answer.block ? 'B' : 'A';
    for (const auto& line : answer.log_info) put_field(out, 'i', line);
    for (const auto& line : answer.log_error) put_field(out, 'e', line);
    for (const auto& text : answer.tell_user) put_field(out, 'u', text);
    for (const auto& change : answer.env_patch) {
        put_field(out, change.value ? 's' : 'x', change.name);
        if (change.value) put_field(out, 'v', *change.value);
    }
    if (out.size() > capacity) return std::nullopt;
    return out;
}

TaskAnswer decode_shared_answer(std::string_view bytes) {
    TaskAnswer answer;
    answer.judged = true;
    if (bytes.empty()) return answer;
    answer.block = bytes.front() == 'B';
    bytes.remove_prefix(1);
    while (!bytes.empty()) {
        const char kind = bytes.front();
        const std::size_t end = bytes.find('\0');
        const std::string text(bytes.substr(1, end == std::string_view::npos ? std::string_view::npos : end - 1));
        bytes.remove_prefix(end == std::string_view::npos ? bytes.size() : end + 1);
        if (kind == 'i') answer.log_info.push_back(text);
        if (kind == 'e') answer.log_error.push_back(text);
        if (kind == 'u') answer.tell_user.push_back(text);
        if (kind == 's' || kind == 'x') answer.env_patch.push_back({text, std::nullopt});
        if (kind == 'v' && !answer.env_patch.empty()) answer.env_patch.back().value = text;
    }
    return answer;
}

TaskAnswer combine_verdicts(TaskAnswer shared, TaskAnswer per_task, bool first_task) {
    TaskAnswer answer = std::move(shared);
    if (!first_task) {
        answer.log_info.clear();
        answer.tell_user.clear();
    }
    answer.judged = answer.judged && per_task.judged;
    answer.block = answer.block || per_task.block;
    const auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(answer.log_info, per_task.log_info);
    append(answer.log_error, per_task.log_error);
    append(answer.tell_user, per_task.tell_user);
    append(answer.env_patch, per_task.env_patch);
    if (answer.block) answer.env_patch.clear();
    return answer;
}

namespace {
SharedVerdicts* g_step_verdicts = nullptr;
}  // namespace

void map_step_verdicts() noexcept {
    if (g_step_verdicts == nullptr) g_step_verdicts = SharedVerdicts::map_shared();
}

SharedVerdicts* step_verdicts() noexcept { return g_step_verdicts; }

SharedVerdicts* SharedVerdicts::map_shared() {
    void* memory = ::mmap(nullptr, sizeof(SharedVerdicts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return nullptr;
    // Zero pages: every slot free. Never unmapped: the tasks exec or exit.
    static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
    return static_cast<SharedVerdicts*>(memory);
}

SharedVerdicts::Lookup SharedVerdicts::find_or_claim(const VerdictKey& key, std::chrono::milliseconds wait_limit) {
    const auto deadline = std::chrono::steady_clock::now() + wait_limit;
    Lookup lookup;
    const auto expired = [&] {  // zero: judge in full at once, never timed out
        if (std::chrono::steady_clock::now() < deadline) return false;
        if (wait_limit.count() > 0) lookup.outcome = Outcome::timed_out;
        return true;
    };
    while (true) {
        bool claiming = false;  // a slot's key is being written: look again
        bool woken = false;     // the slot judging this key changed: look again
        std::optional<std::size_t> free_slot;
        for (std::size_t i = 0; i < kSlots && !woken; ++i) {
            Slot& slot = slots_[i];
            const std::uint32_t state = slot.state.load(std::memory_order_acquire);
            if (state == kFree) {
                if (!free_slot) free_slot = i;
            } else if (state == kClaiming) {
                claiming = true;  // a few instructions away from its key
            } else if (slot.key == key) {
                if (state == kPublished) {
                    lookup.outcome = Outcome::reuse;
                    lookup.answer = decode_shared_answer(std::string_view(slot.answer, slot.answer_size));
                    return lookup;
                }
                if (state == kAbandoned) return lookup;  // that task could not be checked: judge in full
                if (expired()) return lookup;            // kJudging: wait for its answer, bounded
                wait_while(slot.state, kJudging, deadline);
                woken = true;
            }
        }
        if (woken) continue;
        if (claiming) {
            if (expired()) return lookup;
            ::sched_yield();
            continue;
        }
        if (!free_slot) return lookup;  // table full: judge in full, share nothing
        std::uint32_t expected = kFree;
        if (!slots_[*free_slot].state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel))
            continue;  // taken meanwhile: look again
        slots_[*free_slot].key = key;
        slots_[*free_slot].state.store(kJudging, std::memory_order_release);
        lookup.slot = free_slot;
        return lookup;
    }
}

void SharedVerdicts::publish(std::size_t slot, const TaskAnswer& answer) {
    auto bytes = answer.judged ? encode_shared_answer(answer, kAnswerBytes) : std::nullopt;
    if (!bytes) {
        abandon(slot);
        return;
    }
    std::memcpy(slots_[slot].answer, bytes->data(), bytes->size());
    slots_[slot].answer_size = static_cast<std::uint32_t>(bytes->size());
    slots_[slot].state.store(kPublished, std::memory_order_release);
    wake_all(slots_[slot].state);
}

void SharedVerdicts::abandon(std::size_t slot) {
    slots_[slot].state.store(kAbandoned, std::memory_order_release);
    wake_all(slots_[slot].state);
}

}  // namespace launchguard::slurm
