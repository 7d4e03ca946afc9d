// One task check at a time in launchguard-task-service, with a bound on the
// wait for it. A check that never returns (a file in a task's root on a hung
// FUSE or network mount) would otherwise hold every later task of the node
// until each one's own node-read-timeout, for as long as the service runs.
// With the bound, a task that finds the check held too long is answered at
// once that it was not checked and why, and goes on as on-error= says.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

namespace launchguard::slurm {

class CheckLock {
public:
    // Released when it goes out of scope, on the thread that took it.
    class Held {
    public:
        Held(Held&& other) noexcept;
        Held& operator=(Held&&) = delete;
        Held(const Held&) = delete;
        Held& operator=(const Held&) = delete;
        ~Held();

    private:
        friend class CheckLock;
        explicit Held(CheckLock* lock) noexcept : lock_(lock) {}
        CheckLock* lock_;
    };

    // Takes the lock for task `pid`, waiting up to `wait` (zero: as long as
    // it takes). Fails without waiting when the check that holds it has
    // already held it longer than `wait`. On failure, `why` names the task
    // whose check holds it and for how long.
    std::optional<Held> acquire(int pid, std::chrono::milliseconds wait, std::string& why);

private:
    void release() noexcept;
    std::string held_by() const;

    std::timed_mutex mutex_;
    // Who holds mutex_ and since when, for the others' answers.
    mutable std::mutex holder_mutex_;
    int holder_pid_ = 0;
    std::chrono::steady_clock::time_point held_since_;
};

}  // namespace launchguard::slurm
