#include "check_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace launchguard::slurm {
namespace {

using namespace std::chrono_literals;

// Holds the lock on a thread of its own, as a stuck check would, until released.
class StuckCheck {
public:
    StuckCheck(CheckLock& lock, int pid) {
        thread_ = std::thread([this, &lock, pid] {
            std::string why;
            auto held = lock.acquire(pid, 0ms, why);
            holding_ = held.has_value();
            while (!release_) std::this_thread::sleep_for(1ms);
        });
        while (!holding_) std::this_thread::sleep_for(1ms);
    }
    StuckCheck(const StuckCheck&) = delete;
    StuckCheck& operator=(const StuckCheck&) = delete;
    ~StuckCheck() { release(); }
    void release() {
        release_ = true;
        if (thread_.joinable()) thread_.join();
    }

private:
    std::atomic<bool> holding_{false};
    std::atomic<bool> release_{false};
    std::thread thread_;
};

TEST(CheckLock, IsTakenWhenFreeAndFreedAtTheEndOfItsScope) {
    CheckLock lock;
    std::string why;
    {
        auto held = lock.acquire(100, 1000ms, why);
        ASSERT_TRUE(held) << why;
    }
    auto again = lock.acquire(101, 1000ms, why);
    EXPECT_TRUE(again) << why;
}

TEST(CheckLock, AWaitThatOutlastsTheBoundNamesTheTaskBeingChecked) {
    CheckLock lock;
    StuckCheck stuck(lock, 4242);
    std::string why;
    const auto start = std::chrono::steady_clock::now();
    auto held = lock.acquire(7, 200ms, why);
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_FALSE(held);
    EXPECT_GE(waited, 190ms);
    EXPECT_NE(why.find("check of task 4242 has not returned"), std::string::npos) << why;
    EXPECT_NE(why.find("hung FUSE or network mount"), std::string::npos) << why;
}

TEST(CheckLock, OnceACheckIsStuckLaterTasksAreAnsweredWithoutWaiting) {
    CheckLock lock;
    StuckCheck stuck(lock, 4242);
    std::this_thread::sleep_for(150ms);  // held longer than the bound below
    std::string why;
    const auto start = std::chrono::steady_clock::now();
    auto held = lock.acquire(8, 100ms, why);
    EXPECT_FALSE(held);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 50ms);
    EXPECT_NE(why.find("task 4242"), std::string::npos) << why;
}

TEST(CheckLock, AWaiterGetsTheLockWhenTheCheckReturnsInTime) {
    CheckLock lock;
    StuckCheck slow(lock, 4242);
    std::thread releaser([&] {
        std::this_thread::sleep_for(50ms);
        slow.release();
    });
    std::string why;
    auto held = lock.acquire(9, 5000ms, why);
    releaser.join();
    EXPECT_TRUE(held) << why;
}

}  // namespace
}  // namespace launchguard::slurm
