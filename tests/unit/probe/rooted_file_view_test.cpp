#include "probe/rooted_file_view.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

class RootedFileViewTest : public ::testing::Test {
protected:
    void SetUp() override {
        tree.write("opt/topo/ndv5-topo.xml", "<system version=\"1\"/>\n");
        tree.write("etc/nccl.conf", "NCCL_DEBUG=INFO\n");
        // An absolute link: inside the container it must resolve inside the rootfs.
        tree.symlink("/opt/topo/ndv5-topo.xml", "opt/microsoft/topo.xml");
        // Relative link climbing above the root: ".." stops at the root.
        tree.symlink("../../../../../../opt/topo/ndv5-topo.xml", "var/lib/escape.xml");
        tree.symlink("/var/run/nvidia-topologyd/virtualTopology.xml", "opt/dangling.xml");
        tree.symlink("/opt/topo", "opt/topolink");
        tree.symlink("loop-b", "opt/loop-a");
        tree.symlink("loop-a", "opt/loop-b");
    }
    test::TempTree tree;
};

TEST_F(RootedFileViewTest, RegularFileHasSizeAndResolvedPath) {
    RootedFileView view(tree.root());
    FileInfo info = view.stat("/etc/nccl.conf");
    EXPECT_EQ(info.kind, FileKind::regular);
    EXPECT_EQ(info.size, 16U);
    EXPECT_EQ(info.resolved_path, "/etc/nccl.conf");
}

TEST_F(RootedFileViewTest, AbsoluteSymlinkIsReRootedInsideTheView) {
    RootedFileView view(tree.root());
    FileInfo info = view.stat("/opt/microsoft/topo.xml");
    EXPECT_EQ(info.kind, FileKind::regular);
    EXPECT_EQ(info.resolved_path, "/opt/topo/ndv5-topo.xml");
}

TEST_F(RootedFileViewTest, DotDotCannotEscapeTheRoot) {
    RootedFileView view(tree.root());
    EXPECT_EQ(view.stat("/var/lib/escape.xml").resolved_path, "/opt/topo/ndv5-topo.xml");
    EXPECT_EQ(view.stat("/../../etc/nccl.conf").kind, FileKind::regular);
    EXPECT_EQ(view.stat("/../../etc/nccl.conf").resolved_path, "/etc/nccl.conf");
}

TEST_F(RootedFileViewTest, DanglingSymlinkIsNotMissing) {
    RootedFileView view(tree.root());
    FileInfo info = view.stat("/opt/dangling.xml");
    EXPECT_EQ(info.kind, FileKind::dangling_symlink);
    EXPECT_NE(info.detail.find("/var/run/nvidia-topologyd"), std::string::npos) << info.detail;
    EXPECT_EQ(view.stat("/opt/nothing.xml").kind, FileKind::missing);
    // A missing file below a good directory link is missing, not dangling.
    EXPECT_EQ(view.stat("/opt/topolink/absent.xml").kind, FileKind::missing);
    EXPECT_EQ(view.stat("/etc/nccl.conf/child").kind, FileKind::missing);
}

TEST_F(RootedFileViewTest, DirectoriesThroughLinks) {
    RootedFileView view(tree.root());
    EXPECT_EQ(view.stat("/opt/topo").kind, FileKind::directory);
    FileInfo info = view.stat("/opt/topolink");
    EXPECT_EQ(info.kind, FileKind::directory);
    EXPECT_EQ(info.resolved_path, "/opt/topo");
    EXPECT_EQ(view.stat("/").kind, FileKind::directory);
    EXPECT_EQ(view.list("/opt/topolink"), std::vector<std::string>{"ndv5-topo.xml"});
    EXPECT_TRUE(view.list("/missing").empty());
}

TEST_F(RootedFileViewTest, SymlinkLoopStopsWithAReason) {
    RootedFileView view(tree.root());
    FileInfo info = view.stat("/opt/loop-a");
    EXPECT_EQ(info.kind, FileKind::unreadable);
    EXPECT_NE(info.detail.find("40"), std::string::npos) << info.detail;
}

TEST_F(RootedFileViewTest, FortyLinksInAPathResolveAndFortyOneDoNot) {
    // Linux's MAXSYMLINKS: a path may pass through 40 links, and no more.
    tree.symlink("/opt/topo", "chain/c40");
    for (int i = 1; i < 40; ++i) tree.symlink("/chain/c" + std::to_string(i + 1), "chain/c" + std::to_string(i));
    RootedFileView view(tree.root());
    const FileInfo forty = view.stat("/chain/c1");
    EXPECT_EQ(forty.kind, FileKind::directory) << forty.detail;
    EXPECT_EQ(forty.resolved_path, "/opt/topo");
    const FileInfo through = view.stat("/chain/c1/ndv5-topo.xml");
    EXPECT_EQ(through.kind, FileKind::regular) << "the file itself is no link";
    tree.symlink("/chain/c1", "chain/c0");
    const FileInfo over = view.stat("/chain/c0");
    EXPECT_EQ(over.kind, FileKind::unreadable);
    EXPECT_NE(over.detail.find("more than 40 symlinks"), std::string::npos) << over.detail;
}

TEST_F(RootedFileViewTest, AFileCarriesItsDeviceAndInode) {
    RootedFileView view(tree.root());
    struct stat st {};
    ASSERT_EQ(::stat(tree.path("opt/topo").c_str(), &st), 0);
    const FileInfo direct = view.stat("/opt/topo");
    ASSERT_TRUE(direct.identity.has_value());
    EXPECT_EQ(direct.identity->device, static_cast<std::uint64_t>(st.st_dev));
    EXPECT_EQ(direct.identity->inode, static_cast<std::uint64_t>(st.st_ino));
    EXPECT_EQ(view.stat("/opt/topolink").identity, direct.identity) << "a link reaches the same folder";
    EXPECT_FALSE(view.stat("/opt/missing").identity.has_value());
}

TEST_F(RootedFileViewTest, UnreadableFile) {
    tree.write("etc/secret.conf", "x");
    ASSERT_EQ(::chmod(tree.path("etc/secret.conf").c_str(), 0), 0);
    RootedFileView view(tree.root());
    if (::geteuid() == 0) {
        // root reads a mode-000 file anyway, so the task would too: only the
        // "unreadable" expectation is skipped, not the test.
        EXPECT_EQ(view.stat("/etc/secret.conf").kind, FileKind::regular);
    } else {
        EXPECT_EQ(view.stat("/etc/secret.conf").kind, FileKind::unreadable);
        EXPECT_FALSE(view.read("/etc/secret.conf").ok());
    }
}

TEST_F(RootedFileViewTest, ReadHonoursTheCapAndNamesThePathOnError) {
    RootedFileView view(tree.root());
    auto full = view.read("/etc/nccl.conf");
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(*full, "NCCL_DEBUG=INFO\n");
    // Past the cap an error, never a prefix that would be judged as the file.
    auto capped = view.read("/etc/nccl.conf", 4);
    ASSERT_FALSE(capped.ok());
    EXPECT_EQ(capped.error().file, "/etc/nccl.conf");
    EXPECT_NE(capped.error().message.find("larger than the 4 bytes"), std::string::npos) << capped.error().message;
    auto bad = view.read("/opt/dangling.xml");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().file, "/opt/dangling.xml");
    EXPECT_NE(bad.error().message.find("dangling"), std::string::npos);
    EXPECT_FALSE(view.read("/opt/topo").ok());
}

TEST_F(RootedFileViewTest, DescribeNamesTheRoot) {
    EXPECT_EQ(RootedFileView(tree.root() + "/").describe(), "filesystem rooted at " + tree.root());
    EXPECT_EQ(RootedFileView("/").describe(), "filesystem rooted at /");
    EXPECT_EQ(RootedFileView(tree.root(), "container rootfs pyxis_42").describe(), "container rootfs pyxis_42");
}

TEST(FileKindTest, NamesEveryKind) {
    EXPECT_EQ(to_string(FileKind::dangling_symlink), "dangling symlink");
    EXPECT_EQ(to_string(FileKind::regular), "regular file");
    EXPECT_EQ(to_string(FileKind::unknown), "unknown");
}

TEST_F(RootedFileViewTest, AFiveMebibyteFileIsReadWholeNotCutAtTheOldFourMebibyteMark) {
    // A valid topology file padded with a long comment: cut at 4 MiB it read
    // as "unterminated comment" and blocked a launch NCCL accepts.
    const std::string text = "<!--" + std::string(5U << 20, 'x') + "-->\n<system version=\"1\"/>\n";
    tree.write("opt/big.xml", text);
    RootedFileView view(tree.root());
    auto read = view.read("/opt/big.xml");
    ASSERT_TRUE(read.ok()) << read.error().to_string();
    EXPECT_EQ(read->size(), text.size());
}

TEST_F(RootedFileViewTest, AFilePastTheBoundIsAnErrorThatSaysSo) {
    tree.write("opt/big.xml", std::string(2048, 'x'));
    RootedFileView view(tree.root());
    auto read = view.read("/opt/big.xml", 1024);
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.error().message.find("larger than the 1 KiB launchguard reads"), std::string::npos)
        << read.error().message;
}

TEST_F(RootedFileViewTest, AFifoInTheRootIsRefusedWithoutBlocking) {
    ::alarm(20);  // a blocking open would hang the suite: fail instead
    ASSERT_EQ(::mkfifo(tree.path("etc/fifo.conf").c_str(), 0600), 0);
    RootedFileView view(tree.root());
    auto read = view.read("/etc/fifo.conf");
    ::alarm(0);
    ASSERT_FALSE(read.ok());
}

TEST_F(RootedFileViewTest, ADanglingLinkIsNamedByItsWholeTarget) {
    // The container has no /dev/zero: the link dangles, and says to what.
    tree.symlink("/dev/zero", "opt/zero.xml");
    RootedFileView view(tree.root());
    FileInfo info = view.stat("/opt/zero.xml");
    EXPECT_EQ(info.kind, FileKind::dangling_symlink);
    EXPECT_EQ(info.resolved_path, "/dev/zero");
}

// A view remembers the directories on the way to a path (a task check pays
// for every lstat), never the last component: a file that appears or goes
// away is seen, and a link on the way is read each time.
TEST_F(RootedFileViewTest, RemembersDirectoriesOnTheWayButNeverTheFileItself) {
    RootedFileView view(tree.root());
    EXPECT_EQ(view.stat("/etc/nccl.conf").kind, FileKind::regular);
    EXPECT_EQ(view.stat("/etc/late.conf").kind, FileKind::missing);
    tree.write("etc/late.conf", "NCCL_DEBUG=WARN\n");
    EXPECT_EQ(view.stat("/etc/late.conf").kind, FileKind::regular);
    std::filesystem::remove(tree.root() + "/etc/nccl.conf");
    EXPECT_EQ(view.stat("/etc/nccl.conf").kind, FileKind::missing);
    // Through a link on the way: /opt/topolink -> /opt/topo, re-read each time.
    EXPECT_EQ(view.stat("/opt/topolink/ndv5-topo.xml").resolved_path, "/opt/topo/ndv5-topo.xml");
    EXPECT_EQ(view.stat("/opt/topolink/ndv5-topo.xml").kind, FileKind::regular);
    // A directory that did not exist on the way stays missing for this view;
    // a new view sees it.
    EXPECT_EQ(view.stat("/srv/data/x").kind, FileKind::missing);
    tree.write("srv/data/x", "x");
    EXPECT_EQ(view.stat("/srv/data/x").kind, FileKind::missing);
    EXPECT_EQ(RootedFileView(tree.root()).stat("/srv/data/x").kind, FileKind::regular);
}

// A view looks things up from its root's directory, opened at its first
// lookup: the tree it opened is the one it sees, even when the root's path
// names another tree afterwards (as /proc/PID/root would if the task moved).
// A root that cannot be opened is a view in which nothing exists.
TEST_F(RootedFileViewTest, LooksUpFromTheRootItOpenedFirst) {
    RootedFileView view(tree.root());
    EXPECT_EQ(view.stat("/etc/nccl.conf").kind, FileKind::regular);
    const std::string moved = tree.root() + "-moved";
    std::filesystem::rename(tree.root(), moved);
    std::filesystem::create_directories(tree.root() + "/etc");  // another tree at the old path
    EXPECT_EQ(view.stat("/etc/nccl.conf").kind, FileKind::regular);
    EXPECT_EQ(view.stat("/opt/microsoft/topo.xml").resolved_path, "/opt/topo/ndv5-topo.xml");
    EXPECT_EQ(view.list("/etc"), std::vector<std::string>{"nccl.conf"});
    tree.write("etc/nccl.conf", "NCCL_DEBUG=WARN\n");  // in the tree now at the old path
    auto text = view.read("/etc/nccl.conf");
    ASSERT_TRUE(text.ok()) << text.error().to_string();
    EXPECT_EQ(*text, "NCCL_DEBUG=INFO\n");
    EXPECT_EQ(RootedFileView(tree.root()).read("/etc/nccl.conf").value(), "NCCL_DEBUG=WARN\n");
    std::filesystem::remove_all(tree.root());
    std::filesystem::rename(moved, tree.root());

    RootedFileView nowhere(tree.root() + "/no-such-root");
    const FileInfo info = nowhere.stat("/etc/nccl.conf");
    EXPECT_EQ(info.kind, FileKind::missing);
    EXPECT_EQ(info.resolved_path, "/etc");
    EXPECT_TRUE(nowhere.list("/").empty());
}

}  // namespace
}  // namespace launchguard
