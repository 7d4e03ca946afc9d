// Views that share one store of file answers: what one looked at, the others
// are answered from, as a step's tasks are (context/shared_file_view.h).
#include "context/shared_file_view.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "probe/rooted_file_view.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

std::shared_ptr<const FileView> rooted(const std::string& root, const std::string& description) {
    return std::make_shared<RootedFileView>(root, description);
}

TEST(SharedAnswersFileView, ALaterViewIsAnsweredFromWhatTheFirstFound) {
    test::TempTree tree;
    tree.write("etc/nccl.conf", "NCCL_IB_HCA=mlx5\n");
    tree.write("usr/lib/libnccl.so.2", "x");
    auto answers = std::make_shared<SharedFileAnswers>();
    const SharedAnswersFileView first(rooted(tree.root(), "task 1"), answers);
    EXPECT_EQ(first.stat("/etc/nccl.conf").kind, FileKind::regular);
    EXPECT_EQ(first.read("/etc/nccl.conf", 4096).value(), "NCCL_IB_HCA=mlx5\n");
    EXPECT_EQ(first.list("/usr/lib"), std::vector<std::string>{"libnccl.so.2"});
    EXPECT_EQ(answers->answered_from_memory(), 0U);

    // The tree changes: a view sharing the answers sees it as the first did.
    std::filesystem::remove_all(tree.path("etc"));
    std::filesystem::remove_all(tree.path("usr"));
    const SharedAnswersFileView second(rooted(tree.root(), "task 2"), answers);
    EXPECT_EQ(second.stat("/etc/nccl.conf").kind, FileKind::regular);
    EXPECT_EQ(second.read("/etc/nccl.conf", 4096).value(), "NCCL_IB_HCA=mlx5\n");
    EXPECT_EQ(second.list("/usr/lib"), std::vector<std::string>{"libnccl.so.2"});
    EXPECT_EQ(answers->answered_from_memory(), 3U);
    EXPECT_EQ(second.describe(), "task 2");

    // One with answers of its own looks.
    const SharedAnswersFileView other(rooted(tree.root(), "task 3"), std::make_shared<SharedFileAnswers>());
    EXPECT_EQ(other.stat("/etc/nccl.conf").kind, FileKind::missing);
    EXPECT_TRUE(other.list("/usr/lib").empty());
}

// A read is kept by its bound too: a smaller bound may fail where a larger
// one read the file.
TEST(SharedAnswersFileView, AReadIsKeptForItsBound) {
    test::TempTree tree;
    tree.write("etc/nccl.conf", "NCCL_IB_HCA=mlx5\n");
    auto answers = std::make_shared<SharedFileAnswers>();
    const SharedAnswersFileView first(rooted(tree.root(), "task 1"), answers);
    ASSERT_TRUE(first.read("/etc/nccl.conf", 4096));
    const SharedAnswersFileView second(rooted(tree.root(), "task 2"), answers);
    EXPECT_FALSE(second.read("/etc/nccl.conf", 4));
}

// A failed read names the view it failed in, so each view answers its own:
// the second task's error names the second task.
TEST(SharedAnswersFileView, AFailedReadIsNotShared) {
    test::TempTree tree;
    auto answers = std::make_shared<SharedFileAnswers>();
    const SharedAnswersFileView first(rooted(tree.root(), "task 1"), answers);
    const auto missing = first.read("/etc/nccl.conf", 4096);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().to_string().find("task 1"), std::string::npos) << missing.error().to_string();

    tree.write("etc/nccl.conf", "NCCL_IB_HCA=mlx5\n");
    const SharedAnswersFileView second(rooted(tree.root(), "task 2"), answers);
    EXPECT_EQ(second.read("/etc/nccl.conf", 4096).value(), "NCCL_IB_HCA=mlx5\n");
    EXPECT_EQ(answers->answered_from_memory(), 0U);
}

}  // namespace
}  // namespace launchguard
