// What node-check --slurm does to its node: every combination of the node's
// state (as scontrol prints it) and the check's verdict. NHC's rule: only
// launchguard's own drains are resumed; an administrator's drain and a DOWN
// node are never touched.
#include <gtest/gtest.h>

#include "node/slurm_node.h"

namespace launchguard {
namespace {

// The shape of `scontrol show node NAME --oneliner` (Slurm 22.05), cut.
std::string oneliner(const std::string& state, const std::string& reason = "") {
    std::string line =
        "NodeName=gpu017 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=2 CPULoad=0.10 "
        "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 "
        "NodeHostName=gpu017 Version=22.05.8 OS=Linux 6.1.0 #1 SMP RealMemory=1000 AllocMem=0 "
        "FreeMem=500 Sockets=2 Boards=1 State=" +
        state +
        " ThreadsPerCore=1 TmpDisk=0 Weight=1 "
        "Owner=N/A MCS_label=N/A Partitions=lgtest BootTime=2026-11-30T14:00:00 "
        "SlurmdStartTime=2026-11-30T16:00:00 LastBusyTime=2026-11-30T16:01:00 CfgTRES=cpu=2 "
        "AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s "
        "ExtSensorsWatts=0 ExtSensorsTemp=n/s";
    if (!reason.empty()) line += " Reason=" + reason + " [root@2026-11-30T16:05:00]";
    return line + "\n";
}

SlurmNodeState parsed(const std::string& text) {
    auto state = parse_scontrol_node(text);
    EXPECT_TRUE(state.ok()) << text;
    return state ? state.value() : SlurmNodeState{};
}

NodeVerdict verdict(NodeHealth health, const std::string& blocking_rule = "hw.pcie-degraded") {
    NodeVerdict v;
    v.health = health;
    v.rules.push_back({"power.governor", health == NodeHealth::warning ? RuleOutcome::warn : RuleOutcome::pass, ""});
    v.rules.push_back({blocking_rule, health == NodeHealth::degraded ? RuleOutcome::block : RuleOutcome::pass, ""});
    if (health == NodeHealth::unknown) v.problem = "stalled";
    return v;
}

TEST(SlurmNode, ParsesStateFlagsAndReason) {
    SlurmNodeState idle = parsed(oneliner("IDLE"));
    EXPECT_EQ(idle.flags, std::vector<std::string>{"IDLE"});
    EXPECT_EQ(idle.reason, "");

    SlurmNodeState drained = parsed(oneliner("IDLE+DRAIN", "launchguard: hw.pcie-degraded +1"));
    EXPECT_EQ(drained.flags, (std::vector<std::string>{"IDLE", "DRAIN"}));
    EXPECT_EQ(drained.reason, "launchguard: hw.pcie-degraded +1");  // the [user@time] stamp is not part of it
    EXPECT_TRUE(drained.drained_by_launchguard());

    SlurmNodeState admin = parsed(oneliner("MIXED+DRAIN", "bad DIMM, ticket 4711"));
    EXPECT_EQ(admin.reason, "bad DIMM, ticket 4711");
    EXPECT_FALSE(admin.drained_by_launchguard());

    // The reason prefix alone is not a drain (a DOWN node keeps its reason).
    SlurmNodeState down = parsed(oneliner("DOWN+NOT_RESPONDING", "launchguard: hw.inventory"));
    EXPECT_FALSE(down.drained_by_launchguard());
    EXPECT_TRUE(down.has("DOWN"));
}

TEST(SlurmNode, UnparsableOutputIsAnError) {
    EXPECT_FALSE(parse_scontrol_node("").ok());
    EXPECT_FALSE(parse_scontrol_node("Node gpu017 not found\n").ok());
    // "SubState=" is not "State=".
    EXPECT_FALSE(parse_scontrol_node("NodeName=x SubState=IDLE\n").ok());
}

TEST(SlurmNode, DegradedNodeIsDrainedWithTheRuleAsReason) {
    for (const char* state : {"IDLE", "ALLOCATED", "MIXED", "IDLE+COMPLETING"}) {
        SlurmNodePlan plan = plan_slurm_node(parsed(oneliner(state)), verdict(NodeHealth::degraded), OnUnknown::keep);
        EXPECT_EQ(plan.action, SlurmNodeAction::drain) << state;
        EXPECT_EQ(plan.reason, "launchguard: hw.pcie-degraded") << state;
        EXPECT_EQ(scontrol_update_args("gpu017", plan),
                  (std::vector<std::string>{"update", "NodeName=gpu017", "State=DRAIN",
                                            "Reason=launchguard: hw.pcie-degraded"}));
    }
}

TEST(SlurmNode, HealthyNodeIsLeftAlone) {
    for (NodeHealth health : {NodeHealth::healthy, NodeHealth::warning}) {
        SlurmNodePlan plan = plan_slurm_node(parsed(oneliner("IDLE")), verdict(health), OnUnknown::keep);
        EXPECT_EQ(plan.action, SlurmNodeAction::none);
        EXPECT_TRUE(scontrol_update_args("gpu017", plan).empty());
    }
}

TEST(SlurmNode, OwnDrainIsResumedOnceTheCheckPasses) {
    const SlurmNodeState ours = parsed(oneliner("IDLE+DRAIN", "launchguard: hw.pcie-degraded"));
    for (NodeHealth health : {NodeHealth::healthy, NodeHealth::warning}) {
        SlurmNodePlan plan = plan_slurm_node(ours, verdict(health), OnUnknown::keep);
        EXPECT_EQ(plan.action, SlurmNodeAction::resume);
        EXPECT_EQ(scontrol_update_args("gpu017", plan),
                  (std::vector<std::string>{"update", "NodeName=gpu017", "State=RESUME"}));
    }
    // Still degraded for the same rule: nothing to do.
    EXPECT_EQ(plan_slurm_node(ours, verdict(NodeHealth::degraded), OnUnknown::keep).action, SlurmNodeAction::none);
    // Degraded for another rule now: the reason is updated.
    SlurmNodePlan other = plan_slurm_node(ours, verdict(NodeHealth::degraded, "net.ib-port-degraded"), OnUnknown::keep);
    EXPECT_EQ(other.action, SlurmNodeAction::drain);
    EXPECT_EQ(other.reason, "launchguard: net.ib-port-degraded");
}

TEST(SlurmNode, AnAdministratorsDrainIsNeverTouched) {
    const SlurmNodeState admin = parsed(oneliner("IDLE+DRAIN", "memory errors - replace DIMM B2"));
    for (NodeHealth health : {NodeHealth::healthy, NodeHealth::warning, NodeHealth::degraded, NodeHealth::unknown}) {
        for (OnUnknown on_unknown : {OnUnknown::keep, OnUnknown::drain}) {
            SlurmNodePlan plan = plan_slurm_node(admin, verdict(health), on_unknown);
            EXPECT_EQ(plan.action, SlurmNodeAction::none) << to_string(health);
            EXPECT_NE(plan.why.find("memory errors"), std::string::npos) << plan.why;
        }
    }
    // A reason that merely mentions launchguard further in is not launchguard's.
    const SlurmNodeState mentions = parsed(oneliner("IDLE+DRAIN", "checked with launchguard: fine, but fan noise"));
    EXPECT_EQ(plan_slurm_node(mentions, verdict(NodeHealth::healthy), OnUnknown::keep).action, SlurmNodeAction::none);
}

TEST(SlurmNode, DownOrFailingNodesAreLeftToSlurm) {
    for (const char* state : {"DOWN", "DOWN+DRAIN", "IDLE+FAIL", "DOWN+NOT_RESPONDING", "IDLE+REBOOT_REQUESTED"}) {
        for (NodeHealth health : {NodeHealth::healthy, NodeHealth::degraded, NodeHealth::unknown}) {
            SlurmNodePlan plan = plan_slurm_node(parsed(oneliner(state, "launchguard: hw.inventory")), verdict(health),
                                                 OnUnknown::drain);
            EXPECT_EQ(plan.action, SlurmNodeAction::none) << state << " " << to_string(health);
        }
    }
}

TEST(SlurmNode, UnknownKeepsTheNodeUnlessTheSiteAsksToDrain) {
    const SlurmNodeState idle = parsed(oneliner("IDLE"));
    EXPECT_EQ(plan_slurm_node(idle, verdict(NodeHealth::unknown), OnUnknown::keep).action, SlurmNodeAction::none);
    SlurmNodePlan drain = plan_slurm_node(idle, verdict(NodeHealth::unknown), OnUnknown::drain);
    EXPECT_EQ(drain.action, SlurmNodeAction::drain);
    EXPECT_EQ(drain.reason, "launchguard: node check unknown");
    // An unknown check does not resume a drain either: nothing passed.
    const SlurmNodeState ours = parsed(oneliner("IDLE+DRAIN", "launchguard: hw.pcie-degraded"));
    EXPECT_EQ(plan_slurm_node(ours, verdict(NodeHealth::unknown), OnUnknown::keep).action, SlurmNodeAction::none);
}

}  // namespace
}  // namespace launchguard
