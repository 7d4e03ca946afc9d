// nccl.* rules: settings that switch NCCL's fast paths off or pin its tuning,
// on the DGX-2 hwloc export (16 GPUs), the 32em64t export (4 GPUs), profiles
// that declare NVSwitch / multi-node NVLink, and a real AWS EFA job spec.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rules/rule.h"
#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "unit/rules/nccl_env_test_helpers.h"

namespace launchguard {
namespace {

using testing::awsome_efa_env;
using testing::kDgx2;
using testing::launch_from_yaml;
using testing::mentions;
using testing::profile_from_yaml;
using testing::reasons;
using testing::RuleResult;
using testing::run_rule;
using testing::without_env;
using Kind = RemediationOp::Kind;

const std::string kNvl72 = "name: nvl72\nnode: {grace: true, mnnvl: true, nvswitch: true, gpus: 4}\n";
const std::string kHgx = "name: hgx\nnode: {nvswitch: true, gpus: 8}\n";

std::string env_yaml(const std::string& name, const std::string& value) {
    return "env: {" + name + ": '" + value + "'}\n";
}

RuleResult run_with(std::string_view rule, const std::string& name, const std::string& value,
                    const std::string& extra = "") {
    return run_rule(rule, launch_from_yaml(extra + env_yaml(name, value)));
}

// Every rule of a family obeys the same removal contract: environment values are
// unset, conf-file values are overridden from the environment and the line named.
void expect_conf_override(const RuleResult& result, const std::string& name, const std::string& value) {
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:1");
    const auto& ops = result.finding().remediation;
    ASSERT_EQ(ops.size(), 2U);
    EXPECT_EQ(ops[0].kind, Kind::set_env);
    EXPECT_EQ(ops[0].name, name);
    EXPECT_EQ(ops[0].value, value);
    EXPECT_EQ(ops[1].kind, Kind::manual);
    EXPECT_TRUE(mentions(ops[1].text, "/etc/nccl.conf:1"));
}

void expect_unset(const RuleResult& result, const std::string& name) {
    ASSERT_TRUE(result.fired());
    ASSERT_EQ(result.finding().remediation.size(), 1U);
    EXPECT_EQ(result.finding().remediation[0].kind, Kind::unset_env);
    EXPECT_EQ(result.finding().remediation[0].name, name);
}

std::string conf(const std::string& line) { return "files: {/etc/nccl.conf: \"" + line + "\\n\"}\n"; }

// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// nccl.p2p-disabled

TEST(NcclP2pDisabled, FiresOnAMultiGpuNode) {
    auto result = run_with("nccl.p2p-disabled", "NCCL_P2P_DISABLE", "1", kDgx2);
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.rule, "nccl.p2p-disabled");
    EXPECT_EQ(f.action, Action::warn);
    EXPECT_EQ(f.message,
              "NCCL_P2P_DISABLE=1 turns CUDA P2P off between the 16 GPUs of this node: intra-node traffic goes through "
              "host memory instead of NVLink/PCIe peer access");
    EXPECT_EQ(result.evidence("NCCL_P2P_DISABLE"), "1");
    EXPECT_EQ(result.evidence("source"), "environment");
    EXPECT_EQ(result.evidence("node_gpus"), "16");
    EXPECT_TRUE(mentions(result.evidence("topology"), "nvidiaDGX2.xml"));
    expect_unset(result, "NCCL_P2P_DISABLE");
}

TEST(NcclP2pDisabled, NcclP2pLevelLocDisablesP2pToo) {
    auto loc = run_with("nccl.p2p-disabled", "NCCL_P2P_LEVEL", "LOC", kDgx2);
    ASSERT_TRUE(loc.fired());
    EXPECT_EQ(loc.evidence("NCCL_P2P_LEVEL"), "LOC");
    expect_unset(loc, "NCCL_P2P_LEVEL");
    EXPECT_TRUE(run_with("nccl.p2p-disabled", "NCCL_P2P_LEVEL", "0", kDgx2).fired());
    // Any other level keeps P2P, and "loc" is not a level NCCL knows.
    EXPECT_TRUE(run_with("nccl.p2p-disabled", "NCCL_P2P_LEVEL", "PIX", kDgx2).quiet());
    EXPECT_TRUE(run_with("nccl.p2p-disabled", "NCCL_P2P_LEVEL", "loc", kDgx2).quiet());
}

TEST(NcclP2pDisabled, OnlyExactlyOneDisables) {
    // ncclGetLevel: `if (disable == 1)`.
    for (const char* value : {"0", "2", "", "yes"}) {
        EXPECT_TRUE(run_with("nccl.p2p-disabled", "NCCL_P2P_DISABLE", value, kDgx2).quiet()) << value;
    }
    EXPECT_TRUE(run_rule("nccl.p2p-disabled", launch_from_yaml(kDgx2 + conf("NCCL_P2P_DISABLE=1 # debug"))).fired());
}

TEST(NcclP2pDisabled, OnMultiNodeNvlinkItAlsoTurnsMnnvlOff) {
    auto result =
        run_rule("nccl.p2p-disabled", launch_from_yaml(env_yaml("NCCL_P2P_DISABLE", "1")), profile_from_yaml(kNvl72));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "the 4 GPUs per node of profile 'nvl72'"));
    EXPECT_TRUE(mentions(result.finding().message, "multi-node NVLink is off too"));
    EXPECT_EQ(result.evidence("profile_gpus"), "4");
    EXPECT_EQ(result.evidence("profile_mnnvl"), "true");
}

TEST(NcclP2pDisabled, FromAConfFile) {
    expect_conf_override(run_rule("nccl.p2p-disabled", launch_from_yaml(kDgx2 + conf("NCCL_P2P_DISABLE=1"))),
                         "NCCL_P2P_DISABLE", "0");
}

TEST(NcclP2pDisabled, QuietOnASingleGpuNode) {
    auto result = run_rule("nccl.p2p-disabled", launch_from_yaml(env_yaml("NCCL_P2P_DISABLE", "1")),
                           profile_from_yaml("name: one\nnode: {gpus: 1}\n"));
    EXPECT_TRUE(result.quiet());
}

TEST(NcclP2pDisabled, UnknownWithoutTopologyOrProfileInventory) {
    auto result = run_with("nccl.p2p-disabled", "NCCL_P2P_DISABLE", "1");
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "does not give node.gpus"));
    auto no_env = run_rule("nccl.p2p-disabled", without_env(launch_from_yaml(kDgx2)));
    ASSERT_TRUE(no_env.undecided());
    EXPECT_TRUE(mentions(reasons(no_env), "NCCL_P2P_DISABLE may be set"));
}

// ---------------------------------------------------------------------------
// nccl.shm-disabled

TEST(NcclShmDisabled, FiresOnAMultiGpuNode) {
    auto result =
        run_with("nccl.shm-disabled", "NCCL_SHM_DISABLE", "1", "hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\n");
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().message,
              "NCCL_SHM_DISABLE=1 removes the shared-memory transport between the 3 GPUs of this node: GPU pairs that "
              "cannot use P2P (e.g. across CPU sockets) send through the network instead");
    EXPECT_EQ(result.evidence("node_gpus"), "3");
    expect_unset(result, "NCCL_SHM_DISABLE");
    expect_conf_override(run_rule("nccl.shm-disabled", launch_from_yaml(kDgx2 + conf("NCCL_SHM_DISABLE=1"))),
                         "NCCL_SHM_DISABLE", "0");
}

TEST(NcclShmDisabled, QuietUnlessNcclReadsExactlyOneOnAMultiGpuNode) {
    for (const char* value : {"0", "2", ""}) {
        EXPECT_TRUE(run_with("nccl.shm-disabled", "NCCL_SHM_DISABLE", value, kDgx2).quiet()) << value;
    }
    EXPECT_TRUE(run_rule("nccl.shm-disabled", launch_from_yaml(env_yaml("NCCL_SHM_DISABLE", "1")),
                         profile_from_yaml("name: one\nnode: {gpus: 1}\n"))
                    .quiet());
    EXPECT_TRUE(
        run_rule("nccl.shm-disabled", launch_from_yaml(env_yaml("NCCL_SHM_DISABLE", "1")), profile_from_yaml(kHgx))
            .fired());
}

TEST(NcclShmDisabled, UnknownWithoutTopologyOrProfileInventory) {
    auto result = run_with("nccl.shm-disabled", "NCCL_SHM_DISABLE", "1");
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "node topology is unknown"));
}

// ---------------------------------------------------------------------------
// nccl.nvls-disabled

TEST(NcclNvlsDisabled, FiresOnAnNvswitchProfile) {
    auto result =
        run_rule("nccl.nvls-disabled", launch_from_yaml(env_yaml("NCCL_NVLS_ENABLE", "0")), profile_from_yaml(kHgx));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().message,
              "NCCL_NVLS_ENABLE=0 turns NVLink SHARP off on an NVSwitch node of profile 'hgx': NVLS/NVLSTree "
              "algorithms are never used and all-reduce loses the switch offload");
    EXPECT_EQ(result.evidence("parsed"), "0");
    EXPECT_EQ(result.evidence("profile_nvswitch"), "true");
    expect_unset(result, "NCCL_NVLS_ENABLE");
    // strtoll reads "off" as 0: NVLS really is off.
    auto word =
        run_rule("nccl.nvls-disabled", launch_from_yaml(env_yaml("NCCL_NVLS_ENABLE", "off")), profile_from_yaml(kHgx));
    ASSERT_TRUE(word.fired());
    EXPECT_EQ(word.evidence("parsed"), "0");
}

TEST(NcclNvlsDisabled, FromAConfFileRestoresTheDefaultTwo) {
    expect_conf_override(
        run_rule("nccl.nvls-disabled", launch_from_yaml(conf("NCCL_NVLS_ENABLE=0")), profile_from_yaml(kHgx)),
        "NCCL_NVLS_ENABLE", "2");
}

TEST(NcclNvlsDisabled, QuietWhenEnabledOrWhenTheNodeHasOneGpu) {
    for (const char* value : {"1", "2", ""}) {
        EXPECT_TRUE(run_rule("nccl.nvls-disabled", launch_from_yaml(env_yaml("NCCL_NVLS_ENABLE", value)),
                             profile_from_yaml(kHgx))
                        .quiet())
            << value;
    }
    EXPECT_TRUE(run_rule("nccl.nvls-disabled", launch_from_yaml("")).quiet());
}

TEST(NcclNvlsDisabled, UnknownWhenTheProfileDoesNotSayWhetherThereIsAnNvswitch) {
    // The DGX-2 has NVSwitches, but launchguard does not detect them; the profile must say.
    auto result = run_with("nccl.nvls-disabled", "NCCL_NVLS_ENABLE", "0", kDgx2);
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "does not declare node.nvswitch"));
}

// ---------------------------------------------------------------------------
// nccl.cumem-disabled

TEST(NcclCumemDisabled, BlocksOnMultiNodeNvlinkProfiles) {
    auto result = run_rule("nccl.cumem-disabled", launch_from_yaml(env_yaml("NCCL_CUMEM_ENABLE", "0")),
                           profile_from_yaml(kNvl72));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.action, Action::block);
    EXPECT_EQ(f.message,
              "NCCL_CUMEM_ENABLE=0 turns NCCL's cuMem allocations off: on this multi-node NVLink system (profile "
              "'nvl72') MNNVL is silently off and cross-tray traffic goes over the NICs");
    EXPECT_EQ(result.evidence("parsed"), "0");
    EXPECT_EQ(result.evidence("profile_mnnvl"), "true");
    expect_unset(result, "NCCL_CUMEM_ENABLE");
}

TEST(NcclCumemDisabled, WarnsElsewhere) {
    auto result = run_with("nccl.cumem-disabled", "NCCL_CUMEM_ENABLE", "0");
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().action, Action::warn);
    EXPECT_EQ(result.evidence("profile_mnnvl"), "false");
    EXPECT_TRUE(mentions(result.finding().message, "symmetric-memory kernels"));
}

TEST(NcclCumemDisabled, NegativeValuesOtherThanAutoDisableToo) {
    // ncclCuMemEnable: `param >= 0 ? param : (param == -2 && supported)`.
    auto minus_one = run_rule("nccl.cumem-disabled", launch_from_yaml(env_yaml("NCCL_CUMEM_ENABLE", "-1")),
                              profile_from_yaml(kNvl72));
    ASSERT_TRUE(minus_one.fired());
    EXPECT_EQ(minus_one.evidence("parsed"), "-1");
    for (const char* value : {"-2", "1", ""}) {
        EXPECT_TRUE(run_rule("nccl.cumem-disabled", launch_from_yaml(env_yaml("NCCL_CUMEM_ENABLE", value)),
                             profile_from_yaml(kNvl72))
                        .quiet())
            << value;
    }
}

TEST(NcclCumemDisabled, FromAConfFileRestoresAuto) {
    expect_conf_override(
        run_rule("nccl.cumem-disabled", launch_from_yaml(conf("NCCL_CUMEM_ENABLE=0")), profile_from_yaml(kNvl72)),
        "NCCL_CUMEM_ENABLE", "-2");
}

TEST(NcclCumemDisabled, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto result = run_rule("nccl.cumem-disabled", without_env(launch_from_yaml("")), profile_from_yaml(kNvl72));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "NCCL_CUMEM_ENABLE may be set"));
}

// ---------------------------------------------------------------------------
// nccl.algo-restricted, nccl.proto-restricted

TEST(NcclAlgoRestricted, FiresForAnyNonEmptyValueAndSaysWhatItDoes) {
    auto ring = run_with("nccl.algo-restricted", "NCCL_ALGO", "Ring,Tree");
    ASSERT_TRUE(ring.fired());
    EXPECT_EQ(ring.finding().message,
              "NCCL_ALGO=Ring,Tree allows only Tree, Ring: NCCL's tuner can no longer pick CollNetDirect, "
              "CollNetChain, NVLS, NVLSTree, PAT per collective and message size");
    EXPECT_EQ(ring.evidence("NCCL_ALGO"), "Ring,Tree");
    expect_unset(ring, "NCCL_ALGO");
    EXPECT_TRUE(mentions(run_with("nccl.algo-restricted", "NCCL_ALGO", "^NVLS").finding().message, "excludes NVLS"));
    EXPECT_TRUE(mentions(run_with("nccl.algo-restricted", "NCCL_ALGO", "ring;allreduce:tree").finding().message,
                         "sets per-collective lists"));
}

// COLLNETCHAIN is one of NCCL's CollNet algorithms: the message must not say CollNet is gone.
TEST(NcclAlgoRestricted, NamesOnlyTheAlgorithmsTheValueTakesAway) {
    auto chain = run_with("nccl.algo-restricted", "NCCL_ALGO", "COLLNETCHAIN");
    ASSERT_TRUE(chain.fired());
    EXPECT_EQ(chain.finding().message,
              "NCCL_ALGO=COLLNETCHAIN allows only CollNetChain: NCCL's tuner can no longer pick Tree, Ring, "
              "CollNetDirect, NVLS, NVLSTree, PAT per collective and message size");
    auto typo = run_with("nccl.algo-restricted", "NCCL_ALGO", "Ring,Trees");
    EXPECT_TRUE(mentions(typo.finding().message, "NCCL ignores Trees")) << typo.finding().message;
    EXPECT_TRUE(
        mentions(run_with("nccl.algo-restricted", "NCCL_ALGO", "nothing").finding().message, "leaves no choice"));
    // Every algorithm listed, or only an unknown name excluded: nothing is restricted.
    EXPECT_TRUE(run_with("nccl.algo-restricted", "NCCL_ALGO", "tree,ring,collnetdirect,collnetchain,nvls,nvlstree,pat")
                    .quiet());
    EXPECT_TRUE(run_with("nccl.algo-restricted", "NCCL_ALGO", "^collnet").quiet());
}

TEST(NcclAlgoRestricted, QuietWhenUnsetOrEmptyAndOverriddenFromConf) {
    EXPECT_TRUE(run_rule("nccl.algo-restricted", launch_from_yaml("")).quiet());
    EXPECT_TRUE(run_with("nccl.algo-restricted", "NCCL_ALGO", "").quiet());
    expect_conf_override(run_rule("nccl.algo-restricted", launch_from_yaml(conf("NCCL_ALGO=Ring"))), "NCCL_ALGO", "");
}

TEST(NcclAlgoRestricted, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto result = run_rule("nccl.algo-restricted", without_env(launch_from_yaml("")));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "NCCL_ALGO may be set"));
}

TEST(NcclProtoRestricted, FiresForAnyNonEmptyValue) {
    auto simple = run_with("nccl.proto-restricted", "NCCL_PROTO", "Simple");
    ASSERT_TRUE(simple.fired());
    EXPECT_EQ(simple.finding().message,
              "NCCL_PROTO=Simple allows only Simple: NCCL's tuner can no longer pick LL, LL128 per message "
              "size, which costs latency or bandwidth");
    expect_unset(simple, "NCCL_PROTO");
    EXPECT_TRUE(
        mentions(run_with("nccl.proto-restricted", "NCCL_PROTO", "^LL128").finding().message, "excludes LL128"));
    EXPECT_TRUE(run_with("nccl.proto-restricted", "NCCL_PROTO", "").quiet());
    expect_conf_override(run_rule("nccl.proto-restricted", launch_from_yaml(conf("NCCL_PROTO=Simple"))), "NCCL_PROTO",
                         "");
}

TEST(NcclProtoRestricted, UnknownWhenTheTaskEnvironmentIsUnknown) {
    EXPECT_TRUE(run_rule("nccl.proto-restricted", without_env(launch_from_yaml(""))).undecided());
}

// ---------------------------------------------------------------------------
// nccl.channels-capped

TEST(NcclChannelsCapped, FiresForACapBelowSixtyFourChannels) {
    auto result = run_with("nccl.channels-capped", "NCCL_MAX_NCHANNELS", "4");
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(
        result.finding().message,
        "NCCL_MAX_NCHANNELS=4 caps NCCL at 4 channels (it may use up to 64): large collectives cannot drive every "
        "NVLink and NIC at full bandwidth");
    EXPECT_EQ(result.evidence("channel_cap"), "4");
    expect_unset(result, "NCCL_MAX_NCHANNELS");

    auto ctas = run_with("nccl.channels-capped", "NCCL_MAX_CTAS", "8");
    ASSERT_TRUE(ctas.fired());
    EXPECT_EQ(ctas.evidence("channel_cap"), "8");
}

TEST(NcclChannelsCapped, ZeroChannelsIsRaisedToOneByNccl) {
    auto result = run_with("nccl.channels-capped", "NCCL_MAX_NCHANNELS", "0");
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("channel_cap"), "1");
    EXPECT_TRUE(mentions(result.finding().message, "caps NCCL at 1 channel "));
    auto suffixed = run_with("nccl.channels-capped", "NCCL_MAX_NCHANNELS", "16 channels");
    ASSERT_TRUE(suffixed.fired());
    EXPECT_TRUE(mentions(suffixed.finding().message, "NCCL_MAX_NCHANNELS=16 channels (read as 16)"));
}

TEST(NcclChannelsCapped, LegacyMaxNringsCountsOnlyWithoutMaxNchannels) {
    auto rings = run_with("nccl.channels-capped", "NCCL_MAX_NRINGS", "2");
    ASSERT_TRUE(rings.fired());
    EXPECT_EQ(rings.evidence("NCCL_MAX_NRINGS"), "2");
    auto both =
        run_rule("nccl.channels-capped", launch_from_yaml("env: {NCCL_MAX_NRINGS: '2', NCCL_MAX_NCHANNELS: '32'}"));
    ASSERT_EQ(both.findings.size(), 1U);
    EXPECT_EQ(both.evidence("NCCL_MAX_NCHANNELS"), "32");
    // -2 is NCCL's "unset": NRINGS applies again.
    auto auto_channels =
        run_rule("nccl.channels-capped", launch_from_yaml("env: {NCCL_MAX_NRINGS: '2', NCCL_MAX_NCHANNELS: '-2'}"));
    ASSERT_EQ(auto_channels.findings.size(), 1U);
    EXPECT_EQ(auto_channels.evidence("NCCL_MAX_NRINGS"), "2");
}

TEST(NcclChannelsCapped, QuietWithoutAnEffectiveCap) {
    for (const char* value : {"64", "128", "-2", ""}) {
        EXPECT_TRUE(run_with("nccl.channels-capped", "NCCL_MAX_NCHANNELS", value).quiet()) << value;
    }
    // NCCL ignores NCCL_MAX_CTAS <= 0 ("too low, leaving it set").
    for (const char* value : {"0", "-1", "64"}) {
        EXPECT_TRUE(run_with("nccl.channels-capped", "NCCL_MAX_CTAS", value).quiet()) << value;
    }
    expect_conf_override(run_rule("nccl.channels-capped", launch_from_yaml(conf("NCCL_MAX_CTAS=16"))), "NCCL_MAX_CTAS",
                         "");
}

TEST(NcclChannelsCapped, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto result = run_rule("nccl.channels-capped", without_env(launch_from_yaml("")));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "NCCL_MAX_NCHANNELS may be set"));
}

// ---------------------------------------------------------------------------
// nccl.buffsize-suspicious

TEST(NcclBuffsizeSuspicious, ASizeSuffixIsReadAsBytesAndRewrittenToWhatWasMeant) {
    auto result = run_with("nccl.buffsize-suspicious", "NCCL_BUFFSIZE", "8M");
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().message,
              "NCCL_BUFFSIZE=8M is read by NCCL as 8 bytes (strtoll stops at the first character that is not part of a "
              "number), below the 4 MiB (4194304-byte) default: fewer bytes in flight per step, lower bandwidth");
    EXPECT_EQ(result.evidence("parsed_bytes"), "8");
    EXPECT_EQ(result.evidence("default_bytes"), "4194304");
    EXPECT_EQ(result.evidence("meant_bytes"), "8388608");
    EXPECT_EQ(result.set_env("NCCL_BUFFSIZE"), "8388608");
}

TEST(NcclBuffsizeSuspicious, SmallAndUnparsableValues) {
    auto small = run_with("nccl.buffsize-suspicious", "NCCL_BUFFSIZE", "1048576");
    ASSERT_TRUE(small.fired());
    EXPECT_EQ(small.evidence("parsed_bytes"), "1048576");
    expect_unset(small, "NCCL_BUFFSIZE");

    auto word = run_with("nccl.buffsize-suspicious", "NCCL_BUFFSIZE", "four");
    ASSERT_TRUE(word.fired());
    EXPECT_EQ(word.evidence("parsed_bytes"), "0");
    expect_unset(word, "NCCL_BUFFSIZE");

    auto from_conf = run_rule("nccl.buffsize-suspicious", launch_from_yaml(conf("NCCL_BUFFSIZE=1M")));
    ASSERT_TRUE(from_conf.fired());
    EXPECT_EQ(from_conf.evidence("source"), "/etc/nccl.conf:1");
    EXPECT_EQ(from_conf.set_env("NCCL_BUFFSIZE"), "1048576");

    expect_conf_override(run_rule("nccl.buffsize-suspicious", launch_from_yaml(conf("NCCL_BUFFSIZE=65536"))),
                         "NCCL_BUFFSIZE", "-2");
}

TEST(NcclBuffsizeSuspicious, QuietForTheAwsEfaJobsEightMebibytes) {
    std::string buffsize = awsome_efa_env().at("NCCL_BUFFSIZE");
    ASSERT_EQ(buffsize, "8388608");
    EXPECT_TRUE(run_with("nccl.buffsize-suspicious", "NCCL_BUFFSIZE", buffsize).quiet());
    for (const char* value : {"4194304", "0x800000", "-2", "", "4194304 # default"}) {
        EXPECT_TRUE(run_with("nccl.buffsize-suspicious", "NCCL_BUFFSIZE", value).quiet()) << value;
    }
    EXPECT_TRUE(run_rule("nccl.buffsize-suspicious", launch_from_yaml("")).quiet());
}

TEST(NcclBuffsizeSuspicious, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto result = run_rule("nccl.buffsize-suspicious", without_env(launch_from_yaml("")));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "NCCL_BUFFSIZE may be set"));
}

}  // namespace
}  // namespace launchguard
