// A forked child that does one thing (take a lock, leave a namespace, become
// another user), says whether it worked, and waits until it is killed: a
// process for a test to look at from outside. Killed and reaped at the end of the scope, or by stop().
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>

namespace launchguard::test {

class WaitingChild {
public:
    // `in_child` runs in the child, after fork: keep it to system calls.
    explicit WaitingChild(const std::function<bool()>& in_child) {
        int ready[2];
        if (::pipe(ready) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            const char done = in_child() ? '1' : '0';
            if (::write(ready[1], &done, 1) != 1) ::_exit(1);
            ::pause();
            ::_exit(0);
        }
        ::close(ready[1]);
        char done = '0';
        if (pid_ > 0 && ::read(ready[0], &done, 1) == 1) done_ = done == '1';
        ::close(ready[0]);
    }
    WaitingChild(const WaitingChild&) = delete;
    WaitingChild& operator=(const WaitingChild&) = delete;
    ~WaitingChild() { stop(); }

    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    // Whether what the child was to do worked.
    [[nodiscard]] bool done() const { return done_; }
    [[nodiscard]] pid_t pid() const { return pid_; }

private:
    pid_t pid_ = -1;
    bool done_ = false;
};

}  // namespace launchguard::test
