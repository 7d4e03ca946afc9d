// A task's LD_LIBRARY_PATH is the user's: many aliases of one folder are one
// folder, and a path list past the check's bounds makes the check unknown
// with the reason instead of keeping it busy or growing it without end.
#include <gtest/gtest.h>

#include <algorithm>

#include "context/memo_file_view.h"
#include "nccl/library_search.h"
#include "probe/rooted_file_view.h"
#include "unit/probe/temp_tree.h"

namespace launchguard::nccl {
namespace {

// lib/ with libibverbs/ of `files` providers, and `aliases` links to lib/.
void make_aliased_lib(const test::TempTree& tree, int files, int aliases) {
    for (int i = 0; i < files; ++i) tree.write("root/lib/libibverbs/libp" + std::to_string(i) + "-rdmav34.so", "");
    for (int i = 0; i < aliases; ++i) tree.symlink("/lib", "root/alias" + std::to_string(i));
}

std::string alias_path(int aliases) {
    std::string path;
    for (int i = 0; i < aliases; ++i) path += (i > 0 ? ":/alias" : "/alias") + std::to_string(i);
    return path;
}

TEST(LibraryPathBounds, AliasesOfOneFolderAreOneLoaderDirectory) {
    test::TempTree tree;
    make_aliased_lib(tree, 1, 200);
    const RootedFileView rooted(tree.path("root"));
    const MemoFileView files(rooted);
    const Environment env{{"LD_LIBRARY_PATH", alias_path(200) + ":/lib"}};
    const auto dirs = loader_dirs(&env, &files, "x86_64");
    EXPECT_EQ(std::count_if(dirs.begin(), dirs.end(), [](const std::string& d) { return d.starts_with("/alias"); }), 1);
    EXPECT_EQ(std::find(dirs.begin(), dirs.end(), "/lib"), dirs.end()) << "/lib is /alias0 again";
}

TEST(LibraryPathBounds, AFolderIsListedOnceHoweverManyPathsNameIt) {
    test::TempTree tree;
    make_aliased_lib(tree, 100, 50);
    const RootedFileView rooted(tree.path("root"));
    // Room for two listings: fifty would pass the bound if each alias were listed.
    const MemoFileView files(rooted, kMaxLookupsPerCheck, 250);
    for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(files.list("/alias" + std::to_string(i) + "/libibverbs").size(), 100U) << i;
    }
}

TEST(LibraryPathBounds, AListingPastTheBoundIsUnknownNotEmpty) {
    test::TempTree tree;
    make_aliased_lib(tree, 100, 0);
    tree.write("root/other/a.so", "");
    const RootedFileView rooted(tree.path("root"));
    const MemoFileView files(rooted, kMaxLookupsPerCheck, 50);
    EXPECT_TRUE(files.list("/lib/libibverbs").empty());
    const FileInfo info = files.stat("/lib/libibverbs");
    EXPECT_EQ(info.kind, FileKind::unknown);
    EXPECT_TRUE(info.detail.starts_with(kCheckBoundDetail)) << info.detail;
}

TEST(LibraryPathBounds, PastTheLookupBoundTheSearchIsUndecidedWithTheReason) {
    test::TempTree tree;
    tree.write("root/late/libnccl.so.2", "x");
    for (int i = 0; i < 40; ++i) tree.symlink("/nowhere" + std::to_string(i), "root/d" + std::to_string(i));
    const RootedFileView rooted(tree.path("root"));
    const MemoFileView files(rooted, 30);
    std::vector<std::string> dirs;
    for (int i = 0; i < 40; ++i) dirs.push_back("/d" + std::to_string(i));
    dirs.emplace_back("/late");
    const LibraryFound found = find_in_dirs(files, dirs, "libnccl.so.2");
    EXPECT_TRUE(found.path.empty()) << "the bound stops the search before /late";
    ASSERT_EQ(found.undecided.size(), 1U);
    EXPECT_NE(found.undecided[0].find("launchguard's bound of 30 paths per check"), std::string::npos)
        << found.undecided[0];
}

TEST(LibraryPathBounds, WithinTheBoundsTheLibraryIsFound) {
    test::TempTree tree;
    tree.write("root/late/libnccl.so.2", "x");
    const RootedFileView rooted(tree.path("root"));
    const MemoFileView files(rooted);
    const Environment env{{"LD_LIBRARY_PATH", "/a:/b:/late"}};
    const LibraryFound found = find_in_dirs(files, loader_dirs(&env, &files, "x86_64"), "libnccl.so.2");
    EXPECT_EQ(found.path, "/late/libnccl.so.2");
    EXPECT_TRUE(found.undecided.empty());
}

}  // namespace
}  // namespace launchguard::nccl
