// How many times this process has forked since the first call: for tests of
// code that must not fork in a multi-threaded process
// (forked_child_may_run_library_code()). pthread_atfork() handlers cannot be
// removed, so the handler is registered once per test process.
#pragma once

#include <pthread.h>

#include <atomic>
#include <thread>

namespace launchguard::test {

inline std::atomic<int> g_forks{0};

inline int forks_so_far() {
    static const bool registered = [] {
        return ::pthread_atfork([] { g_forks.fetch_add(1); }, nullptr, nullptr) == 0;
    }();
    return registered ? g_forks.load() : -1;
}

// Makes this process multi-threaded for the rest of its life, as glibc
// counts it: a thread that has started and ended leaves it so.
inline void start_and_join_a_thread() {
    std::thread([] {}).join();
}

}  // namespace launchguard::test
