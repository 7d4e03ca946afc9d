// The watchdog under node-check: real child processes that finish, stall,
// crash, or never let go of a read, and the deadline that ends each.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "support/fork_count.h"
#include "unit/probe/temp_tree.h"
#include "util/child_process.h"

namespace launchguard {
namespace {

using namespace std::chrono_literals;

// ctest runs each test in a process of its own, which starts with one thread.
TEST(ForkedChild, MayRunLibraryCodeOnlyUntilTheProcessStartsAThread) {
    if (!forked_child_may_run_library_code()) GTEST_SKIP() << "an earlier test in this process started a thread";
    test::start_and_join_a_thread();
    EXPECT_FALSE(forked_child_may_run_library_code());
}

TEST(ForkedWithDeadline, AMultiThreadedProcessForksNoChildAndSaysWhy) {
    test::start_and_join_a_thread();
    const int forks_before = test::forks_so_far();
    ASSERT_GE(forks_before, 0);
    bool ran = false;
    auto result = run_forked_with_deadline(
        [&ran](const StepNote&) {
            ran = true;
            return std::string("result");
        },
        5s);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("this process has started threads"), std::string::npos)
        << result.error().message;
    EXPECT_EQ(test::forks_so_far(), forks_before);
    EXPECT_FALSE(ran);
}

TEST(ForkedWithDeadline, ReturnsWhatTheChildReturned) {
    if (!forked_child_may_run_library_code()) GTEST_SKIP() << "an earlier test in this process started a thread";
    auto result = run_forked_with_deadline(
        [](const StepNote& note) {
            note("step one");
            return std::string(100000, 'x') + "end";  // more than a pipe buffer
        },
        5s);
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result->size(), 100003U);
    EXPECT_EQ(result->substr(100000), "end");
}

TEST(ForkedWithDeadline, AStalledReadEndsAtTheDeadlineAndNamesTheStep) {
    if (!forked_child_may_run_library_code()) GTEST_SKIP() << "an earlier test in this process started a thread";
    // A FIFO with no writer: open(O_RDONLY) blocks forever, as a read of a
    // hung device does. launchguard's own readers refuse FIFOs; this body
    // does not, on purpose.
    test::TempTree tree;
    const std::string fifo = tree.path("stall");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    auto result = run_forked_with_deadline(
        [&](const StepNote& note) {
            note("reading " + fifo);
            int fd = ::open(fifo.c_str(), O_RDONLY);
            char c = 0;
            (void)!::read(fd, &c, 1);
            return std::string("never");
        },
        300ms);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("did not finish within 0.3 s"), std::string::npos) << result.error().message;
    EXPECT_NE(result.error().message.find("while reading " + fifo), std::string::npos) << result.error().message;
    EXPECT_LT(took, 2s) << "the deadline must end the wait";
}

TEST(ForkedWithDeadline, ACrashIsAnErrorNotAResult) {
    if (!forked_child_may_run_library_code()) GTEST_SKIP() << "an earlier test in this process started a thread";
    // Also under AddressSanitizer (scripts/sanitize.sh), whose SIGSEGV
    // handler the child must not keep: it would report and abort instead.
    auto result = run_forked_with_deadline(
        [](const StepNote& note) {
            note("probing");
            std::raise(SIGSEGV);
            return std::string("unreachable");
        },
        5s);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("Segmentation fault"), std::string::npos) << result.error().message;
    EXPECT_NE(result.error().message.find("while probing"), std::string::npos) << result.error().message;
}

TEST(ForkedWithDeadline, AnExceptionIsAnError) {
    if (!forked_child_may_run_library_code()) GTEST_SKIP() << "an earlier test in this process started a thread";
    auto result =
        run_forked_with_deadline([](const StepNote&) -> std::string { throw std::runtime_error("boom"); }, 5s);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("without a result"), std::string::npos) << result.error().message;
}

TEST(RunProgram, ExitCodeAndOutput) {
    auto ok = run_program({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, {}, 5s);
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_EQ(ok->exit_code, 3);
    EXPECT_NE(ok->output.find("out"), std::string::npos);
    EXPECT_NE(ok->output.find("err"), std::string::npos);
}

TEST(RunProgram, ArgumentsAreNotInterpretedByAShell) {
    auto echoed = run_program({"/bin/echo", "Reason=launchguard: hw.pcie-degraded; rm -rf /", "$HOME"}, {}, 5s);
    ASSERT_TRUE(echoed.ok());
    EXPECT_EQ(echoed->output, "Reason=launchguard: hw.pcie-degraded; rm -rf / $HOME\n");
}

TEST(RunProgram, ExtraEnvironmentReachesTheProgram) {
    auto env = run_program({"/bin/sh", "-c", "echo \"$SLURM_CONF\""}, {"SLURM_CONF=/tmp/x/slurm.conf"}, 5s);
    ASSERT_TRUE(env.ok());
    EXPECT_EQ(env->output, "/tmp/x/slurm.conf\n");
}

TEST(RunProgram, MissingOrRelativeProgramIsAnError) {
    auto missing = run_program({"/nonexistent/scontrol", "show", "node"}, {}, 5s);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("/nonexistent/scontrol"), std::string::npos);
    EXPECT_NE(missing.error().message.find("No such file"), std::string::npos) << missing.error().message;
    EXPECT_FALSE(run_program({"scontrol"}, {}, 5s).ok());
    EXPECT_FALSE(run_program({}, {}, 5s).ok());
}

TEST(RunProgram, AHangingProgramIsKilledAtTheDeadline) {
    const auto start = std::chrono::steady_clock::now();
    auto hung = run_program({"/bin/sleep", "30"}, {}, 200ms);
    ASSERT_FALSE(hung.ok());
    EXPECT_NE(hung.error().message.find("did not finish within 0.2 s"), std::string::npos) << hung.error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(RunProgram, TheProgramGetsSigpipeAtItsDefault) {
    // The CLI ignores SIGPIPE for itself; an ignored signal would stay
    // ignored in the program it executes (scontrol) unless reset.
    auto* previous = std::signal(SIGPIPE, SIG_IGN);
    auto status = run_program({"/bin/cat", "/proc/self/status"}, {}, 5s);
    std::signal(SIGPIPE, previous);
    ASSERT_TRUE(status.ok()) << status.error().message;
    const auto at = status->output.find("SigIgn:\t");
    ASSERT_NE(at, std::string::npos) << status->output;
    const unsigned long long ignored = std::stoull(status->output.substr(at + 8, 16), nullptr, 16);
    EXPECT_EQ(ignored & (1ULL << (SIGPIPE - 1)), 0ULL) << status->output.substr(at, 24);
}

}  // namespace
}  // namespace launchguard
