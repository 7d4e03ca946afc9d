// The one bounded reader every input file goes through: special files are
// refused without blocking, and a file past the bound is an error that says
// so rather than a prefix.
#include "util/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "unit/probe/temp_tree.h"
#include "util/size_parser.h"

namespace launchguard {
namespace {

using test::TempTree;

// A read that blocks would hang the suite; the alarm turns it into a failure.
class ReaderTest : public ::testing::Test {
protected:
    void SetUp() override { ::alarm(20); }
    void TearDown() override { ::alarm(0); }
    TempTree tree;
};

TEST_F(ReaderTest, RefusesAFifoWithoutBlocking) {
    ASSERT_EQ(::mkfifo(tree.path("fifo").c_str(), 0600), 0);
    auto text = read_text_file(tree.path("fifo"));
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.error().file, tree.path("fifo"));
    EXPECT_NE(text.error().message.find("is a FIFO"), std::string::npos) << text.error().message;
}

TEST_F(ReaderTest, RefusesASymlinkToDevZeroAndNamesItsTarget) {
    tree.symlink("/dev/zero", "topo.xml");
    auto text = read_text_file(tree.path("topo.xml"));
    ASSERT_FALSE(text.ok());
    EXPECT_NE(text.error().message.find("character device (a symlink to /dev/zero)"), std::string::npos)
        << text.error().message;
}

TEST_F(ReaderTest, RefusesADirectory) {
    tree.mkdir("dir");
    auto text = read_text_file(tree.path("dir"));
    ASSERT_FALSE(text.ok());
    EXPECT_NE(text.error().message.find("is a directory"), std::string::npos) << text.error().message;
}

TEST_F(ReaderTest, NamesTheReasonAFileCannotBeOpened) {
    auto text = read_text_file(tree.path("absent"));
    ASSERT_FALSE(text.ok());
    EXPECT_NE(text.error().message.find("No such file"), std::string::npos) << text.error().message;
}

TEST_F(ReaderTest, AFileAtTheBoundIsReadWhole) {
    tree.write("exact", std::string(1000, 'x'));
    auto text = read_text_file(tree.path("exact"), 1000);
    ASSERT_TRUE(text.ok()) << text.error().to_string();
    EXPECT_EQ(text->size(), 1000U);
}

TEST_F(ReaderTest, AFilePastTheBoundIsAnErrorNotAPrefix) {
    tree.write("big", std::string(1001, 'x'));
    auto text = read_text_file(tree.path("big"), 1000);
    ASSERT_FALSE(text.ok());
    EXPECT_NE(text.error().message.find("larger than the 1000 bytes launchguard reads"), std::string::npos)
        << text.error().message;
}

TEST_F(ReaderTest, ProcfsFilesThatReportSizeZeroAreReadAndStillBounded) {
    auto whole = read_text_file("/proc/self/status");
    ASSERT_TRUE(whole.ok()) << whole.error().to_string();
    EXPECT_NE(whole->find("Pid:"), std::string::npos);
    auto bounded = read_text_file("/proc/self/status", 16);
    ASSERT_FALSE(bounded.ok());
    EXPECT_NE(bounded.error().message.find("more than 16 bytes"), std::string::npos) << bounded.error().message;
}

TEST_F(ReaderTest, NoFollowRefusesALinkAsTheLastComponent) {
    tree.write("real", "x");
    tree.symlink(tree.path("real"), "link");
    EXPECT_TRUE(read_text_file(tree.path("link")).ok());
    EXPECT_FALSE(read_text_file(tree.path("link"), kMaxInputFileBytes, FollowLinks::no).ok());
}

TEST(DescribeSize, UsesTheLargestExactUnit) {
    EXPECT_EQ(format_byte_size(64U << 20), "64 MiB");
    EXPECT_EQ(format_byte_size(4096), "4 KiB");
    EXPECT_EQ(format_byte_size(1001), "1001 bytes");
}

}  // namespace
}  // namespace launchguard
