#include "probe/process_probe.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace launchguard {
namespace {

const std::string kProc = LAUNCHGUARD_FIXTURES "/sysfs/h100-baremetal/proc";

// A procfs in a new temporary directory with process 7's limits file; the
// test writes its status file.
std::filesystem::path recorded_proc_of_pid_7() {
    char tmpl[] = "/tmp/lg-status-XXXXXX";
    const std::filesystem::path proc = ::mkdtemp(tmpl);
    std::filesystem::create_directories(proc / "7");
    std::ofstream(proc / "7" / "limits")
        << "Max locked memory         65536                65536                bytes\n";
    return proc;
}

TEST(ProcessProbeTest, AffinityFromRecordedStatus) {
    auto set = process_affinity(4242, kProc);
    ASSERT_TRUE(set.ok()) << set.error().to_string();
    EXPECT_EQ(set->to_list(), "0-1");
    EXPECT_FALSE(process_affinity(1, kProc).ok());
}

TEST(ProcessProbeTest, CurrentAffinityIsNotEmpty) {
    auto set = current_affinity();
    ASSERT_TRUE(set.ok()) << set.error().to_string();
    EXPECT_GE(set->count(), 1U);
}

TEST(ProcessProbeTest, MemlockLimit) {
    auto recorded = process_memlock(4242, kProc);
    ASSERT_TRUE(recorded.ok());
    ASSERT_TRUE(recorded->has_value());
    EXPECT_EQ(**recorded, 65536U);

    auto unlimited =
        parse_memlock_limit("Max locked memory         unlimited            unlimited            bytes\n", "limits");
    ASSERT_TRUE(unlimited.ok());
    EXPECT_FALSE(unlimited->has_value());
    auto bad = parse_memlock_limit("Max open files 1 1 files\nMax locked memory  lots  lots bytes\n", "limits");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().line, 2);
    EXPECT_TRUE(current_memlock().ok());
}

TEST(ProcessProbeTest, CapabilitiesDecodeByName) {
    auto caps = process_capabilities(4242, kProc);
    ASSERT_TRUE(caps.ok());
    EXPECT_EQ(*caps, std::vector<std::string>{"CAP_IPC_LOCK"});
    auto all = decode_capabilities((1ULL << 41) - 1);
    EXPECT_EQ(all.size(), 41U);
    EXPECT_EQ(all.front(), "CAP_CHOWN");
    EXPECT_EQ(all.back(), "CAP_CHECKPOINT_RESTORE");
    EXPECT_EQ(decode_capabilities(1ULL << 45), std::vector<std::string>{"CAP_45"});
    auto rooted = process_runs_as_root(4242, kProc);
    ASSERT_TRUE(rooted.ok());
    EXPECT_FALSE(*rooted);
}

// capget and the kernel's own CapEff line agree on this process, whatever
// it runs as (root in CI, a user elsewhere).
TEST(ProcessProbeTest, CurrentCapabilitiesAreTheKernelsCapEff) {
    auto from_capget = current_capabilities();
    ASSERT_TRUE(from_capget.ok()) << from_capget.error().to_string();
    auto from_procfs = process_capabilities(0);
    ASSERT_TRUE(from_procfs.ok()) << from_procfs.error().to_string();
    EXPECT_EQ(*from_capget, *from_procfs);
    ContainerFacts facts = probe_container("/", std::nullopt);
    ASSERT_TRUE(facts.capabilities.is_known());
    EXPECT_EQ(*facts.capabilities, *from_procfs);
    EXPECT_EQ(facts.capabilities.source(), "capget() of launchguard");
}

TEST(ProcessProbeTest, ContainerFactsFromRecordedProcess) {
    ContainerFacts facts = probe_container(LAUNCHGUARD_FIXTURES "/sysfs/h100-baremetal", 4242, kProc);
    // The fixture has no dev/shm: unknown, with the path in the reason.
    EXPECT_FALSE(facts.shm_bytes.is_known());
    EXPECT_NE(facts.shm_bytes.reason().find("dev/shm"), std::string::npos);
    ASSERT_TRUE(facts.memlock.is_known());
    EXPECT_EQ(facts.memlock.value(), std::optional<std::uint64_t>(65536));
    ASSERT_TRUE(facts.capabilities.is_known());
    EXPECT_EQ(facts.capabilities->size(), 1U);
    ASSERT_TRUE(facts.runs_as_root.is_known());
    EXPECT_FALSE(facts.runs_as_root.value());
}

// The status file is read once for the capabilities and the uid: a bad CapEff
// line leaves the uid known, and a missing file leaves both unknown, naming it.
TEST(ProcessProbeTest, OneStatusFileGivesCapabilitiesAndUidEachOnItsOwn) {
    const std::filesystem::path proc = recorded_proc_of_pid_7();
    std::ofstream(proc / "7" / "status") << "Name:\tpython\nUid:\t1000\t0\t1000\t1000\nCapEff:\tnot-hex\n";

    ContainerFacts facts = probe_container("/nonexistent", 7, proc.string());
    EXPECT_FALSE(facts.capabilities.is_known());
    EXPECT_NE(facts.capabilities.reason().find("CapEff 'not-hex' is not a hex mask"), std::string::npos)
        << facts.capabilities.reason();
    ASSERT_TRUE(facts.runs_as_root.is_known()) << facts.runs_as_root.reason();
    EXPECT_TRUE(facts.runs_as_root.value());  // the effective uid, the second field
    EXPECT_EQ(facts.runs_as_root.source(), (proc / "7" / "status").string() + " Uid");

    std::filesystem::remove(proc / "7" / "status");
    facts = probe_container("/nonexistent", 7, proc.string());
    EXPECT_FALSE(facts.capabilities.is_known());
    EXPECT_FALSE(facts.runs_as_root.is_known());
    EXPECT_NE(facts.runs_as_root.reason().find((proc / "7" / "status").string()), std::string::npos)
        << facts.runs_as_root.reason();
    std::filesystem::remove_all(proc);
}

// A caller that reads a status file once hands the text on:
// the container facts and the CPU mask come from that read, not from the
// file again (here removed after the read), and a failed read is the reason
// each of them gives.
TEST(ProcessProbeTest, AStatusReadOnceServesTheMaskCapabilitiesAndUid) {
    const std::filesystem::path proc = recorded_proc_of_pid_7();
    std::ofstream(proc / "7" / "status")
        << "Name:\tpython\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000004000\nCpus_allowed_list:\t2-3\n";
    const ProcessStatus status = read_process_status(7, proc.string());
    ASSERT_TRUE(status.text.ok()) << status.text.error().to_string();
    EXPECT_EQ(status.path, (proc / "7" / "status").string());
    std::filesystem::remove(proc / "7" / "status");

    auto mask = affinity_of(status);
    ASSERT_TRUE(mask.ok()) << mask.error().to_string();
    EXPECT_EQ(mask->to_list(), "2-3");
    ContainerFacts facts = probe_container("/nonexistent", 7, proc.string(), &status);
    ASSERT_TRUE(facts.capabilities.is_known()) << facts.capabilities.reason();
    EXPECT_EQ(facts.capabilities.value(), std::vector<std::string>{"CAP_IPC_LOCK"});
    ASSERT_TRUE(facts.runs_as_root.is_known()) << facts.runs_as_root.reason();
    EXPECT_FALSE(facts.runs_as_root.value());
    ASSERT_TRUE(facts.memlock.is_known()) << facts.memlock.reason();  // the limits file is still read

    const ProcessStatus missing = read_process_status(7, proc.string());
    EXPECT_FALSE(missing.text.ok());
    auto no_mask = affinity_of(missing);
    ASSERT_FALSE(no_mask.ok());
    EXPECT_NE(no_mask.error().to_string().find(missing.path), std::string::npos) << no_mask.error().to_string();
    facts = probe_container("/nonexistent", 7, proc.string(), &missing);
    EXPECT_FALSE(facts.capabilities.is_known());
    EXPECT_NE(facts.runs_as_root.reason().find(missing.path), std::string::npos) << facts.runs_as_root.reason();

    // A status file without the mask line names the line it lacks.
    std::ofstream(proc / "7" / "status") << "Name:\tpython\n";
    auto no_line = affinity_of(read_process_status(7, proc.string()));
    ASSERT_FALSE(no_line.ok());
    EXPECT_NE(no_line.error().to_string().find("no Cpus_allowed_list line"), std::string::npos)
        << no_line.error().to_string();
    std::filesystem::remove_all(proc);
}

}  // namespace
}  // namespace launchguard
