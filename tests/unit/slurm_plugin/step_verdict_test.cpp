#include "step_verdict.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>

namespace launchguard::slurm {
namespace {

using namespace std::chrono_literals;

VerdictInputs inputs_over(const Environment& env) {
    VerdictInputs inputs;
    inputs.mount_namespace = MountNamespace{1, 100};
    inputs.root_dev = 2;
    inputs.root_ino = 3;
    inputs.euid = 1000;
    inputs.egid = 1000;
    inputs.groups = {1000, 27};
    inputs.cpu_mask = std::string("\x03", 1);
    inputs.env = &env;
    return inputs;
}

TaskAnswer patching_answer() {
    TaskAnswer answer;
    answer.judged = true;
    answer.log_info = {"decision hook=task_init job=7 step=0 node=n1 decision=patch"};
    answer.tell_user = {"PATCH nccl.x: y\nprofile p, mode patch: environment patched, launch continues\n"};
    answer.env_patch = {{"NCCL_IB_QPS_PER_CONNECTION", "4"}, {"NCCL_DEBUG", std::nullopt}, {"EMPTY", ""}};
    return answer;
}

TEST(StepVerdictKey, TheTasksOfAStepShareItWhateverTheirRank) {
    const Environment first{{"NCCL_DEBUG", "WARN"},
                            {"SLURM_PROCID", "0"},
                            {"SLURM_LOCALID", "0"},
                            {"SLURM_TASK_PID", "100"},
                            {"PMIX_RANK", "0"}};
    const Environment later{{"NCCL_DEBUG", "WARN"},
                            {"SLURM_PROCID", "7"},
                            {"SLURM_LOCALID", "7"},
                            {"SLURM_TASK_PID", "107"},
                            {"PMIX_RANK", "7"}};
    EXPECT_EQ(verdict_key(inputs_over(first)), verdict_key(inputs_over(later)));
}

TEST(StepVerdictKey, WhatTheCheckReadsMakesAnotherKey) {
    const Environment env{{"NCCL_DEBUG", "WARN"}, {"CUDA_VISIBLE_DEVICES", "0"}};
    const VerdictKey key = verdict_key(inputs_over(env));

    const Environment other_gpu{{"NCCL_DEBUG", "WARN"}, {"CUDA_VISIBLE_DEVICES", "1"}};
    EXPECT_NE(verdict_key(inputs_over(other_gpu)), key) << "GPU binding";
    const Environment more{{"NCCL_DEBUG", "WARN"}, {"CUDA_VISIBLE_DEVICES", "0"}, {"NCCL_IB_HCA", "mlx5_0"}};
    EXPECT_NE(verdict_key(inputs_over(more)), key) << "another variable";
    // A name and value moved across the '=' are another environment.
    const Environment a{{"AB", "C"}};
    const Environment b{{"A", "BC"}};
    EXPECT_NE(verdict_key(inputs_over(a)), verdict_key(inputs_over(b)));

    auto changed = [&](auto change) {
        VerdictInputs inputs = inputs_over(env);
        change(inputs);
        return verdict_key(inputs);
    };
    EXPECT_NE(changed([](VerdictInputs& i) { i.cpu_mask = std::string("\x01", 1); }), key) << "CPU mask";
    EXPECT_NE(changed([](VerdictInputs& i) { i.mount_namespace = MountNamespace{1, 101}; }), key) << "namespace";
    EXPECT_NE(changed([](VerdictInputs& i) { i.root_ino = 4; }), key) << "container root";
    EXPECT_NE(changed([](VerdictInputs& i) { i.euid = 1001; }), key) << "user";
    EXPECT_NE(changed([](VerdictInputs& i) { i.egid = 1001; }), key) << "group";
    EXPECT_NE(changed([](VerdictInputs& i) { i.groups = {1000}; }), key) << "groups";
    EXPECT_NE(changed([](VerdictInputs& i) { i.limits = "x"; }), key) << "limits";
    EXPECT_EQ(changed([](VerdictInputs&) {}), key);
}

TEST(StepVerdictKey, ThisProcessHasInputs) {
    const Environment env{{"A", "1"}};
    auto inputs = current_verdict_inputs(env);
    ASSERT_TRUE(inputs.has_value());
    EXPECT_EQ(inputs->euid, ::geteuid());
    EXPECT_EQ(verdict_key(*inputs), verdict_key(*current_verdict_inputs(env)));
}

TEST(SharedAnswer, RoundTripsEveryField) {
    const TaskAnswer answer = patching_answer();
    auto bytes = encode_shared_answer(answer, SharedVerdicts::kAnswerBytes);
    ASSERT_TRUE(bytes.has_value());
    const TaskAnswer back = decode_shared_answer(*bytes);
    EXPECT_TRUE(back.judged);
    EXPECT_FALSE(back.block);
    EXPECT_EQ(back.log_info, answer.log_info);
    EXPECT_EQ(back.tell_user, answer.tell_user);
    EXPECT_EQ(back.env_patch, answer.env_patch);

    TaskAnswer blocking;
    blocking.judged = true;
    blocking.block = true;
    blocking.log_error = {"pyxis listed after launchguard"};
    const TaskAnswer blocked = decode_shared_answer(*encode_shared_answer(blocking, 1024));
    EXPECT_TRUE(blocked.block);
    EXPECT_EQ(blocked.log_error, blocking.log_error);
    EXPECT_FALSE(encode_shared_answer(answer, 16).has_value()) << "an answer too large is not shared";
}

class SharedVerdictsTest : public ::testing::Test {
protected:
    void SetUp() override {
        table_ = SharedVerdicts::map_shared();
        ASSERT_NE(table_, nullptr);
    }
    SharedVerdicts* table_ = nullptr;
    const VerdictKey key_{1, 2};
};

TEST_F(SharedVerdictsTest, TheFirstTaskJudgesAndALaterOneReusesItsAnswer) {
    auto first = table_->find_or_claim(key_, 1s);
    EXPECT_EQ(first.outcome, SharedVerdicts::Outcome::judge);
    ASSERT_TRUE(first.slot.has_value());
    table_->publish(*first.slot, patching_answer());

    auto later = table_->find_or_claim(key_, 1s);
    EXPECT_EQ(later.outcome, SharedVerdicts::Outcome::reuse);
    EXPECT_EQ(later.answer.env_patch, patching_answer().env_patch);

    auto other = table_->find_or_claim(VerdictKey{1, 3}, 1s);
    EXPECT_EQ(other.outcome, SharedVerdicts::Outcome::judge) << "another key is judged in full";
    EXPECT_TRUE(other.slot.has_value());
}

// The tasks are processes forked after the table was mapped: a task that
// arrives while the first is judging waits for its answer.
TEST_F(SharedVerdictsTest, ATaskForkedAfterTheMapWaitsForTheAnswerBeingJudged) {
    auto first = table_->find_or_claim(key_, 1s);
    ASSERT_TRUE(first.slot.has_value());
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto later = table_->find_or_claim(key_, 10s);
        const bool ok = later.outcome == SharedVerdicts::Outcome::reuse && later.answer.env_patch.size() == 3;
        ::_exit(ok ? 0 : 1);
    }
    ::usleep(50 * 1000);
    table_->publish(*first.slot, patching_answer());
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(SharedVerdictsTest, AWaitIsBoundedAndAnAbandonedKeyIsJudgedInFull) {
    auto first = table_->find_or_claim(key_, 1s);
    ASSERT_TRUE(first.slot.has_value());
    const auto start = std::chrono::steady_clock::now();
    auto stuck = table_->find_or_claim(key_, 200ms);
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(stuck.outcome, SharedVerdicts::Outcome::timed_out);
    EXPECT_GE(waited, 200ms);
    EXPECT_LT(waited, 5s);
    // node-read-timeout=0: never waits, judges in full without sharing.
    auto unbounded = table_->find_or_claim(key_, 0ms);
    EXPECT_EQ(unbounded.outcome, SharedVerdicts::Outcome::judge);
    EXPECT_FALSE(unbounded.slot.has_value());

    table_->abandon(*first.slot);
    auto after = table_->find_or_claim(key_, 1s);
    EXPECT_EQ(after.outcome, SharedVerdicts::Outcome::judge);
    EXPECT_FALSE(after.slot.has_value()) << "a key whose first task could not be checked is not shared";
}

TEST_F(SharedVerdictsTest, AnAnswerThatIsNoVerdictIsNotShared) {
    auto first = table_->find_or_claim(key_, 1s);
    ASSERT_TRUE(first.slot.has_value());
    TaskAnswer unchecked;
    unchecked.log_error = {"cannot inspect the task"};
    table_->publish(*first.slot, unchecked);
    EXPECT_EQ(table_->find_or_claim(key_, 1s).outcome, SharedVerdicts::Outcome::judge);
}

TEST_F(SharedVerdictsTest, AFullTableJudgesInFullWithoutWaiting) {
    for (std::uint64_t i = 0; i < SharedVerdicts::kSlots; ++i)
        ASSERT_TRUE(table_->find_or_claim(VerdictKey{9, i}, 1s).slot.has_value());
    auto extra = table_->find_or_claim(key_, 1s);
    EXPECT_EQ(extra.outcome, SharedVerdicts::Outcome::judge);
    EXPECT_FALSE(extra.slot.has_value());
}

}  // namespace
}  // namespace launchguard::slurm
