#include "engine/engine.h"
#include "engine/rule_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "rules/rule.h"
#include "support/launch_fixture.h"
#include "support/rule_harness.h"

namespace launchguard {
namespace {

// A rule whose behaviour the test dictates.
class ScriptedRule final : public Rule {
public:
    ScriptedRule(RuleInfo info, std::vector<RemediationOp> ops, bool throws = false, bool fix_or_block = false)
        : info_(info), ops_(std::move(ops)), throws_(throws), fix_or_block_(fix_or_block) {}
    [[nodiscard]] const RuleInfo& info() const override { return info_; }
    void evaluate(const RuleInput& /*in*/, RuleOutput& out) const override {
        if (throws_) throw std::runtime_error("boom");
        Finding& f = out.fire(std::string(info_.id) + " fired");
        f.remediation = ops_;
        f.fix_or_block = fix_or_block_;
    }

private:
    RuleInfo info_;
    std::vector<RemediationOp> ops_;
    bool throws_;
    bool fix_or_block_;
};

RuleInfo info(std::string_view id, Action action, unsigned scopes = kScopeLive | kScopeCli) {
    return RuleInfo{.id = id,
                    .title = "t",
                    .default_action = action,
                    .severity = Severity::error,
                    .scopes = scopes,
                    .checks = "",
                    .why = "",
                    .evidence = "",
                    .fix = ""};
}

class EngineTest : public ::testing::Test {
protected:
    LaunchContext ctx = testing::launch_from_yaml("env: {}");
    Profile profile = testing::profile_from_yaml("name: engine-test\n");
    ScriptedRule blocker{info("test.blocker", Action::block), {RemediationOp::manual_step("fix it")}};
    ScriptedRule patcher{info("test.patcher", Action::patch), {RemediationOp::set_env("NCCL_X", "4")}};
    ScriptedRule mounter{info("test.mounter", Action::patch), {RemediationOp::mount_file("/h", "/c")}};
    ScriptedRule warner{info("test.warner", Action::warn), {RemediationOp::unset_env("NCCL_Y")}};
    ScriptedRule node_only{info("test.node", Action::block, kScopeNode), {}};
    ScriptedRule thrower{info("test.thrower", Action::block), {}, true};

    Report run(Mode mode, std::vector<const Rule*> rules,
               std::vector<RemediationOp::Kind> applicable = all_remediation_kinds(), unsigned scopes = kScopeLive) {
        EvaluationOptions options;
        options.mode = mode;
        options.scopes = scopes;
        options.applicable = std::move(applicable);
        return evaluate(ctx, profile, options, rules);
    }
};

TEST_F(EngineTest, EnforceBlocksOnABlockingFinding) {
    Report r = run(Mode::enforce, {&blocker, &warner});
    EXPECT_EQ(r.decision, Decision::block);
    ASSERT_EQ(r.findings.size(), 2U);
    EXPECT_EQ(r.findings[0].action, Action::block);
    EXPECT_EQ(r.findings[1].action, Action::warn);
    EXPECT_TRUE(r.patch.empty());
}

TEST_F(EngineTest, EnforcePatchesWhatTheFrontEndCanApply) {
    Report r = run(Mode::enforce, {&patcher, &warner});
    EXPECT_EQ(r.decision, Decision::patch);
    ASSERT_EQ(r.patch.size(), 1U);
    EXPECT_EQ(r.patch[0].name, "NCCL_X");
    EXPECT_EQ(r.findings[0].action, Action::patch);
}

TEST_F(EngineTest, EnforceBlocksAPatchTheFrontEndCannotApply) {
    // SPANK can set env but cannot mount a file into the container.
    Report r = run(Mode::enforce, {&patcher, &mounter}, {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env});
    EXPECT_EQ(r.decision, Decision::block);
    EXPECT_EQ(r.findings[0].action, Action::patch);
    EXPECT_EQ(r.findings[1].action, Action::block);
}

TEST_F(EngineTest, PatchModeDoesNotBlockOrdinaryFindings) {
    Report r = run(Mode::patch, {&blocker, &patcher, &mounter}, {RemediationOp::Kind::set_env});
    EXPECT_EQ(r.decision, Decision::patch);
    EXPECT_EQ(r.findings[0].action, Action::warn);
    EXPECT_EQ(r.findings[1].action, Action::patch);
    EXPECT_EQ(r.findings[2].action, Action::warn);
}

TEST_F(EngineTest, PatchModeBlocksAFixOrBlockFindingItCannotFix) {
    // A host topology file that cannot reach the container: the plugin can
    // set the variable but not mount the file, and a warning would let the
    // launch run silently degraded.
    ScriptedRule unreachable{info("test.unreachable", Action::block),
                             {RemediationOp::mount_file("/h", "/c"), RemediationOp::set_env("NCCL_TOPO_FILE", "/c")},
                             false,
                             true};
    ScriptedRule pointable{
        info("test.pointable", Action::block), {RemediationOp::set_env("NCCL_TOPO_FILE", "/c")}, false, true};
    const std::vector<RemediationOp::Kind> env_only = {RemediationOp::Kind::set_env, RemediationOp::Kind::unset_env};

    Report blocked = run(Mode::patch, {&unreachable, &blocker}, env_only);
    EXPECT_EQ(blocked.decision, Decision::block);
    EXPECT_EQ(blocked.findings[0].action, Action::block);
    EXPECT_EQ(blocked.findings[1].action, Action::warn);  // an ordinary blocking finding still only warns
    EXPECT_TRUE(blocked.patch.empty());

    Report patched = run(Mode::patch, {&pointable}, env_only);
    EXPECT_EQ(patched.decision, Decision::patch);
    EXPECT_EQ(patched.findings[0].action, Action::patch);
    ASSERT_EQ(patched.patch.size(), 1U);
    EXPECT_EQ(patched.patch[0].value, "/c");

    // Enforce and warn keep their meaning.
    EXPECT_EQ(run(Mode::enforce, {&pointable}, env_only).findings[0].action, Action::block);
    EXPECT_EQ(run(Mode::warn, {&unreachable}, env_only).decision, Decision::allow);
}

TEST_F(EngineTest, WarnModeChangesNothing) {
    Report r = run(Mode::warn, {&blocker, &patcher});
    EXPECT_EQ(r.decision, Decision::allow);
    EXPECT_TRUE(r.patch.empty());
    for (const auto& f : r.findings) EXPECT_EQ(f.action, Action::warn);
    EXPECT_EQ(r.findings.size(), 2U);
}

TEST_F(EngineTest, OffModeEvaluatesNothing) {
    Report r = run(Mode::off, {&blocker});
    EXPECT_EQ(r.decision, Decision::allow);
    EXPECT_TRUE(r.findings.empty());
    EXPECT_EQ(r.rules_evaluated, 0);
}

TEST_F(EngineTest, ProfileOverridesTheDefaultAction) {
    profile.actions["test.blocker"] = Action::warn;
    profile.actions["test.patcher"] = Action::off;
    Report r = run(Mode::enforce, {&blocker, &patcher});
    EXPECT_EQ(r.decision, Decision::allow);
    ASSERT_EQ(r.findings.size(), 1U);
    EXPECT_EQ(r.findings[0].rule, "test.blocker");
    EXPECT_EQ(r.findings[0].action, Action::warn);
    EXPECT_EQ(r.rules_evaluated, 1);  // an "off" rule is not even run
}

TEST_F(EngineTest, ScopesSelectRules) {
    EXPECT_TRUE(run(Mode::enforce, {&node_only}).findings.empty());
    EXPECT_EQ(run(Mode::enforce, {&node_only}, all_remediation_kinds(), kScopeNode).decision, Decision::block);
}

TEST_F(EngineTest, ARuleThatThrowsBecomesUnknownNotACrash) {
    Report r = run(Mode::enforce, {&thrower, &warner});
    EXPECT_EQ(r.decision, Decision::allow);
    ASSERT_EQ(r.unknowns.size(), 1U);
    EXPECT_EQ(r.unknowns[0].rule, "test.thrower");
    EXPECT_NE(r.unknowns[0].reason.find("boom"), std::string::npos);
}

TEST_F(EngineTest, PatchOperationsAreDeduplicated) {
    ScriptedRule shm_a{info("test.shm-a", Action::patch), {RemediationOp::shm(1ULL << 30)}};
    ScriptedRule shm_b{info("test.shm-b", Action::patch), {RemediationOp::shm(2ULL << 30)}};
    ScriptedRule patcher2{info("test.patcher2", Action::patch), {RemediationOp::set_env("NCCL_X", "4")}};
    Report r = run(Mode::enforce, {&shm_a, &shm_b, &patcher, &patcher2});
    ASSERT_EQ(r.patch.size(), 2U);
    EXPECT_EQ(r.patch[0].bytes, 2ULL << 30);
    EXPECT_EQ(r.patch[1].name, "NCCL_X");
}

TEST(EngineModes, ParseAndPrint) {
    EXPECT_EQ(parse_mode("patch"), Mode::patch);
    EXPECT_FALSE(parse_mode("audit").has_value());
    EXPECT_EQ(to_string(Decision::block), "block");
}

}  // namespace
}  // namespace launchguard

namespace launchguard {
namespace {

TEST_F(EngineTest, FixBlockingPatchesABlockTheFrontEndCanFullyRemediate) {
    ScriptedRule mount_block{info("test.mount-block", Action::block),
                             {RemediationOp::mount_file("/h", "/c"), RemediationOp::set_env("NCCL_TOPO_FILE", "/c")}};
    EvaluationOptions options;
    options.mode = Mode::enforce;
    options.scopes = kScopeLive;
    options.applicable = {RemediationOp::Kind::set_env, RemediationOp::Kind::mount_file};
    options.fix_blocking = true;
    Report fixed = evaluate(ctx, profile, options, {&mount_block, &blocker});
    EXPECT_EQ(fixed.findings[0].action, Action::patch);
    EXPECT_EQ(fixed.findings[1].action, Action::block);  // a manual step cannot be applied
    EXPECT_EQ(fixed.patch.size(), 2U);

    options.fix_blocking = false;
    Report kept = evaluate(ctx, profile, options, {&mount_block});
    EXPECT_EQ(kept.findings[0].action, Action::block);
    EXPECT_TRUE(kept.patch.empty());
}

Finding finding_of(std::string_view rule, Action action, std::vector<RemediationOp> ops = {}) {
    Finding finding;
    finding.rule = std::string(rule);
    finding.action = action;
    finding.remediation = std::move(ops);
    return finding;
}

// A Slurm step's tasks share the rules that read nothing per task and judge
// the per-task ones (the CPU mask, the GPU binding) each.
TEST(PerTaskRules, ThePerTaskRulesAreThoseThatReadTheTasksCpuMaskOrGpus) {
    std::vector<std::string> per_task;
    for (const Rule* rule : all_rules()) {
        if (is_per_task_rule(rule->info().id)) per_task.emplace_back(rule->info().id);
    }
    EXPECT_EQ(per_task, (std::vector<std::string>{"cpu.affinity-off-gpu", "cpu.affinity-partial", "cpu.bind-by-id",
                                                  "power.governor", "power.turbo-off"}));
    const Profile profile = testing::profile_from_yaml("name: split\n");
    EvaluationOptions options;
    options.scopes = kScopeLive;
    const auto all = selected_rule_ids(profile, options);
    options.inputs = TaskInputs::per_task;
    EXPECT_EQ(selected_rule_ids(profile, options), per_task);
    options.inputs = TaskInputs::shared;
    const auto shared = selected_rule_ids(profile, options);
    EXPECT_EQ(shared.size() + per_task.size(), all.size());
    for (const auto& id : per_task) EXPECT_EQ(std::count(shared.begin(), shared.end(), id), 0) << id;
}

TEST(PerTaskRules, APartKeepsItsRulesFindingsAndSettlesItsOwnDecision) {
    Report full;
    full.decision = Decision::block;
    full.findings = {
        finding_of("net.qps-low", Action::patch, {RemediationOp::set_env("NCCL_IB_QPS_PER_CONNECTION", "4")}),
        finding_of("cpu.affinity-off-gpu", Action::block)};
    full.unknowns = {{"power.governor", "no cpufreq"}, {"nccl", "could not resolve"}};

    const Report shared = part_of(full, TaskInputs::shared);
    ASSERT_EQ(shared.findings.size(), 1U);
    EXPECT_EQ(shared.findings[0].rule, "net.qps-low");
    EXPECT_EQ(shared.decision, Decision::patch) << "the per-task block is not the other tasks'";
    ASSERT_EQ(shared.patch.size(), 1U);
    EXPECT_EQ(shared.patch[0].name, "NCCL_IB_QPS_PER_CONNECTION");
    ASSERT_EQ(shared.unknowns.size(), 1U);
    EXPECT_EQ(shared.unknowns[0].rule, "nccl");

    const Report own = part_of(full, TaskInputs::per_task);
    ASSERT_EQ(own.findings.size(), 1U);
    EXPECT_EQ(own.decision, Decision::block);
    EXPECT_TRUE(own.patch.empty());
    EXPECT_EQ(own.unknowns.size(), 1U);

    full.findings.pop_back();
    EXPECT_EQ(part_of(full, TaskInputs::per_task).decision, Decision::allow) << "nothing per task fired";
    EXPECT_EQ(part_of(full, TaskInputs::any).decision, Decision::patch);
}

}  // namespace
}  // namespace launchguard
