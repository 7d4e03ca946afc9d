// The node record as node-check prints and --record-dir writes it, and
// `launchguard fleet` over such records: the real executable against
// recorded nodes (hwloc XML + sysfs trees).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/launch_fixture.h"
#include "support/run_command.h"
#include "support/text.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

namespace json = boost::json;
using testing::cli;
using testing::fixture_path;
using testing::quote_arg;
using testing::read_all;
using testing::run_command;

std::string node_check_of(const std::string& sysfs_root, const std::string& extra = "") {
    return cli() + " node-check --no-topology-cache --hwloc-xml " +
           quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) + " --sysfs-root " + quote_arg(sysfs_root) +
           " " + extra;
}

// kvm-guest-2n with what names the node and its software added.
std::string named_node(const test::TempTree& tree, const std::string& name, const std::string& firmware) {
    const std::string root = tree.path(name);
    std::filesystem::copy(fixture_path("sysfs/kvm-guest-2n"), root,
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    tree.write(name + "/proc/sys/kernel/hostname", name + "\n");
    tree.write(name + "/proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
    tree.write(name + "/sys/module/nvidia/version", "550.54.15\n");
    tree.mkdir(name + "/sys/module/nvidia_peermem");
    tree.write(name + "/sys/class/infiniband/mlx5_0/fw_ver", firmware + "\n");
    tree.write(name + "/sys/class/infiniband/mlx5_0/hca_type", "MT4129\n");
    tree.write(name + "/etc/nccl.conf", "NCCL_TOPO_FILE=/opt/topo.xml\n");
    tree.write(name + "/opt/topo.xml", "<system version=\"1\"></system>\n");
    return root;
}

json::value fact(const json::object& record, const char* name) {
    return record.at("facts").as_object().at(name).as_object().at("value");
}

TEST(FleetCli, NodeRecordNamesTheNodeAndCarriesItsFacts) {
    test::TempTree tree;
    const std::string root = named_node(tree, "node-a1", "28.39.1002");
    auto result = run_command(node_check_of(root, "--format json --node-class gpu-a"));
    ASSERT_EQ(result.exit_code, 1) << result.err;  // hw.pcie-degraded blocks on this node
    const auto record = json::parse(result.out).as_object();
    EXPECT_EQ(record.at("schema").as_string(), "launchguard.node-record/v1");
    EXPECT_EQ(record.at("node").at("hostname").as_string(), "node-a1");
    EXPECT_EQ(record.at("node").at("class").as_string(), "gpu-a");
    EXPECT_EQ(record.at("health").as_string(), "degraded");
    EXPECT_EQ(record.at("checked_at").as_string().size(), 20U) << "2026-05-01T10:00:00Z";
    EXPECT_EQ(record.at("decision").as_string(), "block") << "the report's own fields are kept";
    EXPECT_FALSE(record.at("rules").as_array().empty());
    EXPECT_EQ(fact(record, "kernel.release"), "6.1.0-18-amd64");
    EXPECT_EQ(fact(record, "gpu.driver_version"), "550.54.15");
    EXPECT_EQ(fact(record, "gpu.peer_memory"), "nvidia_peermem");
    EXPECT_EQ(fact(record, "hca.firmware"), "28.39.1002");
    EXPECT_EQ(fact(record, "hca.models"), "MT4129");
    EXPECT_EQ(fact(record, "nccl.topo_file"), "/opt/topo.xml");
    EXPECT_EQ(std::string(fact(record, "nccl.topo_file_hash").as_string()).substr(0, 8), "fnv1a64:");
    EXPECT_TRUE(fact(record, "cpu.numa_balancing").is_bool());
    EXPECT_TRUE(fact(record, "inventory.numa_nodes").is_int64());
    for (const char* name : {"kernel.cmdline", "iommu.mode", "cpu.governor", "cpu.cstates", "pcie.links",
                             "inventory.gpus", "inventory.hcas", "inventory.active_ib_ports", "kernel.arch"}) {
        EXPECT_TRUE(record.at("facts").as_object().contains(name)) << name;
    }
    // Read from a recorded tree, the architecture is not guessed: null with the reason.
    const auto& arch = record.at("facts").at("kernel.arch").as_object();
    EXPECT_TRUE(arch.at("value").is_null());
    EXPECT_FALSE(arch.at("reason").as_string().empty());

    // Without the added files: null with reasons, never a guess.
    auto bare = run_command(node_check_of(fixture_path("sysfs/kvm-guest-2n"), "--format json"));
    const auto unnamed = json::parse(bare.out).as_object();
    EXPECT_TRUE(unnamed.at("node").at("hostname").is_null());
    EXPECT_FALSE(unnamed.at("node").at("hostname_reason").as_string().empty());
    EXPECT_EQ(unnamed.at("node").at("class").as_string(), "default");
    EXPECT_TRUE(unnamed.at("facts").at("kernel.release").at("value").is_null());
    EXPECT_FALSE(unnamed.at("facts").at("kernel.release").at("reason").as_string().empty());
}

TEST(FleetCli, RecordDirectoryFeedsTheFleetReport) {
    test::TempTree tree;
    tree.mkdir("records");
    const std::string records = tree.path("records");
    for (int i = 1; i <= 4; ++i) {
        const std::string name = "node-a" + std::to_string(i);
        const std::string root = named_node(tree, name, i == 3 ? "28.37.1014" : "28.39.1002");
        auto result = run_command(node_check_of(root, "--mode warn --record-dir " + quote_arg(records)));
        EXPECT_EQ(result.exit_code, 0) << result.err;
        EXPECT_NE(result.out.find("hw.pcie-degraded"), std::string::npos) << "text report as usual";
        ASSERT_TRUE(std::filesystem::exists(records + "/" + name + ".json")) << name;
    }
    tree.write("records/garbage.json", "{\"schema\": \"launchguard.node-record/v1\", \"node\": 3}\n");

    // Every node warns on something (the fixture is a KVM guest): below any threshold but 0.
    auto failing = run_command(cli() + " fleet " + quote_arg(records));
    EXPECT_EQ(failing.exit_code, 1) << failing.err;
    EXPECT_NE(failing.out.find("launchguard fleet: 4 nodes in 1 class, 0 conform (0.0%), threshold 95.0%: FAIL"),
              std::string::npos)
        << failing.out;
    EXPECT_NE(failing.out.find("hca.firmware: 28.39.1002 on 3 nodes; 28.37.1014 on 1: node-a3"), std::string::npos)
        << failing.out;
    EXPECT_NE(failing.out.find("garbage.json:1: node: missing or not an object"), std::string::npos) << failing.out;

    auto passing = run_command(cli() + " fleet --min-conformance 0 --format json " + quote_arg(records));
    EXPECT_EQ(passing.exit_code, 0) << passing.err;
    const auto report = json::parse(passing.out).as_object();
    EXPECT_EQ(report.at("verdict").as_string(), "pass");
    EXPECT_EQ(report.at("nodes").as_int64(), 4);
    EXPECT_EQ(report.at("errors").as_array().size(), 1U);
    EXPECT_NE(passing.err.find("garbage.json:1"), std::string::npos) << "named on stderr too";

    const std::string html = tree.path("fleet.html");
    auto page = run_command(cli() + " fleet --format html -o " + quote_arg(html) + " " + quote_arg(records));
    EXPECT_EQ(page.exit_code, 1);
    EXPECT_NE(read_all(html).find("<svg"), std::string::npos);

    EXPECT_EQ(run_command(cli() + " fleet " + quote_arg(tree.path("records/garbage.json"))).exit_code, 2)
        << "no record at all";
    EXPECT_EQ(run_command(cli() + " fleet --min-conformance 1.5 " + quote_arg(records)).exit_code, 2);
    EXPECT_EQ(run_command(cli() + " fleet " + quote_arg(tree.path("missing"))).exit_code, 2);
}

}  // namespace
}  // namespace launchguard
