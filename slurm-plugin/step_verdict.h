// A step's tasks on one node share the verdict of the first one judged, as
// pyxis shares a page per step: user_init maps a table before the tasks are
// forked: the verdict of the rules that read nothing per task (docs/design/
// SLURM_PLUGIN.md). Each task judges the per-task rules (CPU mask, GPUs).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "task_check.h"

namespace launchguard::slurm {

struct VerdictKey {
    std::uint64_t first = 0;
    std::uint64_t second = 0;
    friend bool operator==(const VerdictKey&, const VerdictKey&) = default;
};

struct VerdictInputs {
    std::optional<MountNamespace> mount_namespace;
    std::uint64_t root_dev = 0;
    std::uint64_t root_ino = 0;
    uid_t euid = 0;
    gid_t egid = 0;
    std::vector<gid_t> groups;
    std::string limits;  // the resource limits and capabilities the check reads
    const Environment* env = nullptr;
};

// This process's inputs over its environment `env`; nullopt: judged in full.
std::optional<VerdictInputs> current_verdict_inputs(const Environment& env);

VerdictKey verdict_key(const VerdictInputs& inputs);

// A variable Slurm sets per task, read by no rule or by per-task rules only
// (the GPU binding): not in the key.
bool is_per_task_variable(std::string_view name);

// Blocked when either part blocks, else both patches; the shared part's lines
// on the node's first task only, the per-task lines (when one fired) always.
TaskAnswer combine_verdicts(TaskAnswer shared, TaskAnswer per_task, bool first_task);

// An answer in the shared table's bytes, and back; nullopt: over `capacity`.
std::optional<std::string> encode_shared_answer(const TaskAnswer& answer, std::size_t capacity);
TaskAnswer decode_shared_answer(std::string_view bytes);

class SharedVerdicts {
public:
    static constexpr std::size_t kSlots = 8;
    static constexpr std::size_t kAnswerBytes = 30 * 1024;

    // Maps the table, shared with the processes forked after; null on failure.
    static SharedVerdicts* map_shared();

    enum class Outcome {
        reuse,      // `answer` holds the verdict of an earlier task with this key
        judge,      // judge in full, then publish() to `slot` (or nowhere when none was free)
        timed_out,  // another task is judging this key and did not finish in time
    };
    struct Lookup {
        Outcome outcome = Outcome::judge;
        TaskAnswer answer;
        std::optional<std::size_t> slot;  // claimed for this key: publish() or abandon() it
    };
    // Never waits longer than `wait_limit` (zero: never waits).
    Lookup find_or_claim(const VerdictKey& key, std::chrono::milliseconds wait_limit);
    // The claimed slot's answer for every later task with the key; one that is
    // not a verdict, or too large, is not shared (the slot is abandoned).
    void publish(std::size_t slot, const TaskAnswer& answer);
    void abandon(std::size_t slot);

private:
    enum State : std::uint32_t { kFree = 0, kClaiming = 1, kJudging = 2, kPublished = 3, kAbandoned = 4 };
    struct Slot {
        std::atomic<std::uint32_t> state;  // a futex word, shared between processes
        VerdictKey key;
        std::uint32_t answer_size;
        char answer[kAnswerBytes];
    };
    Slot slots_[kSlots];
};

// The step's table, mapped by user_init before the tasks are forked.
void map_step_verdicts() noexcept;
SharedVerdicts* step_verdicts() noexcept;

}  // namespace launchguard::slurm
