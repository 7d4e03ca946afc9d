// The node facts behind the transport rules: PCIe extended capabilities from
// binary config space (ACS, ATS), NCCL's peer-memory markers, HCA drivers and
// uverbs devices, and the open-files limit of /proc/PID/limits.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "probe/process_probe.h"
#include "probe/sysfs_probe.h"
#include "support/pci_config.h"
#include "support/waiting_child.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

using testing::PciConfigSpace;

TEST(PciCapabilities, FindsAcsAndAtsControlBehindAnotherCapability) {
    PciCapabilities caps = parse_pci_capabilities(PciConfigSpace().aer().acs(0x001d).ats(0x8000).bytes());
    EXPECT_TRUE(caps.extended_readable);
    ASSERT_TRUE(caps.acs_control.has_value());
    EXPECT_EQ(*caps.acs_control, 0x001d);
    ASSERT_TRUE(caps.ats_control.has_value());
    EXPECT_EQ(*caps.ats_control, 0x8000);
}

TEST(PciCapabilities, NoCapabilityIsAbsentNotZero) {
    PciCapabilities caps = parse_pci_capabilities(PciConfigSpace().aer().bytes());
    EXPECT_TRUE(caps.extended_readable);
    EXPECT_FALSE(caps.acs_control.has_value());
    EXPECT_FALSE(caps.ats_control.has_value());
}

TEST(PciCapabilities, AnUnprivilegedReadOf64BytesIsNotReadable) {
    PciCapabilities caps = parse_pci_capabilities(PciConfigSpace().acs(0x001d).bytes(64));
    EXPECT_FALSE(caps.extended_readable);
    EXPECT_FALSE(caps.acs_control.has_value());
}

TEST(PciCapabilities, ALoopInTheListEnds) {
    // A header whose next pointer is itself: a broken device must not hang the probe.
    std::string space = PciConfigSpace().acs(0x0004).bytes();
    space[0x102] = static_cast<char>(0x01);  // version 1, next offset 0x100
    space[0x103] = static_cast<char>(0x10);
    PciCapabilities caps = parse_pci_capabilities(space);
    ASSERT_TRUE(caps.acs_control.has_value());
    EXPECT_EQ(*caps.acs_control, 0x0004);
}

TEST(PciCapabilities, ProbeReadsOnlyTheDevicesNamed) {
    test::TempTree tree;
    tree.write("sys/bus/pci/devices/0000:16:01.0/config", PciConfigSpace().acs(0x001d).bytes());
    tree.write("sys/bus/pci/devices/0000:17:00.0/config", PciConfigSpace().ats(0x0000).bytes());
    tree.write("sys/bus/pci/devices/0000:99:00.0/config", PciConfigSpace().acs(0x001d).bytes());
    auto caps = probe_pci_capabilities(tree.root(), {"0000:16:01.0", "0000:17:00.0", "0000:55:00.0"});
    ASSERT_TRUE(caps.is_known());
    EXPECT_EQ(caps->size(), 2U);  // 55:00.0 has no config; 99:00.0 was not asked for
    EXPECT_EQ(*caps->at("0000:16:01.0").acs_control, 0x001d);
    EXPECT_EQ(*caps->at("0000:17:00.0").ats_control, 0x0000);
}

TEST(PciCapabilities, UnknownWithoutPciDevices) {
    test::TempTree tree;
    tree.mkdir("sys/kernel");
    auto caps = probe_pci_capabilities(tree.root(), {"0000:16:01.0"});
    EXPECT_FALSE(caps.is_known());
    EXPECT_NE(caps.reason().find("sys/bus/pci/devices"), std::string::npos);
}

TEST(GpuDirectFacts, PeerMemoryMarkersDriverAndKernel) {
    test::TempTree tree;
    tree.write("sys/kernel/mm/memory_peers/nv_mem/version", "1.0\n");
    tree.write("sys/module/nvidia_peermem/version", "550.54.15\n");
    tree.write("proc/driver/nvidia/version",
               "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\nGCC version: 12\n");
    tree.write("proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
    NodeFacts facts = probe_node_facts(tree.root());
    ASSERT_TRUE(facts.gpudirect.is_known());
    ASSERT_EQ(facts.gpudirect->peer_memory.size(), 2U);
    EXPECT_NE(facts.gpudirect->peer_memory[0].find("memory_peers/nv_mem/version"), std::string::npos);
    EXPECT_TRUE(facts.gpudirect->peermem_module_loaded);
    EXPECT_EQ(*facts.gpudirect->nvidia_driver,
              "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build");
    EXPECT_EQ(*facts.gpudirect->kernel_release, "6.8.0-45-generic");
    // Node facts never read config space: only node checks ask for it.
    EXPECT_FALSE(facts.pci_capabilities.is_known());
}

TEST(GpuDirectFacts, NoPeerMemoryIsKnownEmptyNotUnknown) {
    test::TempTree tree;
    tree.mkdir("sys/kernel/mm");
    tree.mkdir("sys/module/mlx5_core");
    NodeFacts facts = probe_node_facts(tree.root());
    ASSERT_TRUE(facts.gpudirect.is_known());
    EXPECT_TRUE(facts.gpudirect->peer_memory.empty());
    EXPECT_FALSE(facts.gpudirect->peermem_module_loaded);
    EXPECT_FALSE(facts.gpudirect->nvidia_driver.has_value());
}

TEST(GpuDirectFacts, UnknownWithoutSysfs) {
    test::TempTree tree;
    tree.mkdir("etc");
    EXPECT_FALSE(probe_node_facts(tree.root()).gpudirect.is_known());
}

TEST(HcaDevices, DriverAndUverbsFromSysfs) {
    test::TempTree tree;
    tree.mkdir("sys/devices/pci0000:00/0000:17:00.0/infiniband_verbs/uverbs3");
    tree.mkdir("sys/bus/pci/drivers/mlx5_core");
    tree.symlink("../../../bus/pci/drivers/mlx5_core", "sys/devices/pci0000:00/0000:17:00.0/driver");
    tree.mkdir("sys/devices/pci0000:00/0000:17:00.0/infiniband/mlx5_3/ports/1");
    tree.write("sys/devices/pci0000:00/0000:17:00.0/infiniband/mlx5_3/ports/1/state", "4: ACTIVE\n");
    tree.symlink("../../devices/pci0000:00/0000:17:00.0/infiniband/mlx5_3", "sys/class/infiniband/mlx5_3");
    tree.symlink("../../../0000:17:00.0", "sys/devices/pci0000:00/0000:17:00.0/infiniband/mlx5_3/device");
    NodeTopology topo;
    augment_topology_from_sysfs(topo, tree.root());
    ASSERT_EQ(topo.nics.size(), 1U);
    EXPECT_EQ(topo.nics[0].hca, "mlx5_3");
    EXPECT_EQ(topo.nics[0].busid, "0000:17:00.0");
    EXPECT_EQ(topo.nics[0].driver, "mlx5_core");
    EXPECT_EQ(topo.nics[0].uverbs, std::vector<std::string>{"uverbs3"});
}

TEST(ProcessLimits, OpenFilesFromProcLimits) {
    const std::string limits =
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max open files            1024                 1048576              files     \n"
        "Max locked memory         8388608              8388608              bytes     \n";
    auto nofile = parse_process_limit(limits, "Max open files", "limits");
    ASSERT_TRUE(nofile);
    EXPECT_EQ(**nofile, 1024U);
    auto memlock = parse_memlock_limit(limits, "limits");
    ASSERT_TRUE(memlock);
    EXPECT_EQ(**memlock, 8388608U);
    EXPECT_FALSE(parse_process_limit("Max processes 10 10\n", "Max open files", "limits"));
}

TEST(ProcessLimits, OpenFilesOfThisProcessAreKnown) {
    ContainerFacts facts = probe_container("/", std::nullopt);
    EXPECT_TRUE(facts.open_files.is_known());
}

// A live process's limits come from prlimit(), and agree with its limits file,
// which a recorded procfs still serves.
TEST(ProcessLimits, ALiveProcessIsAskedWithPrlimitAndAgreesWithItsLimitsFile) {
    // Soft limits no test runner has by default, below any hard limit.
    test::WaitingChild limited([] {
        struct rlimit nofile {};
        struct rlimit memlock {};
        ::getrlimit(RLIMIT_NOFILE, &nofile);
        ::getrlimit(RLIMIT_MEMLOCK, &memlock);
        nofile.rlim_cur = std::min<rlim_t>(nofile.rlim_max, 77);
        memlock.rlim_cur = std::min<rlim_t>(memlock.rlim_max, 12288);
        return ::setrlimit(RLIMIT_NOFILE, &nofile) == 0 && ::setrlimit(RLIMIT_MEMLOCK, &memlock) == 0;
    });
    ASSERT_TRUE(limited.done());
    const pid_t child = limited.pid();
    ContainerFacts live = probe_container("/", child);
    ContainerFacts from_file = probe_container("/", child, "/proc/.");  // not the live "/proc": read the file
    limited.stop();

    ASSERT_TRUE(live.open_files.is_known()) << live.open_files.reason();
    ASSERT_TRUE(live.memlock.is_known()) << live.memlock.reason();
    EXPECT_EQ(live.open_files.value(), std::optional<std::uint64_t>(77));
    EXPECT_EQ(live.memlock.value(), std::optional<std::uint64_t>(12288));
    EXPECT_NE(live.open_files.source().find("prlimit(" + std::to_string(child) + ", RLIMIT_NOFILE)"), std::string::npos)
        << live.open_files.source();
    ASSERT_TRUE(from_file.open_files.is_known()) << from_file.open_files.reason();
    ASSERT_TRUE(from_file.memlock.is_known()) << from_file.memlock.reason();
    EXPECT_EQ(from_file.open_files.value(), live.open_files.value());
    EXPECT_EQ(from_file.memlock.value(), live.memlock.value());
    EXPECT_NE(from_file.open_files.source().find("/limits"), std::string::npos) << from_file.open_files.source();
}

// A process prlimit() cannot ask about (it is gone) is not taken as having no limits.
TEST(ProcessLimits, AProcessThatIsGoneHasUnknownLimits) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);
    ContainerFacts facts = probe_container("/", child);
    EXPECT_FALSE(facts.open_files.is_known());
    EXPECT_FALSE(facts.memlock.is_known());
}

}  // namespace
}  // namespace launchguard
