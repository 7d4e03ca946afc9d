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

// The CPU mask and the GPU binding are judged by each task (the per-task
// rules), so tasks bound to different CPUs and GPUs share the rest.
TEST(StepVerdictKey, TheTasksOfAStepShareItWhateverTheirGpuBinding) {
    const Environment first{{"NCCL_DEBUG", "WARN"},
                            {"CUDA_VISIBLE_DEVICES", "0"},
                            {"ROCR_VISIBLE_DEVICES", "0"},
                            {"GPU_DEVICE_ORDINAL", "0"}};
    const Environment later{{"NCCL_DEBUG", "WARN"},
                            {"CUDA_VISIBLE_DEVICES", "1"},
                            {"ROCR_VISIBLE_DEVICES", "1"},
                            {"GPU_DEVICE_ORDINAL", "1"}};
    EXPECT_EQ(verdict_key(inputs_over(first)), verdict_key(inputs_over(later)));
}

TEST(StepVerdictKey, WhatTheSharedRulesReadMakesAnotherKey) {
    const Environment env{{"NCCL_DEBUG", "WARN"}, {"SLURM_STEP_GPUS", "0"}};
    const VerdictKey key = verdict_key(inputs_over(env));

    const Environment other_step_gpus{{"NCCL_DEBUG", "WARN"}, {"SLURM_STEP_GPUS", "1"}};
    EXPECT_NE(verdict_key(inputs_over(other_step_gpus)), key) << "the step's GPUs";
    const Environment more{{"NCCL_DEBUG", "WARN"}, {"SLURM_STEP_GPUS", "0"}, {"NCCL_IB_HCA", "mlx5_0"}};
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

TaskAnswer clean_answer() {
    TaskAnswer answer;
    answer.judged = true;
    answer.log_info = {"decision hook=task_init job=7 step=0 node=n1 decision=allow"};
    return answer;
}

// A per-task rule (cpu.affinity-off-gpu) that fired on this task alone.
TaskAnswer per_task_finding(bool block) {
    TaskAnswer answer;
    answer.judged = true;
    answer.block = block;
    answer.log_info = {"decision hook=task_init job=7 step=0 node=n1 decision=block blocked=cpu.affinity-off-gpu"};
    answer.tell_user = {"BLOCK cpu.affinity-off-gpu: CPU mask 0 shares no CPU with GPU 0\n"};
    return answer;
}

TaskAnswer nothing_per_task() {
    TaskAnswer answer;
    answer.judged = true;
    return answer;
}

TEST(CombinedVerdict, APerTaskFindingBlocksItsTaskAfterACleanSharedVerdict) {
    const TaskAnswer task1 = combine_verdicts(clean_answer(), per_task_finding(true), /*first_task=*/false);
    EXPECT_TRUE(task1.judged);
    EXPECT_TRUE(task1.block);
    EXPECT_EQ(task1.tell_user, per_task_finding(true).tell_user) << "told by the task it fired for";
    EXPECT_EQ(task1.log_info, per_task_finding(true).log_info) << "the shared line is the first task's";

    const TaskAnswer warned = combine_verdicts(clean_answer(), per_task_finding(false), false);
    EXPECT_FALSE(warned.block);
    EXPECT_EQ(warned.tell_user, per_task_finding(false).tell_user);
}

TEST(CombinedVerdict, AnotherTasksPerTaskFindingStaysWithThatTask) {
    // Task 0 judged everything: its per-task finding blocks it; what it
    // publishes for the others is the shared part alone (clean here).
    const TaskAnswer task0 = combine_verdicts(clean_answer(), per_task_finding(true), /*first_task=*/true);
    EXPECT_TRUE(task0.block);
    EXPECT_EQ(task0.log_info.size(), 2U) << "the shared line and its own";
    const TaskAnswer task1 = combine_verdicts(clean_answer(), nothing_per_task(), /*first_task=*/false);
    EXPECT_TRUE(task1.judged);
    EXPECT_FALSE(task1.block);
    EXPECT_TRUE(task1.log_info.empty());
    EXPECT_TRUE(task1.tell_user.empty());
}

TEST(CombinedVerdict, BothPatchesApplyUnlessEitherPartBlocks) {
    TaskAnswer own = nothing_per_task();
    own.env_patch = {{"NCCL_OWN", "1"}};
    const TaskAnswer patched = combine_verdicts(patching_answer(), own, true);
    ASSERT_EQ(patched.env_patch.size(), 4U);
    EXPECT_EQ(patched.env_patch.front().name, "NCCL_IB_QPS_PER_CONNECTION");
    EXPECT_EQ(patched.env_patch.back().name, "NCCL_OWN");
    EXPECT_EQ(patched.tell_user, patching_answer().tell_user);

    EXPECT_TRUE(combine_verdicts(patching_answer(), per_task_finding(true), false).env_patch.empty());
    TaskAnswer shared_block = clean_answer();
    shared_block.block = true;
    const TaskAnswer blocked = combine_verdicts(shared_block, own, false);
    EXPECT_TRUE(blocked.block);
    EXPECT_TRUE(blocked.env_patch.empty());
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
