#include "probe/enroot_view.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/launch_fixture.h"
#include "support/memory_file_view.h"
#include "support/text.h"

namespace launchguard {
namespace {

using testing::read_all;

TEST(EnrootFstab, ParsesEnrootsOwnSystemMounts) {
    auto mounts = parse_enroot_fstab(read_all(testing::fixture_path("enroot/10-system.fstab")), "10-system.fstab");
    ASSERT_TRUE(mounts.ok()) << mounts.error().to_string();
    ASSERT_EQ(mounts->size(), 7U);
    const auto& var_run = (*mounts)[4];
    EXPECT_EQ(var_run.target, "/var/run");
    EXPECT_TRUE(var_run.is_tmpfs());
    EXPECT_EQ(var_run.line, 5);
    EXPECT_TRUE((*mounts)[6].is_bind());  // /dev/shm
}

TEST(EnrootFstab, MalformedLineNamesFileAndLine) {
    auto mounts = parse_enroot_fstab("# comment\n/a /b none bind\n/lonely\n", "site.fstab");
    ASSERT_FALSE(mounts.ok());
    EXPECT_EQ(mounts.error().to_string().rfind("site.fstab:3:", 0), 0U) << mounts.error().to_string();
}

TEST(EnrootEnviron, FollowsEnvfmt) {
    Environment env = parse_enroot_environ(
        "  PATH=/usr/bin\n# comment\n\nNCCL_DEBUG=\"INFO\"\nnot a line\nENROOT_ROOTFS=/x\nA=1\n=x\nA=2\n1BAD=x\n");
    EXPECT_EQ(env.at("PATH"), "/usr/bin");
    EXPECT_EQ(env.at("NCCL_DEBUG"), "INFO");  // surrounding quotes stripped
    EXPECT_EQ(env.at("A"), "2");              // last duplicate wins
    EXPECT_EQ(env.count("ENROOT_ROOTFS"), 0U);
    EXPECT_EQ(env.count("1BAD"), 0U);
    EXPECT_EQ(env.count(""), 0U);  // "=x" is dropped as envfmt drops it; the lines around it count
    EXPECT_EQ(env.size(), 3U);
}

class EnrootViewTest : public ::testing::Test {
protected:
    std::shared_ptr<testing::MemoryFileView> host = std::make_shared<testing::MemoryFileView>("host");
    std::string rootfs = testing::rootfs_with_ndv5_topology();

    void SetUp() override {
        host->add_file("/var/run/nvidia-topologyd/virtualTopology.xml", "<system version=\"1\"/>\n")
            .add_file("/etc/nccl.conf", "NCCL_TOPO_FILE=/opt/x.xml\n")
            .add_file("/srv/topo/ndv5.xml", "<system version=\"1\"/>\n");
    }
};

TEST_F(EnrootViewTest, TmpfsOverVarRunHidesTheDefaultTopologyPath) {
    auto mounts = parse_enroot_fstab(read_all(testing::fixture_path("enroot/10-system.fstab")), "10-system.fstab");
    EnrootFileView view(rootfs, host, *mounts);
    FileInfo info = view.stat("/var/run/nvidia-topologyd/virtualTopology.xml");
    EXPECT_EQ(info.kind, FileKind::missing);
    EXPECT_NE(info.detail.find("tmpfs"), std::string::npos);
    EXPECT_EQ(view.stat("/var/run").kind, FileKind::directory);
}

TEST_F(EnrootViewTest, RootfsFilesAndSymlinksResolveInsideTheRootfs) {
    EnrootFileView view(rootfs, host, {});
    EXPECT_EQ(view.stat("/opt/microsoft/ndv5/topo.xml").kind, FileKind::regular);
    // The container sees its own /etc/nccl.conf, not the host's.
    auto conf = view.read("/etc/nccl.conf", 4096);
    ASSERT_TRUE(conf.ok());
    EXPECT_NE(conf->find("/opt/microsoft/ndv5/topo.xml"), std::string::npos);
}

TEST_F(EnrootViewTest, BindMountsMapToTheHost) {
    auto mounts = parse_enroot_fstab(
        "/srv/topo/ndv5.xml /opt/topo.xml none x-create=file,bind,ro\n"
        "/srv/topo /mnt/topo none x-create=dir,bind,ro\n",
        "ENROOT_MOUNTS");
    EnrootFileView view(rootfs, host, *mounts);
    FileInfo file = view.stat("/opt/topo.xml");
    EXPECT_EQ(file.kind, FileKind::regular);
    EXPECT_NE(file.detail.find("bind-mounted from host /srv/topo/ndv5.xml"), std::string::npos);
    EXPECT_EQ(view.stat("/mnt/topo/ndv5.xml").kind, FileKind::regular);
    EXPECT_EQ(view.stat("/mnt/topo/other.xml").kind, FileKind::missing);
}

}  // namespace
}  // namespace launchguard
