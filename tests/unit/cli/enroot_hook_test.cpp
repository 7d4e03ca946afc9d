// `launchguard enroot-hook` as enroot runs it: ENROOT_ROOTFS, ENROOT_ENVIRON
// and ENROOT_MOUNTS in the environment, the real enroot mounts.d fstabs, a
// host tree holding Azure's /etc/nccl.conf and topology file, and a container
// rootfs without them (field case 4).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/launch_fixture.h"
#include "support/run_command.h"
#include "support/text.h"

namespace launchguard {
namespace {

namespace fs = std::filesystem;
using testing::fixture_path;
using testing::quote_arg;
using testing::read_all;
using testing::run_command;

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

class EnrootHookTest : public ::testing::Test {
protected:
    fs::path dir;
    fs::path host;
    fs::path rootfs;
    fs::path sysconf;
    fs::path environ_file;
    fs::path mounts_file;
    std::string rootfs_value;  // what ENROOT_ROOTFS says, when not `rootfs`

    void SetUp() override {
        char tmpl[] = "/tmp/lg-enroot-XXXXXX";
        dir = ::mkdtemp(tmpl);
        host = dir / "host";
        rootfs = dir / "rootfs";
        sysconf = dir / "etc-enroot";
        environ_file = dir / "run/environment";
        mounts_file = dir / "run/fstab";
        // The /etc/nccl.conf Azure's ndv5.sh writes, and the file it names.
        write(host / "etc/nccl.conf",
              "NCCL_IB_PCI_RELAXED_ORDERING=1\nNCCL_TOPO_FILE=/opt/microsoft/"
              "ndv5-topo.xml\nNCCL_IGNORE_CPU_AFFINITY=1\n");
        fs::create_directories(host / "opt/microsoft");
        fs::copy_file(fixture_path("nccl-topo/ndv5-topo.xml"), host / "opt/microsoft/ndv5-topo.xml");
        fs::create_directories(rootfs / "etc");
        fs::create_directories(sysconf / "mounts.d");
        fs::copy_file(fixture_path("enroot/10-system.fstab"), sysconf / "mounts.d/10-system.fstab");
        fs::copy_file(fixture_path("enroot/20-config.fstab"), sysconf / "mounts.d/20-config.fstab");
        write(environ_file, "PATH=/usr/local/bin:/usr/bin:/bin\nHOME=/root\n");
        write(mounts_file, "");
        // Node facts are not this test's subject: an empty sysfs leaves them unknown.
        fs::create_directories(dir / "sysfs");
    }
    void TearDown() override { fs::remove_all(dir); }

    testing::CommandResult hook(const std::string& args, const std::string& extra_env = "") {
        return run_command("timeout 60 env -i PATH=/usr/bin:/bin HOME=/root " + extra_env +
                           " ENROOT_ROOTFS=" + quote_arg(rootfs_value.empty() ? rootfs.string() : rootfs_value) +
                           " ENROOT_ENVIRON=" + quote_arg(environ_file.string()) + " ENROOT_MOUNTS=" +
                           quote_arg(mounts_file.string()) + " ENROOT_SYSCONF_PATH=" + quote_arg(sysconf.string()) +
                           " " + quote_arg(LAUNCHGUARD_CLI) + " enroot-hook --host-root " + quote_arg(host.string()) +
                           " --hwloc-xml " + quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) +
                           " --sysfs-root " + quote_arg((dir / "sysfs").string()) + " " + args);
    }
};

TEST_F(EnrootHookTest, PatchCarriesTheHostTopologyFileIntoTheContainer) {
    auto r = hook("--mode patch");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string mounts = read_all(mounts_file);
    const std::string environ = read_all(environ_file);
    EXPECT_NE(mounts.find("/opt/microsoft/ndv5-topo.xml /opt/microsoft/ndv5-topo.xml none x-create=file,bind,ro"),
              std::string::npos)
        << mounts << r.err;
    EXPECT_NE(environ.find("NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n"), std::string::npos) << environ;
    EXPECT_NE(r.err.find("launchguard: PATCH topo.not-propagated"), std::string::npos) << r.err;
    // The original lines are kept, in order, before what the hook appended.
    EXPECT_EQ(environ.rfind("PATH=/usr/local/bin:/usr/bin:/bin\nHOME=/root\n", 0), 0U);
}

TEST_F(EnrootHookTest, RunningTwiceAddsNothingTheSecondTime) {
    ASSERT_EQ(hook("--mode patch").exit_code, 0);
    const std::string environ_once = read_all(environ_file);
    const std::string mounts_once = read_all(mounts_file);
    auto second = hook("--mode patch");
    EXPECT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(read_all(environ_file), environ_once);
    EXPECT_EQ(read_all(mounts_file), mounts_once);
    EXPECT_EQ(second.err.find("added"), std::string::npos) << second.err;
}

TEST_F(EnrootHookTest, EnforcePatchesWhatItCanAndAllowsTheStart) {
    auto r = hook("--mode enforce");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(read_all(mounts_file).find("/opt/microsoft/ndv5-topo.xml"), std::string::npos);
}

TEST_F(EnrootHookTest, EnforceBlocksWhatItCannotFix) {
    // The image carries its own nccl.conf pointing at a topology file NCCL
    // rejects (the RCCL model file, version="2"): no mount can fix that.
    write(rootfs / "etc/nccl.conf", "NCCL_TOPO_FILE=/opt/rccl-topo.xml\n");
    fs::create_directories(rootfs / "opt");
    fs::copy_file(fixture_path("nccl-topo/rccl-topo_4p1h.xml"), rootfs / "opt/rccl-topo.xml");
    auto enforce = hook("--mode enforce");
    EXPECT_EQ(enforce.exit_code, 1) << enforce.err;
    EXPECT_EQ(read_all(mounts_file), "") << "a blocked start changes nothing";
    EXPECT_NE(enforce.err.find("BLOCK topo.nccl-rejects"), std::string::npos) << enforce.err;
    EXPECT_NE(enforce.err.find("container start blocked"), std::string::npos);

    auto patch = hook("--mode patch");
    EXPECT_EQ(patch.exit_code, 0) << patch.err;
    EXPECT_NE(patch.err.find("WARN topo.nccl-rejects"), std::string::npos) << patch.err;
}

TEST_F(EnrootHookTest, WarnModeChangesNothing) {
    auto r = hook("--mode warn");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(read_all(mounts_file), "");
    EXPECT_EQ(read_all(environ_file), "PATH=/usr/local/bin:/usr/bin:/bin\nHOME=/root\n");
    EXPECT_NE(r.err.find("WARN topo.not-propagated"), std::string::npos) << r.err;
}

TEST_F(EnrootHookTest, AnExistingMountOfTheFileIsEnough) {
    // Another hook (or the site's mounts.d) already binds the file.
    // Mount sources are host paths: the host view is rooted at --host-root.
    write(
        mounts_file,
        "/opt/microsoft/ndv5-topo.xml /opt/microsoft/ndv5-topo.xml none x-create=file,bind,ro,nosuid,nodev,private\n");
    write(environ_file,
          "PATH=/usr/bin:/bin\nNCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n"
          "NCCL_IB_PCI_RELAXED_ORDERING=1\nNCCL_IGNORE_CPU_AFFINITY=1\n");
    // The recorded node (the 32em64t hwloc XML) is not an ND v5, so the Azure
    // file drifts from it; drift has its own tests and is switched off here.
    write(dir / "no-drift.yaml", "name: no-drift\nrules:\n  topo.busid-drift: off\n");
    auto r = hook("--mode enforce --profile " + quote_arg((dir / "no-drift.yaml").string()));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("topo.not-propagated"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("added"), std::string::npos) << r.err;
}

TEST_F(EnrootHookTest, BadInputIsExitTwo) {
    auto r = run_command("env -i PATH=/usr/bin:/bin " + quote_arg(LAUNCHGUARD_CLI) + " enroot-hook --mode patch");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("ENROOT_ROOTFS is not set"), std::string::npos) << r.err;

    write(sysconf / "mounts.d/30-broken.fstab", "/only-one-field\n");
    auto fstab = hook("--mode patch");
    EXPECT_EQ(fstab.exit_code, 2);
    EXPECT_NE(fstab.err.find("30-broken.fstab:1"), std::string::npos) << fstab.err;
    EXPECT_EQ(read_all(mounts_file), "") << "no half-applied patch";
}

TEST_F(EnrootHookTest, ARootfsThatIsNotAnAbsoluteDirectoryIsExitTwoEvenInEnforceMode) {
    write(dir / "a-file", "x");
    for (const std::string& value :
         {std::string("relative/rootfs"), (dir / "a-file").string(), (dir / "absent").string()}) {
        rootfs_value = value;
        auto r = hook("--mode enforce");
        EXPECT_EQ(r.exit_code, 2) << value << ": " << r.err;
        EXPECT_NE(r.err.find("ENROOT_ROOTFS"), std::string::npos) << r.err;
        EXPECT_EQ(read_all(mounts_file), "") << value;
        EXPECT_EQ(read_all(environ_file), "PATH=/usr/local/bin:/usr/bin:/bin\nHOME=/root\n") << value;
    }
}

TEST_F(EnrootHookTest, AHostPathWithSpacesIsEncodedAndTheHookStaysIdempotent) {
    write(host / "etc/nccl.conf", "NCCL_TOPO_FILE=/opt/my topo/nd v5.xml\n");
    fs::create_directories(host / "opt/my topo");
    fs::copy_file(fixture_path("nccl-topo/ndv5-topo.xml"), host / "opt/my topo/nd v5.xml");
    auto first = hook("--mode patch");
    EXPECT_EQ(first.exit_code, 0) << first.err;
    const std::string mounts = read_all(mounts_file);
    EXPECT_NE(mounts.find("/opt/my\\040topo/nd\\040v5.xml /opt/my\\040topo/nd\\040v5.xml none "), std::string::npos)
        << mounts << first.err;
    auto second = hook("--mode patch");
    EXPECT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(read_all(mounts_file), mounts) << "the second run appended a duplicate";
}

TEST_F(EnrootHookTest, AFifoInMountsDIsExitTwoWithoutBlocking) {
    ASSERT_EQ(::mkfifo((sysconf / "mounts.d/30-fifo.fstab").c_str(), 0600), 0);
    auto r = hook("--mode patch");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("30-fifo.fstab: is a FIFO"), std::string::npos) << r.err;
    fs::remove(sysconf / "mounts.d/30-fifo.fstab");
    ASSERT_EQ(::mkfifo((dir / "run/fifo-environ").c_str(), 0600), 0);
    environ_file = dir / "run/fifo-environ";
    auto environ = hook("--mode patch");
    EXPECT_EQ(environ.exit_code, 2) << environ.err;
}

TEST_F(EnrootHookTest, WarnModeSurvivesAConfChainNamingAStackBreakingTopologyFile) {
    std::string comments;
    for (int i = 0; i < 30000; ++i) comments += "<!---->";
    write(rootfs / "opt/t.xml",
          comments + "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:00:1b.0\"/></cpu></system>\n");
    write(rootfs / "etc/site.conf", "NCCL_TOPO_FILE=/opt/t.xml\n");
    write(environ_file, "PATH=/usr/bin:/bin\nNCCL_CONF_FILE=/etc/site.conf\n");
    auto r = hook("--mode warn");
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(EnrootHookTest, TheHooksDScriptTakesItsSettingsFromTheSiteFileOnly) {
    write(sysconf / "launchguard.env", "LAUNCHGUARD_BIN=" + std::string(LAUNCHGUARD_CLI) + "\nLAUNCHGUARD_MODE=warn\n");
    // The job's own LAUNCHGUARD_MODE=patch must not override the site's warn.
    auto r = run_command(
        "env -i PATH=/usr/bin:/bin LAUNCHGUARD_MODE=patch ENROOT_ROOTFS=" + quote_arg(rootfs.string()) +
        " ENROOT_ENVIRON=" + quote_arg(environ_file.string()) + " ENROOT_MOUNTS=" + quote_arg(mounts_file.string()) +
        " ENROOT_SYSCONF_PATH=" + quote_arg(sysconf.string()) + " " +
        quote_arg(std::string(LAUNCHGUARD_SOURCE_DIR) + "/enroot-hook/90-launchguard.sh"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_all(mounts_file), "");
}

}  // namespace
}  // namespace launchguard
