#include "check_lock.h"

namespace launchguard::slurm {

CheckLock::Held::Held(Held&& other) noexcept : lock_(other.lock_) { other.lock_ = nullptr; }

CheckLock::Held::~Held() {
    if (lock_ != nullptr) lock_->release();
}

std::optional<CheckLock::Held> CheckLock::acquire(int pid, std::chrono::milliseconds wait, std::string& why) {
    using std::chrono::steady_clock;
    bool taken = false;
    if (wait.count() <= 0) {
        mutex_.lock();
        taken = true;
    } else {
        {
            const std::lock_guard holder(holder_mutex_);
            if (holder_pid_ != 0 && steady_clock::now() - held_since_ > wait) {
                why = held_by();
                return std::nullopt;
            }
        }
        taken = mutex_.try_lock_for(wait);
    }
    if (!taken) {
        const std::lock_guard holder(holder_mutex_);
        why = held_by();
        return std::nullopt;
    }
    const std::lock_guard holder(holder_mutex_);
    holder_pid_ = pid;
    held_since_ = steady_clock::now();
    return Held(this);
}

void CheckLock::release() noexcept {
    {
        const std::lock_guard holder(holder_mutex_);
        holder_pid_ = 0;
    }
    mutex_.unlock();
}

// Called with holder_mutex_ held.
std::string CheckLock::held_by() const {
    if (holder_pid_ == 0) return "the task service was busy with other checks for the whole wait";
    const auto held =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - held_since_);
    return "the task service's check of task " + std::to_string(holder_pid_) + " has not returned after " +
           std::to_string(held.count()) +
           " ms (a file in that task's root may not answer: a hung FUSE or network mount?), and the service "
           "checks one task at a time";
}

}  // namespace launchguard::slurm
