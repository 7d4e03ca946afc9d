// Wall time of named phases, for a front end that reports where its time goes
// (the Slurm plugin's `timing=1`, docs/slurm.md). Code that may be timed takes
// a PhaseTimes pointer; null means "not timed", and a PhaseTimer over null
// reads no clock, so timing off costs a pointer test per phase. Names are
// string literals (kept by pointer) and the table is fixed, so recording
// allocates nothing: it runs in a forked Slurm task and on slurmstepd's
// loading thread.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace launchguard {

class PhaseTimes {
public:
    static constexpr std::size_t kCapacity = 40;

    // `name` must outlive this object (a literal). Past kCapacity phases,
    // further ones are counted as dropped.
    void add(const char* name, std::chrono::nanoseconds elapsed) noexcept {
        if (count_ == kCapacity) {
            ++dropped_;
            return;
        }
        phases_[count_++] = {name, static_cast<std::int64_t>(elapsed.count())};
    }

    // "name=123us name2=45us", in the order recorded.
    std::string to_string() const {
        std::string out;
        for (std::size_t i = 0; i < count_; ++i) {
            if (!out.empty()) out += ' ';
            out += phases_[i].name;
            out += '=';
            out += std::to_string((phases_[i].nanoseconds + 500) / 1000);
            out += "us";
        }
        if (dropped_ > 0) out += " (" + std::to_string(dropped_) + " more phases not kept)";
        return out;
    }

    bool empty() const noexcept { return count_ == 0; }

private:
    struct Phase {
        const char* name;
        std::int64_t nanoseconds;
    };
    std::array<Phase, kCapacity> phases_{};
    std::size_t count_ = 0;
    std::size_t dropped_ = 0;
};

// Records the time from construction to stop() or destruction into `times`,
// when it is not null.
class PhaseTimer {
public:
    PhaseTimer(PhaseTimes* times, const char* name) noexcept : times_(times), name_(name) {
        if (times_ != nullptr) start_ = std::chrono::steady_clock::now();
    }
    ~PhaseTimer() { stop(); }
    PhaseTimer(const PhaseTimer&) = delete;
    PhaseTimer& operator=(const PhaseTimer&) = delete;

    void stop() noexcept {
        if (times_ == nullptr) return;
        times_->add(name_, std::chrono::steady_clock::now() - start_);
        times_ = nullptr;
    }

private:
    PhaseTimes* times_;
    const char* name_;
    std::chrono::steady_clock::time_point start_{};
};

}  // namespace launchguard
