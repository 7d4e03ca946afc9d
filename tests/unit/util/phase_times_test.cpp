#include "util/phase_times.h"

#include <gtest/gtest.h>

namespace launchguard {
namespace {

TEST(PhaseTimes, NamesEachPhaseInMicrosecondsInOrder) {
    PhaseTimes times;
    times.add("profile", std::chrono::microseconds(12));
    { PhaseTimer timer(&times, "rules"); }
    const std::string text = times.to_string();
    EXPECT_EQ(text.rfind("profile=12us rules=", 0), 0U) << text;
    EXPECT_TRUE(text.ends_with("us")) << text;
}

TEST(PhaseTimes, ATimerOverNullRecordsNothing) {
    PhaseTimer timer(nullptr, "ignored");
    timer.stop();
    PhaseTimes times;
    EXPECT_TRUE(times.empty());
    EXPECT_EQ(times.to_string(), "");
}

TEST(PhaseTimes, KeepsAFixedNumberAndCountsTheRest) {
    PhaseTimes times;
    for (std::size_t i = 0; i < PhaseTimes::kCapacity + 2; ++i) times.add("p", std::chrono::nanoseconds(0));
    EXPECT_TRUE(times.to_string().ends_with("(2 more phases not kept)")) << times.to_string();
}

}  // namespace
}  // namespace launchguard
