// net.* rules against real hwloc exports (32em64t: mlx5_0 port 1 ACTIVE, ib0,
// eth0, eth1; DGX-2: 16 GPUs, no HCA), recorded sysfs trees that add port
// states and rates (h100-baremetal: mlx5_1 DOWN; cx8-fabric-mixed: 800 Gb/s
// ports, one at 400, one INIT), and real job specs (AWS EFA, Azure AKS).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "rules/rule.h"
#include "support/launch_fixture.h"
#include "support/rule_harness.h"
#include "unit/rules/nccl_env_test_helpers.h"

namespace launchguard {
namespace {

using testing::awsome_efa_env;
using testing::fixture_path;
using testing::kDgx2;
using testing::launch_from_yaml;
using testing::mentions;
using testing::profile_from_yaml;
using testing::reasons;
using testing::run_rule;
using testing::without_env;
using Kind = RemediationOp::Kind;

// 32em64t: 4 GPUs, mlx5_0 port 1 ACTIVE (hwloc knows no rate), interfaces eth0, eth1, ib0.
const std::string kNode = "hwloc_xml: hwloc/32em64t-2n8c2t-pci-normalio.xml\n";
// + h100-baremetal sysfs: mlx5_0:1 ACTIVE/LinkUp/400, mlx5_1:1 DOWN/Disabled/10; ib1 down, lo.
const std::string kNodeWithDownPort = kNode + "sysfs: sysfs/h100-baremetal\n";
// + cx8-fabric-mixed: mlx5_0/1 800 ACTIVE, mlx5_2 400 ACTIVE, mlx5_3 INIT.
const std::string kCx8Node = kNode + "sysfs: sysfs/cx8-fabric-mixed\n";
// 16 V100s behind NVSwitches, no RDMA NIC.

const RemediationOp* op(const Finding& finding, Kind kind) {
    for (const auto& candidate : finding.remediation) {
        if (candidate.kind == kind) return &candidate;
    }
    return nullptr;
}

std::string evidence(const Finding& finding, const std::string& key) {
    for (const auto& [k, v] : finding.evidence) {
        if (k == key) return v;
    }
    return "";
}

// ncclEnvVars of Azure's AKS InfiniBand chart (k8s/aks-rdma-ib-chart/values.yaml).
Environment aks_nccl_env() {
    YAML::Node values = YAML::LoadFile(fixture_path("k8s/aks-rdma-ib-chart/values.yaml"));
    Environment env;
    for (const auto& kv : values["ncclEnvVars"]) env[kv.first.as<std::string>()] = kv.second.as<std::string>();
    return env;
}

// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// net.hca-matches-nothing

TEST(NetHcaMatchesNothing, FiresWhenTheFilterNamesAnHcaTheNodeLacks) {
    auto result = run_rule("net.hca-matches-nothing", launch_from_yaml(kNode + "env: {NCCL_IB_HCA: mlx5_9}"));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.rule, "net.hca-matches-nothing");
    EXPECT_EQ(f.action, Action::block);
    EXPECT_EQ(f.severity, Severity::error);
    EXPECT_EQ(f.message,
              "NCCL_IB_HCA=mlx5_9 selects none of this node's active ports (mlx5_0:1): NCCL silently falls back to "
              "TCP sockets");
    EXPECT_EQ(result.evidence("NCCL_IB_HCA"), "mlx5_9");
    EXPECT_EQ(result.evidence("source"), "environment");
    EXPECT_EQ(result.evidence("active_ports"), "mlx5_0:1");
    EXPECT_TRUE(mentions(result.evidence("topology"), "32em64t-2n8c2t-pci-normalio.xml"));
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "=mlx5_0");
}

TEST(NetHcaMatchesNothing, QuotesFromNcclConfAreLiteralAndMatchNothing) {
    auto result = run_rule("net.hca-matches-nothing",
                           launch_from_yaml(kNode + R"(files: {/etc/nccl.conf: "NCCL_IB_HCA=\"mlx5_0\"\n"})"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("NCCL_IB_HCA"), "\"mlx5_0\"");
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:1");
    EXPECT_TRUE(mentions(result.finding().message, "the quotes are part of the value"));
    // The environment beats the conf file, so the patch works without editing it.
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "=mlx5_0");
}

TEST(NetHcaMatchesNothing, FilterThatMatchesOnlyADownPortNamesIt) {
    auto result =
        run_rule("net.hca-matches-nothing", launch_from_yaml(kNodeWithDownPort + "env: {NCCL_IB_HCA: =mlx5_1}"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("matched_inactive_ports"), "mlx5_1:1 (DOWN)");
    EXPECT_EQ(result.evidence("active_ports"), "mlx5_0:1");
    EXPECT_TRUE(mentions(result.finding().message, "it matches only mlx5_1:1 (DOWN)"));
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "=mlx5_0");
}

TEST(NetHcaMatchesNothing, ExclusionOfTheOnlyActiveHcaAndAMissingPortFire) {
    EXPECT_TRUE(run_rule("net.hca-matches-nothing", launch_from_yaml(kNode + "env: {NCCL_IB_HCA: ^mlx5_0}")).fired());
    EXPECT_TRUE(
        run_rule("net.hca-matches-nothing", launch_from_yaml(kNode + "env: {NCCL_IB_HCA: 'mlx5_0:2'}")).fired());
    // "^" alone deselects every device (matchIfList's inversion of an empty list).
    EXPECT_TRUE(run_rule("net.hca-matches-nothing", launch_from_yaml(kNode + "env: {NCCL_IB_HCA: ^}")).fired());
}

TEST(NetHcaMatchesNothing, ProposesTheProfileFilterWhenItHasOne) {
    Profile profile = profile_from_yaml("name: site\nnccl: {ib_hca: '=mlx5_0,mlx5_1'}\n");
    auto result = run_rule("net.hca-matches-nothing", launch_from_yaml(kCx8Node + "env: {NCCL_IB_HCA: ib}"), profile);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("active_ports"), "mlx5_0:1, mlx5_1:1, mlx5_2:1");
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "=mlx5_0,mlx5_1");
}

TEST(NetHcaMatchesNothing, ProposesTheProfilesHcasWhenItNamesNoFilter) {
    Profile profile = profile_from_yaml("name: site\nnode: {hcas: [mlx5_0, mlx5_1]}\n");
    auto result =
        run_rule("net.hca-matches-nothing", launch_from_yaml(kCx8Node + "env: {NCCL_IB_HCA: mlx5_9}"), profile);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "=mlx5_0,mlx5_1");
}

TEST(NetHcaMatchesNothing, FilterBuiltFromEveryActiveHcaWithoutAProfileFilter) {
    auto result = run_rule("net.hca-matches-nothing", launch_from_yaml(kCx8Node + "env: {NCCL_IB_HCA: =mlx5_3}"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("matched_inactive_ports"), "mlx5_3:1 (INIT)");
    EXPECT_EQ(result.set_env("NCCL_IB_HCA"), "=mlx5_0,mlx5_1,mlx5_2");
}

TEST(NetHcaMatchesNothing, QuietWhenTheFilterSelectsAnActivePort) {
    for (const char* filter : {"mlx5", "mlx5_0", "=mlx5_0", "'mlx5_0:1'", "^mlx5_1", "^=mlx5_1", "''"}) {
        auto result = run_rule("net.hca-matches-nothing",
                               launch_from_yaml(kNodeWithDownPort + "env: {NCCL_IB_HCA: " + filter + "}"));
        EXPECT_TRUE(result.quiet()) << filter;
    }
}

TEST(NetHcaMatchesNothing, QuietWhenUnsetOrWhenTheNodeHasNoActivePortAtAll) {
    EXPECT_TRUE(run_rule("net.hca-matches-nothing", launch_from_yaml(kNode)).quiet());
    // No HCA at all: the filter is not what keeps NCCL off IB (hw.inventory's business).
    EXPECT_TRUE(run_rule("net.hca-matches-nothing", launch_from_yaml(kDgx2 + "env: {NCCL_IB_HCA: mlx5_0}")).quiet());
}

TEST(NetHcaMatchesNothing, UnknownWithoutTheNodeTopology) {
    auto result = run_rule("net.hca-matches-nothing", launch_from_yaml("env: {NCCL_IB_HCA: mlx5_0}"));
    ASSERT_TRUE(result.undecided());
    EXPECT_EQ(result.unknowns.front().rule, "net.hca-matches-nothing");
    EXPECT_TRUE(mentions(reasons(result), "NCCL_IB_HCA=mlx5_0"));
    EXPECT_TRUE(mentions(reasons(result), "no node topology in the test fixture"));
}

TEST(NetHcaMatchesNothing, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto result = run_rule("net.hca-matches-nothing", without_env(launch_from_yaml(kNode)));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "ConfigMap"));
}

// ---------------------------------------------------------------------------
// net.ib-disabled

TEST(NetIbDisabled, FiresForAMultiNodeJobOnAnIbNode) {
    auto result =
        run_rule("net.ib-disabled", launch_from_yaml(kNode + "env: {NCCL_IB_DISABLE: '1'}\njob: {nodes: 4, gpus: 32}"));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.action, Action::block);
    EXPECT_EQ(f.message,
              "NCCL_IB_DISABLE=1 turns NCCL's InfiniBand/RoCE transport off for this 4-node job on a node with 1 "
              "active IB/RoCE port: inter-node traffic silently goes over TCP sockets");
    EXPECT_EQ(result.evidence("NCCL_IB_DISABLE"), "1");
    EXPECT_EQ(result.evidence("source"), "environment");
    EXPECT_EQ(result.evidence("parsed"), "1");
    EXPECT_EQ(result.evidence("job_nodes"), "4");
    EXPECT_EQ(result.evidence("active_ib_ports"), "mlx5_0:1");
    ASSERT_EQ(f.remediation.size(), 1U);
    EXPECT_EQ(f.remediation[0].kind, Kind::unset_env);
    EXPECT_EQ(f.remediation[0].name, "NCCL_IB_DISABLE");
}

TEST(NetIbDisabled, FromAConfFileTheEnvironmentOverridesItAndTheLineIsNamed) {
    auto result =
        run_rule("net.ib-disabled",
                 launch_from_yaml(kNode + "files: {/etc/nccl.conf: \"NCCL_DEBUG=WARN\\nNCCL_IB_DISABLE=2\\n\"}\n"
                                          "job: {nodes: 2}"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:2");
    EXPECT_EQ(result.set_env("NCCL_IB_DISABLE"), "0");
    const RemediationOp* manual = op(result.finding(), Kind::manual);
    ASSERT_NE(manual, nullptr);
    EXPECT_TRUE(mentions(manual->text, "NCCL_IB_DISABLE=2"));
    EXPECT_TRUE(mentions(manual->text, "/etc/nccl.conf:2"));
}

TEST(NetIbDisabled, ProfileInventoryDecidesWithoutTheNode) {
    Profile profile = profile_from_yaml("name: h100\nnode: {rdma_nics: 8}\n");
    auto result =
        run_rule("net.ib-disabled", launch_from_yaml("env: {NCCL_IB_DISABLE: '1'}\njob: {nodes: 16}"), profile);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("profile_rdma_nics"), "8");
    EXPECT_TRUE(mentions(result.finding().message, "a node that profile 'h100' gives an IB/RoCE fabric"));
}

TEST(NetIbDisabled, QuietForValuesNcclReadsAsZero) {
    // The AKS chart sets NCCL_IB_DISABLE="0" "to force InfiniBand"; "true" is 0 to strtoll.
    Environment aks = aks_nccl_env();
    ASSERT_EQ(aks.at("NCCL_IB_DISABLE"), "0");
    LaunchContext ctx = launch_from_yaml(kNode + "job: {nodes: 4}");
    ctx.env = Fact<Environment>::known(aks, "k8s/aks-rdma-ib-chart/values.yaml");
    EXPECT_TRUE(run_rule("net.ib-disabled", ctx).quiet());
    EXPECT_TRUE(run_rule("net.ib-disabled", launch_from_yaml(kNode + "env: {NCCL_IB_DISABLE: 'true'}\njob: {nodes: 4}"))
                    .quiet());
    EXPECT_TRUE(
        run_rule("net.ib-disabled", launch_from_yaml(kNode + "env: {NCCL_IB_DISABLE: ''}\njob: {nodes: 4}")).quiet());
}

TEST(NetIbDisabled, QuietForSingleNodeJobsAndNodesWithoutRdma) {
    EXPECT_TRUE(
        run_rule("net.ib-disabled", launch_from_yaml(kNode + "env: {NCCL_IB_DISABLE: '1'}\njob: {nodes: 1}")).quiet());
    EXPECT_TRUE(
        run_rule("net.ib-disabled", launch_from_yaml(kDgx2 + "env: {NCCL_IB_DISABLE: '1'}\njob: {nodes: 8}")).quiet());
    // A known single-node job needs no topology.
    EXPECT_TRUE(run_rule("net.ib-disabled", launch_from_yaml("env: {NCCL_IB_DISABLE: '1'}\njob: {nodes: 1}")).quiet());
}

TEST(NetIbDisabled, UnknownWhenTheJobShapeOrTheFabricIsUnknown) {
    auto no_job = run_rule("net.ib-disabled", launch_from_yaml(kNode + "env: {NCCL_IB_DISABLE: '1'}"));
    ASSERT_TRUE(no_job.undecided());
    EXPECT_TRUE(mentions(reasons(no_job), "the job's node count is unknown"));

    auto no_fabric = run_rule("net.ib-disabled", launch_from_yaml("env: {NCCL_IB_DISABLE: '1'}\njob: {nodes: 4}"));
    ASSERT_TRUE(no_fabric.undecided());
    EXPECT_TRUE(mentions(reasons(no_fabric), "declares no RDMA NICs"));
}

// ---------------------------------------------------------------------------
// net.fallback-unguarded

TEST(NetFallbackUnguarded, FiresForAMultiNodeIbJobWithoutNcclNet) {
    auto result = run_rule("net.fallback-unguarded", launch_from_yaml(kNode + "job: {nodes: 2, gpus: 16}"));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.action, Action::warn);
    EXPECT_EQ(f.message,
              "NCCL_NET is unset for this 2-node job on a node with 1 active IB/RoCE port: if the IB transport fails "
              "to initialise, NCCL silently falls back to TCP sockets instead of failing");
    EXPECT_EQ(result.evidence("NCCL_NET"), "(unset)");
    EXPECT_EQ(result.evidence("job_nodes"), "2");
    EXPECT_EQ(result.evidence("active_ib_ports"), "mlx5_0:1");
    EXPECT_EQ(result.set_env("NCCL_NET"), "IB");
}

TEST(NetFallbackUnguarded, ProposesTheProfileNetAndDecidesFromTheProfileInKubernetes) {
    Profile profile = profile_from_yaml("name: roce\nnode: {rdma_nics: 8}\nnccl: {net: IB}\n");
    auto result = run_rule("net.fallback-unguarded", launch_from_yaml("runtime: kubernetes\njob: {nodes: 8}"), profile);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("profile_rdma_nics"), "8");
    EXPECT_EQ(result.set_env("NCCL_NET"), "IB");
}

TEST(NetFallbackUnguarded, NetPluginNoneDoesNotCountAsAPlugin) {
    // CoreWeave's jobs set NCCL_NET_PLUGIN=none: the internal IB transport is in charge.
    auto result =
        run_rule("net.fallback-unguarded", launch_from_yaml(kNode + "env: {NCCL_NET_PLUGIN: none}\njob: {nodes: 4}"));
    EXPECT_TRUE(result.fired());
}

TEST(NetFallbackUnguarded, QuietWhenGuardedOrWhenAPluginIsInCharge) {
    const std::string job = "job: {nodes: 4}\n";
    EXPECT_TRUE(run_rule("net.fallback-unguarded", launch_from_yaml(kNode + job + "env: {NCCL_NET: IB}")).quiet());
    EXPECT_TRUE(run_rule("net.fallback-unguarded",
                         launch_from_yaml(kNode + job + "files: {/etc/nccl.conf: \"NCCL_NET=IB\\n\"}"))
                    .quiet());
    EXPECT_TRUE(
        run_rule("net.fallback-unguarded", launch_from_yaml(kNode + job + "env: {NCCL_NET_PLUGIN: ofi}")).quiet());
    EXPECT_TRUE(run_rule("net.fallback-unguarded",
                         launch_from_yaml(kNode + job + "files: {/usr/lib/x86_64-linux-gnu/libnccl-net.so: elf}"))
                    .quiet());
    EXPECT_TRUE(run_rule("net.fallback-unguarded", launch_from_yaml(kNode + job +
                                                                    "env: {LD_LIBRARY_PATH: /opt/efa/lib}\n"
                                                                    "files: {/opt/efa/lib/libnccl-net.so: elf}"))
                    .quiet());
    Profile plugin_profile = profile_from_yaml("name: efa\nnccl: {net_plugin: libnccl-net-ofi.so}\n");
    EXPECT_TRUE(run_rule("net.fallback-unguarded", launch_from_yaml(kNode + job), plugin_profile).quiet());
}

TEST(NetFallbackUnguarded, APluginOffTheLibraryPathIsNotInUse) {
    // dlopen does not search /usr/local/nvidia/lib64 unless LD_LIBRARY_PATH says so.
    auto result =
        run_rule("net.fallback-unguarded",
                 launch_from_yaml(kNode + "job: {nodes: 4}\nfiles: {/usr/local/nvidia/lib64/libnccl-net.so: elf}"));
    EXPECT_TRUE(result.fired());
}

TEST(NetFallbackUnguarded, PastTheLibraryDirectoryBoundAPluginLaterOnIsUndecided) {
    // The system directory's plugin keeps the rule quiet within the bound
    // (QuietWhenGuardedOrWhenAPluginIsInCharge); 300 entries before it leave
    // it unsearched.
    std::string path;
    for (int i = 0; i < 300; ++i) path += (i > 0 ? ":/d" : "/d") + std::to_string(i);
    auto result = run_rule("net.fallback-unguarded",
                           launch_from_yaml(kNode + "job: {nodes: 4}\nenv: {LD_LIBRARY_PATH: \"" + path +
                                            "\"}\nfiles: {/usr/lib/x86_64-linux-gnu/libnccl-net.so: elf}"));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "of 256 library directories per check was reached"));
}

TEST(NetFallbackUnguarded, QuietForSingleNodeJobsAndNodesWithoutRdma) {
    EXPECT_TRUE(run_rule("net.fallback-unguarded", launch_from_yaml(kNode + "job: {nodes: 1}")).quiet());
    EXPECT_TRUE(run_rule("net.fallback-unguarded", launch_from_yaml(kDgx2 + "job: {nodes: 4}")).quiet());
}

// Records every path it is asked about, and answers like the view it wraps.
class RecordingFileView final : public FileView {
public:
    explicit RecordingFileView(std::shared_ptr<const FileView> inner) : inner_(std::move(inner)) {}
    FileInfo stat(std::string_view path) const override { return asked(path), inner_->stat(path); }
    Result<std::string> read(std::string_view path, std::size_t max_bytes) const override {
        return asked(path), inner_->read(path, max_bytes);
    }
    std::vector<std::string> list(std::string_view dir) const override { return asked(dir), inner_->list(dir); }
    std::string describe() const override { return inner_->describe(); }
    const std::vector<std::string>& paths() const { return paths_; }

private:
    void asked(std::string_view path) const { paths_.emplace_back(path); }
    std::shared_ptr<const FileView> inner_;
    mutable std::vector<std::string> paths_;
};

TEST(NetFallbackUnguarded, AJobThatCannotFireNeverSearchesTheLibraryPath) {
    // The search is most of a task check's time; its answer cannot matter here.
    for (const std::string& shape : {kNode + "job: {nodes: 1}", kDgx2 + "job: {nodes: 4}"}) {
        LaunchContext ctx = launch_from_yaml(shape);
        auto recording = std::make_shared<RecordingFileView>(ctx.files);
        ctx.files = recording;
        EXPECT_TRUE(run_rule("net.fallback-unguarded", ctx).quiet()) << shape;
        for (const auto& path : recording->paths()) {
            EXPECT_FALSE(path.starts_with("/etc/ld.so.conf") || path.ends_with("libnccl-net.so")) << shape << path;
        }
    }
    // A job that can fire still looks.
    LaunchContext ctx = launch_from_yaml(kNode + "job: {nodes: 4}");
    auto recording = std::make_shared<RecordingFileView>(ctx.files);
    ctx.files = recording;
    EXPECT_TRUE(run_rule("net.fallback-unguarded", ctx).fired());
    EXPECT_TRUE(std::find(recording->paths().begin(), recording->paths().end(), "/etc/ld.so.conf") !=
                recording->paths().end());
}

TEST(NetFallbackUnguarded, UnknownWhenTheJobShapeOrThePluginFileCannotBeTold) {
    auto no_job = run_rule("net.fallback-unguarded", launch_from_yaml(kNode));
    ASSERT_TRUE(no_job.undecided());
    EXPECT_TRUE(mentions(reasons(no_job), "the job's node count is unknown"));

    auto image = run_rule(
        "net.fallback-unguarded",
        launch_from_yaml(kNode + "job: {nodes: 4}\nunknown_files: [/usr/lib/x86_64-linux-gnu/libnccl-net.so]"));
    ASSERT_TRUE(image.undecided());
    EXPECT_TRUE(mentions(reasons(image), "/usr/lib/x86_64-linux-gnu/libnccl-net.so"));

    auto no_env = run_rule("net.fallback-unguarded", without_env(launch_from_yaml(kNode + "job: {nodes: 4}")));
    ASSERT_TRUE(no_env.undecided());
}

// ---------------------------------------------------------------------------
// net.plugin-missing

TEST(NetPluginMissing, FiresWhenNeitherTheNameNorLibncclNetNameSoExists) {
    auto result = run_rule("net.plugin-missing", launch_from_yaml("env: {NCCL_NET_PLUGIN: ofi}"));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.action, Action::block);
    EXPECT_EQ(f.message,
              "NCCL_NET_PLUGIN=ofi: the container has no ofi or libnccl-net-ofi.so on its library path: NCCL silently "
              "falls back to its internal IB or socket transport");
    EXPECT_EQ(result.evidence("NCCL_NET_PLUGIN"), "ofi");
    EXPECT_EQ(result.evidence("library_files"), "ofi, libnccl-net-ofi.so");
    EXPECT_TRUE(mentions(result.evidence("searched"), "/usr/lib/x86_64-linux-gnu:"));
    EXPECT_EQ(result.evidence("container_view"), "test container view");
    const RemediationOp* manual = op(f, Kind::manual);
    ASSERT_NE(manual, nullptr);
    EXPECT_TRUE(mentions(manual->text, "libnccl-net-ofi.so"));
}

TEST(NetPluginMissing, QuietWhenDlopenFindsTheLibrary) {
    EXPECT_TRUE(
        run_rule("net.plugin-missing", launch_from_yaml("env: {NCCL_NET_PLUGIN: ofi}\n"
                                                        "files: {/usr/lib/x86_64-linux-gnu/libnccl-net-ofi.so: elf}"))
            .quiet());
    // A symlink to the real file counts, as dlopen follows it.
    EXPECT_TRUE(
        run_rule("net.plugin-missing",
                 launch_from_yaml("env: {NCCL_NET_PLUGIN: ofi}\nfiles: {/usr/lib64/libnccl-net-ofi.so.1.0: elf}\n"
                                  "symlinks: {/usr/lib64/libnccl-net-ofi.so: libnccl-net-ofi.so.1.0}"))
            .quiet());
}

TEST(NetPluginMissing, TheAwsEfaJobFindsItsPluginThroughLdLibraryPath) {
    Environment env = awsome_efa_env();
    ASSERT_TRUE(mentions(env.at("LD_LIBRARY_PATH"), "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu"));
    env["NCCL_NET_PLUGIN"] = "ofi";
    LaunchContext found =
        launch_from_yaml("files: {/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net-ofi.so: elf}");
    found.env = Fact<Environment>::known(env, "k8s/awsome-nccl-tests.yaml");
    EXPECT_TRUE(run_rule("net.plugin-missing", found).quiet());

    LaunchContext image_without_plugin = launch_from_yaml("files: {/opt/amazon/openmpi/lib/libmpi.so: elf}");
    image_without_plugin.env = Fact<Environment>::known(env, "k8s/awsome-nccl-tests.yaml");
    auto result = run_rule("net.plugin-missing", image_without_plugin);
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.evidence("searched"), "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu:"));
}

TEST(NetPluginMissing, ALibraryOffDlopensPathGetsAnLdLibraryPathPatch) {
    Profile profile = profile_from_yaml("name: sharp\nnccl: {net_plugin: libnccl-net.so}\n");
    auto result = run_rule("net.plugin-missing",
                           launch_from_yaml("env: {LD_LIBRARY_PATH: /usr/local/cuda/lib64}\n"
                                            "files: {/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so: elf}"),
                           profile);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("profile_net_plugin"), "libnccl-net.so");
    EXPECT_EQ(result.evidence("library_files"), "libnccl-net.so");
    EXPECT_EQ(result.evidence("found_off_path"), "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so");
    EXPECT_EQ(result.set_env("LD_LIBRARY_PATH"), "/opt/hpcx/nccl_rdma_sharp_plugin/lib:/usr/local/cuda/lib64");
}

TEST(NetPluginMissing, DirectoriesFromLdSoConfCount) {
    Profile profile = profile_from_yaml("name: sharp\nnccl: {net_plugin: libnccl-net.so}\n");
    auto result = run_rule(
        "net.plugin-missing",
        launch_from_yaml("files:\n"
                         "  /etc/ld.so.conf: \"include /etc/ld.so.conf.d/*.conf\\n\"\n"
                         "  /etc/ld.so.conf.d/hpcx.conf: \"# HPC-X\\n/opt/hpcx/nccl_rdma_sharp_plugin/lib\\n\"\n"
                         "  /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so: elf\n"),
        profile);
    EXPECT_TRUE(result.quiet());
}

TEST(NetPluginMissing, PathsAndFullLibraryNamesAreOpenedAsGiven) {
    auto path = run_rule("net.plugin-missing", launch_from_yaml("env: {NCCL_NET_PLUGIN: /opt/gib/libnccl-net-gib.so}"));
    ASSERT_TRUE(path.fired());
    EXPECT_EQ(path.evidence("library_files"), "/opt/gib/libnccl-net-gib.so");
    EXPECT_TRUE(run_rule("net.plugin-missing", launch_from_yaml("env: {NCCL_NET_PLUGIN: /opt/gib/libnccl-net-gib.so}\n"
                                                                "files: {/opt/gib/libnccl-net-gib.so: elf}"))
                    .quiet());

    auto library = run_rule("net.plugin-missing", launch_from_yaml("env: {NCCL_NET_PLUGIN: libnccl-net-gib.so}"));
    ASSERT_TRUE(library.fired());
    EXPECT_EQ(library.evidence("library_files"), "libnccl-net-gib.so");
}

TEST(NetPluginMissing, ACommaListNeedsOnlyOneLoadablePlugin) {
    EXPECT_TRUE(run_rule("net.plugin-missing", launch_from_yaml("env: {NCCL_NET_PLUGIN: 'gib,ofi'}\n"
                                                                "files: {/usr/lib/libnccl-net-ofi.so: elf}"))
                    .quiet());
    auto none_found = run_rule("net.plugin-missing", launch_from_yaml("env: {NCCL_NET_PLUGIN: 'gib,ofi'}"));
    ASSERT_TRUE(none_found.fired());
    EXPECT_EQ(none_found.evidence("library_files"), "gib, libnccl-net-gib.so, ofi, libnccl-net-ofi.so");
}

TEST(NetPluginMissing, QuietWhenPluginsAreOffOrLinkedIn) {
    Profile profile = profile_from_yaml("name: efa\nnccl: {net_plugin: libnccl-net-ofi.so}\n");
    for (const char* value : {"none", "NONE", "''", "STATIC_PLUGIN", "static"}) {
        auto result = run_rule("net.plugin-missing",
                               launch_from_yaml(std::string("env: {NCCL_NET_PLUGIN: ") + value + "}"), profile);
        EXPECT_TRUE(result.quiet()) << value;
    }
    EXPECT_TRUE(run_rule("net.plugin-missing", launch_from_yaml("env: {}")).quiet());
}

TEST(NetPluginMissing, UnknownWhenTheImageCannotBeSeen) {
    auto result = run_rule("net.plugin-missing",
                           launch_from_yaml("env: {NCCL_NET_PLUGIN: ofi}\n"
                                            "unknown_files: [/usr/lib/x86_64-linux-gnu/libnccl-net-ofi.so]"));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "/usr/lib/x86_64-linux-gnu/libnccl-net-ofi.so"));
    EXPECT_TRUE(mentions(reasons(result), "NCCL_NET_PLUGIN=ofi"));
}

// ---------------------------------------------------------------------------
// net.qps-low

// The GB300/B300 ConnectX-8 thresholds of profiles/gb300-cx8.yaml, inline so the
// test does not depend on other families' rule ids.
const std::string kCx8Profile =
    "name: cx8\nnode: {ib_rate_gbps: 800}\n"
    "nccl: {qps_per_connection: {min: 4, min_total_gpus: 512, min_link_gbps: 800}}\n";

TEST(NetQpsLow, SeedCaseOneQueuePairAt512GpusOnConnectX8) {
    auto result =
        run_rule("net.qps-low", launch_from_yaml("job: {nodes: 128, gpus: 512}"), profile_from_yaml(kCx8Profile));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.action, Action::patch);
    EXPECT_EQ(f.message,
              "NCCL_IB_QPS_PER_CONNECTION is unset (NCCL's default 1) for a 512-GPU job on 800 Gb/s links; profile "
              "'cx8' needs at least 4: with too few queue pairs the fabric's paths stay underused");
    EXPECT_EQ(result.evidence("NCCL_IB_QPS_PER_CONNECTION"), "(unset)");
    EXPECT_EQ(result.evidence("effective_qps"), "1");
    EXPECT_EQ(result.evidence("job_total_gpus"), "512");
    EXPECT_EQ(result.evidence("link_rate_gbps"), "800");
    EXPECT_EQ(result.evidence("link_rate_source"), "profile cx8");
    EXPECT_EQ(result.evidence("profile_min_qps"), "4");
    EXPECT_EQ(result.set_env("NCCL_IB_QPS_PER_CONNECTION"), "4");
}

TEST(NetQpsLow, FiresForLowExplicitAndUnparsableValues) {
    Profile profile = profile_from_yaml(kCx8Profile);
    auto two =
        run_rule("net.qps-low", launch_from_yaml("env: {NCCL_IB_QPS_PER_CONNECTION: '2'}\njob: {gpus: 1024}"), profile);
    ASSERT_TRUE(two.fired());
    EXPECT_EQ(two.evidence("effective_qps"), "2");
    EXPECT_EQ(two.evidence("source"), "environment");

    auto word =
        run_rule("net.qps-low", launch_from_yaml("env: {NCCL_IB_QPS_PER_CONNECTION: four}\njob: {gpus: 512}"), profile);
    ASSERT_TRUE(word.fired());
    EXPECT_EQ(word.evidence("effective_qps"), "0");

    // strtoll overflows: NCCL keeps its default of 1.
    auto overflow = run_rule(
        "net.qps-low", launch_from_yaml("env: {NCCL_IB_QPS_PER_CONNECTION: '99999999999999999999'}\njob: {gpus: 512}"),
        profile);
    ASSERT_TRUE(overflow.fired());
    EXPECT_EQ(overflow.evidence("effective_qps"), "1");
}

TEST(NetQpsLow, MeasuredPortRateBeatsTheProfile) {
    Profile no_rate =
        profile_from_yaml("name: cx8\nnccl: {qps_per_connection: {min: 4, min_total_gpus: 512, min_link_gbps: 800}}\n");
    auto result = run_rule("net.qps-low", launch_from_yaml(kCx8Node + "job: {gpus: 512}"), no_rate);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("link_rate_gbps"), "800");
    EXPECT_TRUE(mentions(result.evidence("link_rate_source"), "cx8-fabric-mixed"));
    // The node's 400 Gb/s ports are below the threshold, whatever the profile claims.
    EXPECT_TRUE(run_rule("net.qps-low", launch_from_yaml(kNodeWithDownPort + "job: {gpus: 512}"),
                         profile_from_yaml(kCx8Profile))
                    .quiet());
}

TEST(NetQpsLow, QuietBelowThresholdsOrWithEnoughQueuePairs) {
    Profile profile = profile_from_yaml(kCx8Profile);
    EXPECT_TRUE(run_rule("net.qps-low", launch_from_yaml("job: {gpus: 511}"), profile).quiet());
    EXPECT_TRUE(
        run_rule("net.qps-low", launch_from_yaml("env: {NCCL_IB_QPS_PER_CONNECTION: '4'}\njob: {gpus: 512}"), profile)
            .quiet());
    EXPECT_TRUE(
        run_rule("net.qps-low", launch_from_yaml("env: {NCCL_IB_QPS_PER_CONNECTION: '8'}\njob: {gpus: 4096}"), profile)
            .quiet());
    EXPECT_TRUE(run_rule("net.qps-low",
                         launch_from_yaml("files: {/etc/nccl.conf: \"NCCL_IB_QPS_PER_CONNECTION=4 # Exemplar\\n\"}\n"
                                          "job: {gpus: 512}"),
                         profile)
                    .quiet());
    Profile slow = profile_from_yaml(
        "name: cx7\nnode: {ib_rate_gbps: 400}\n"
        "nccl: {qps_per_connection: {min: 4, min_total_gpus: 512, min_link_gbps: 800}}\n");
    EXPECT_TRUE(run_rule("net.qps-low", launch_from_yaml("job: {gpus: 2048}"), slow).quiet());
    // Profiles without a threshold keep the rule quiet.
    EXPECT_TRUE(run_rule("net.qps-low", launch_from_yaml(kCx8Node + "job: {gpus: 4096}")).quiet());
}

TEST(NetQpsLow, UnknownWhenTheJobSizeOrLinkRateIsUnknown) {
    auto no_job = run_rule("net.qps-low", launch_from_yaml(""), profile_from_yaml(kCx8Profile));
    ASSERT_TRUE(no_job.undecided());
    EXPECT_TRUE(mentions(reasons(no_job), "the job's GPU count is unknown"));
    // Already at the minimum: the job size does not matter.
    EXPECT_TRUE(run_rule("net.qps-low", launch_from_yaml("env: {NCCL_IB_QPS_PER_CONNECTION: '4'}"),
                         profile_from_yaml(kCx8Profile))
                    .quiet());

    Profile no_rate = profile_from_yaml("name: cx8\nnccl: {qps_per_connection: {min: 4}}\n");
    auto no_link = run_rule("net.qps-low", launch_from_yaml(kNode + "job: {gpus: 512}"), no_rate);
    ASSERT_TRUE(no_link.undecided());
    EXPECT_TRUE(mentions(reasons(no_link), "has no port rates"));
}

// ---------------------------------------------------------------------------
// net.socket-ifname-nomatch

TEST(NetSocketIfnameNomatch, FiresAndSuggestsInterfacesWithTheSameLetters) {
    auto result = run_rule("net.socket-ifname-nomatch", launch_from_yaml(kNode + "env: {NCCL_SOCKET_IFNAME: eth9}"));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.action, Action::block);
    EXPECT_EQ(f.message,
              "NCCL_SOCKET_IFNAME=eth9 matches none of the task's running interfaces (eth0, eth1, ib0): NCCL cannot "
              "bootstrap and communicator init fails");
    EXPECT_EQ(result.evidence("NCCL_SOCKET_IFNAME"), "eth9");
    EXPECT_EQ(result.evidence("interfaces"), "eth0, eth1, ib0");
    EXPECT_EQ(result.evidence("interfaces_source"), "hwloc fixture");
    EXPECT_EQ(result.set_env("NCCL_SOCKET_IFNAME"), "=eth0,eth1");
}

TEST(NetSocketIfnameNomatch, QuotedConfValueMatchesNothing) {
    auto result = run_rule("net.socket-ifname-nomatch",
                           launch_from_yaml(kNode + R"(files: {/etc/nccl.conf: "NCCL_SOCKET_IFNAME=\"eth0\"\n"})"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:1");
    EXPECT_TRUE(mentions(result.finding().message, "the quotes are part of the value"));
    EXPECT_EQ(result.set_env("NCCL_SOCKET_IFNAME"), "=eth0,eth1");
}

TEST(NetSocketIfnameNomatch, AnInterfaceThatIsDownDoesNotCount) {
    auto result =
        run_rule("net.socket-ifname-nomatch", launch_from_yaml(kNodeWithDownPort + "env: {NCCL_SOCKET_IFNAME: =ib1}"));
    ASSERT_TRUE(result.fired());
    EXPECT_TRUE(mentions(result.finding().message, "it matches only ib1, which is down"));
    EXPECT_TRUE(mentions(result.evidence("interfaces"), "ib1 (down)"));
    EXPECT_EQ(result.set_env("NCCL_SOCKET_IFNAME"), "=ib0");
}

TEST(NetSocketIfnameNomatch, TheContainerNamespaceDecidesNotTheHost) {
    // Inside a pod the task sees only its own netns: eth0 and lo.
    auto result = run_rule("net.socket-ifname-nomatch",
                           launch_from_yaml(kNode + "interfaces: [lo, eth0]\nenv: {NCCL_SOCKET_IFNAME: ib}"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("interfaces"), "lo, eth0");
    EXPECT_EQ(result.evidence("interfaces_source"), "test fixture");
    EXPECT_EQ(result.set_env("NCCL_SOCKET_IFNAME"), "=eth0");
}

TEST(NetSocketIfnameNomatch, ExcludingEverythingFiresWithNcclsOwnChoice) {
    auto result =
        run_rule("net.socket-ifname-nomatch", launch_from_yaml(kNode + "env: {NCCL_SOCKET_IFNAME: '^eth,ib'}"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.set_env("NCCL_SOCKET_IFNAME"), "=ib0");
}

TEST(NetSocketIfnameNomatch, QuietWhenAnyRunningInterfaceMatchesOrTheValueIsIgnored) {
    for (const char* value : {"eth", "=eth0", "ib0", "^docker,lo", "'eth0,eth9'", "e", "''"}) {
        auto result =
            run_rule("net.socket-ifname-nomatch", launch_from_yaml(kNode + "env: {NCCL_SOCKET_IFNAME: " + value + "}"));
        EXPECT_TRUE(result.quiet()) << value;
    }
    EXPECT_TRUE(run_rule("net.socket-ifname-nomatch", launch_from_yaml(kNode)).quiet());
}

TEST(NetSocketIfnameNomatch, UnknownWithoutTheTasksInterfaces) {
    auto result = run_rule("net.socket-ifname-nomatch", launch_from_yaml("env: {NCCL_SOCKET_IFNAME: eth0}"));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "no interfaces in the test fixture"));
}

// ---------------------------------------------------------------------------
// net.ib-port-degraded

TEST(NetIbPortDegraded, ADownPortOfAnHcaTheJobUsesBlocks) {
    auto result = run_rule("net.ib-port-degraded", launch_from_yaml(kNodeWithDownPort));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.action, Action::block);
    EXPECT_EQ(f.message,
              "mlx5_1 port 1 is DOWN, physical state Disabled: NCCL skips it and the job runs on fewer rails "
              "(selected by all HCAs (NCCL_IB_HCA unset))");
    EXPECT_EQ(result.evidence("hca"), "mlx5_1");
    EXPECT_EQ(result.evidence("port"), "1");
    EXPECT_EQ(result.evidence("state"), "DOWN");
    EXPECT_EQ(result.evidence("phys_state"), "Disabled");
    EXPECT_EQ(result.evidence("rate_gbps"), "10");
    EXPECT_EQ(result.evidence("link_layer"), "InfiniBand");
    EXPECT_TRUE(mentions(result.evidence("topology"), "h100-baremetal"));
    const RemediationOp* manual = op(f, Kind::manual);
    ASSERT_NE(manual, nullptr);
    EXPECT_TRUE(mentions(manual->text, "ibstat mlx5_1 1"));
    EXPECT_TRUE(result.unknowns.empty());
}

TEST(NetIbPortDegraded, OnlyHcasTheJobSelectsCount) {
    EXPECT_TRUE(
        run_rule("net.ib-port-degraded", launch_from_yaml(kNodeWithDownPort + "env: {NCCL_IB_HCA: =mlx5_0}")).quiet());
    EXPECT_TRUE(run_rule("net.ib-port-degraded", launch_from_yaml(kNodeWithDownPort),
                         profile_from_yaml("name: site\nnode: {hcas: [mlx5_0]}\n"))
                    .quiet());

    auto by_profile = run_rule("net.ib-port-degraded", launch_from_yaml(kNodeWithDownPort),
                               profile_from_yaml("name: site\nnode: {hcas: [mlx5_0, mlx5_1]}\n"));
    ASSERT_TRUE(by_profile.fired());
    EXPECT_EQ(by_profile.evidence("selected_by"), "profile 'site' node.hcas");

    auto by_filter = run_rule("net.ib-port-degraded", launch_from_yaml(kNodeWithDownPort + "env: {NCCL_IB_HCA: mlx5}"));
    ASSERT_TRUE(by_filter.fired());
    EXPECT_EQ(by_filter.evidence("selected_by"), "NCCL_IB_HCA=mlx5 (environment)");
}

TEST(NetIbPortDegraded, PortsBelowTheProfileRateAndPortsStuckInInitBlock) {
    Profile profile = profile_from_yaml("name: cx8\nnode: {ib_rate_gbps: 800}\n");
    auto result = run_rule("net.ib-port-degraded", launch_from_yaml(kCx8Node), profile);
    ASSERT_EQ(result.findings.size(), 2U);
    const Finding& slow = result.findings[0];
    EXPECT_EQ(slow.message,
              "mlx5_2 port 1 runs at 400 Gb/s, below the profile's 800 Gb/s: every transfer through it is capped "
              "(selected by all HCAs (NCCL_IB_HCA unset))");
    EXPECT_EQ(evidence(slow, "hca"), "mlx5_2");
    EXPECT_EQ(evidence(slow, "state"), "ACTIVE");
    EXPECT_EQ(evidence(slow, "rate_gbps"), "400");
    EXPECT_EQ(evidence(slow, "expected_rate_gbps"), "800");
    const Finding& init = result.findings[1];
    EXPECT_EQ(evidence(init, "hca"), "mlx5_3");
    EXPECT_EQ(evidence(init, "state"), "INIT");
    EXPECT_EQ(evidence(init, "phys_state"), "LinkUp");
    EXPECT_TRUE(mentions(init.message, "mlx5_3 port 1 is INIT"));
    EXPECT_TRUE(result.unknowns.empty());
}

TEST(NetIbPortDegraded, QuietOnHealthyPorts) {
    Profile profile = profile_from_yaml("name: cx8\nnode: {ib_rate_gbps: 800}\n");
    EXPECT_TRUE(
        run_rule("net.ib-port-degraded", launch_from_yaml(kCx8Node + "env: {NCCL_IB_HCA: '=mlx5_0,mlx5_1'}"), profile)
            .quiet());
    EXPECT_TRUE(run_rule("net.ib-port-degraded", launch_from_yaml(kNodeWithDownPort + "env: {NCCL_IB_HCA: '^mlx5_1'}"),
                         profile_from_yaml("name: cx7\nnode: {ib_rate_gbps: 400}\n"))
                    .quiet());
    EXPECT_TRUE(run_rule("net.ib-port-degraded", launch_from_yaml(kNode)).quiet());
    EXPECT_TRUE(run_rule("net.ib-port-degraded", launch_from_yaml(kDgx2)).quiet());
}

TEST(NetIbPortDegraded, UnknownRateWhenOnlyHwlocDescribesThePorts) {
    auto result = run_rule("net.ib-port-degraded", launch_from_yaml(kNode),
                           profile_from_yaml("name: cx7\nnode: {ib_rate_gbps: 400}\n"));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "mlx5_0:1"));
    EXPECT_TRUE(mentions(reasons(result), "does not give port rates"));
}

TEST(NetIbPortDegraded, UnknownWithoutTheNodeTopology) {
    auto result = run_rule("net.ib-port-degraded", launch_from_yaml(""));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "no node topology in the test fixture"));
}

// ---------------------------------------------------------------------------
// net.gdr-level-low

TEST(NetGdrLevelLow, FiresBelowPxb) {
    auto result = run_rule("net.gdr-level-low", launch_from_yaml("env: {NCCL_NET_GDR_LEVEL: PIX}"));
    ASSERT_TRUE(result.fired());
    const Finding& f = result.finding();
    EXPECT_EQ(f.action, Action::warn);
    EXPECT_EQ(f.message,
              "NCCL_NET_GDR_LEVEL=PIX is below NCCL's default PXB: GPUDirect RDMA is off for every GPU–NIC pair "
              "farther apart than PIX, so network traffic is staged through host memory");
    EXPECT_EQ(result.evidence("level"), "PIX");
    EXPECT_EQ(result.evidence("default_level"), "PXB");
    ASSERT_EQ(f.remediation.size(), 1U);
    EXPECT_EQ(f.remediation[0].kind, Kind::unset_env);
    EXPECT_EQ(f.remediation[0].name, "NCCL_NET_GDR_LEVEL");
}

TEST(NetGdrLevelLow, LegacyIntegersMapAsNcclGetLevelDoes) {
    auto one = run_rule("net.gdr-level-low", launch_from_yaml("env: {NCCL_NET_GDR_LEVEL: '1'}"));
    ASSERT_TRUE(one.fired());
    EXPECT_EQ(one.evidence("level"), "PIX");
    EXPECT_TRUE(mentions(one.finding().message, "NCCL_NET_GDR_LEVEL=1 (PIX)"));
    auto zero = run_rule("net.gdr-level-low", launch_from_yaml("env: {NCCL_NET_GDR_LEVEL: '0'}"));
    ASSERT_TRUE(zero.fired());
    EXPECT_EQ(zero.evidence("level"), "LOC");
    // 2 is PXB; 5 (older Azure scripts) and anything larger is SYS.
    for (const char* quiet : {"'2'", "'3'", "'5'", "'42'"}) {
        EXPECT_TRUE(
            run_rule("net.gdr-level-low", launch_from_yaml(std::string("env: {NCCL_NET_GDR_LEVEL: ") + quiet + "}"))
                .quiet())
            << quiet;
    }
}

TEST(NetGdrLevelLow, FromAConfFileTheEnvironmentRestoresNcclsDefault) {
    auto result =
        run_rule("net.gdr-level-low", launch_from_yaml(R"(files: {/etc/nccl.conf: "NCCL_NET_GDR_LEVEL=LOC\n"})"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("source"), "/etc/nccl.conf:1");
    EXPECT_EQ(result.set_env("NCCL_NET_GDR_LEVEL"), "P2C");
    EXPECT_TRUE(result.has_op(Kind::manual));
}

TEST(NetGdrLevelLow, OnGracePxbLosesGdrForC2cAttachedNics) {
    Profile grace = profile_from_yaml("name: gb200\nnode: {grace: true, mnnvl: true}\n");
    auto result = run_rule("net.gdr-level-low", launch_from_yaml("env: {NCCL_NET_GDR_LEVEL: PXB}"), grace);
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.evidence("default_level"), "P2C");
    EXPECT_TRUE(mentions(result.finding().message, "NICs reached through the Grace CPU (path P2C)"));
    // With NCCL_NET_GDR_C2C=0 NCCL's own default is PXB again.
    EXPECT_TRUE(
        run_rule("net.gdr-level-low", launch_from_yaml("env: {NCCL_NET_GDR_LEVEL: PXB, NCCL_NET_GDR_C2C: '0'}"), grace)
            .quiet());
    EXPECT_TRUE(run_rule("net.gdr-level-low", launch_from_yaml("env: {NCCL_NET_GDR_LEVEL: SYS}"), grace).quiet());
}

TEST(NetGdrLevelLow, QuietAtOrAboveTheDefaultAndForValuesNcclIgnores) {
    // Azure's AKS chart sets SYS "for MPI jobs": higher than the default, not lower.
    Environment aks = aks_nccl_env();
    ASSERT_EQ(aks.at("NCCL_NET_GDR_LEVEL"), "SYS");
    LaunchContext ctx = launch_from_yaml("");
    ctx.env = Fact<Environment>::known(aks, "k8s/aks-rdma-ib-chart/values.yaml");
    EXPECT_TRUE(run_rule("net.gdr-level-low", ctx).quiet());
    // "pix" is not a level NCCL knows (strcmp is case-sensitive): NCCL keeps its default.
    for (const char* value : {"PXB", "P2C", "PHB", "pix", "''"}) {
        EXPECT_TRUE(
            run_rule("net.gdr-level-low", launch_from_yaml(std::string("env: {NCCL_NET_GDR_LEVEL: ") + value + "}"))
                .quiet())
            << value;
    }
    EXPECT_TRUE(run_rule("net.gdr-level-low", launch_from_yaml("")).quiet());
}

TEST(NetGdrLevelLow, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto result = run_rule("net.gdr-level-low", without_env(launch_from_yaml("")));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "NCCL_NET_GDR_LEVEL may be set in the task environment"));
}

// ---------------------------------------------------------------------------
// net.gdr-read-off

TEST(NetGdrReadOff, FiresWhenNcclReadsZero) {
    auto result = run_rule("net.gdr-read-off", launch_from_yaml("env: {NCCL_NET_GDR_READ: '0'}"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.finding().action, Action::warn);
    EXPECT_EQ(result.finding().message,
              "NCCL_NET_GDR_READ=0 turns GPUDirect RDMA off on the send path: every network send is first copied from "
              "GPU to host memory");
    EXPECT_EQ(result.evidence("parsed"), "0");
    EXPECT_TRUE(result.has_op(Kind::unset_env));

    auto word = run_rule("net.gdr-read-off", launch_from_yaml("env: {NCCL_NET_GDR_READ: 'off'}"));
    ASSERT_TRUE(word.fired());
    EXPECT_EQ(word.evidence("NCCL_NET_GDR_READ"), "off");
    EXPECT_EQ(word.evidence("parsed"), "0");
}

TEST(NetGdrReadOff, FromAConfFileSetsNcclsAutomaticDefault) {
    auto result = run_rule("net.gdr-read-off", launch_from_yaml(R"(files: {/etc/nccl.conf: "NCCL_NET_GDR_READ=0\n"})"));
    ASSERT_TRUE(result.fired());
    EXPECT_EQ(result.set_env("NCCL_NET_GDR_READ"), "-2");
}

TEST(NetGdrReadOff, QuietOtherwise) {
    for (const char* value : {"'1'", "''", "'-2'"}) {
        EXPECT_TRUE(
            run_rule("net.gdr-read-off", launch_from_yaml(std::string("env: {NCCL_NET_GDR_READ: ") + value + "}"))
                .quiet())
            << value;
    }
    EXPECT_TRUE(run_rule("net.gdr-read-off", launch_from_yaml("")).quiet());
}

TEST(NetGdrReadOff, UnknownWhenTheTaskEnvironmentIsUnknown) {
    auto result = run_rule("net.gdr-read-off", without_env(launch_from_yaml("")));
    ASSERT_TRUE(result.undecided());
    EXPECT_TRUE(mentions(reasons(result), "NCCL_NET_GDR_READ"));
}

}  // namespace
}  // namespace launchguard
