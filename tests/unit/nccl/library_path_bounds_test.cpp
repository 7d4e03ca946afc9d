// A task's LD_LIBRARY_PATH is the user's: many aliases of one folder are one
// folder, and a path list past the check's bounds makes the check unknown
// with the reason instead of keeping it busy or growing it without end.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "context/memo_file_view.h"
#include "nccl/library_search.h"
#include "probe/enroot_view.h"
#include "probe/rooted_file_view.h"
#include "support/memory_file_view.h"
#include "unit/probe/temp_tree.h"

namespace launchguard::nccl {
namespace {

// lib/ with libibverbs/ of `files` providers, and `aliases` links to lib/.
void make_aliased_lib(const test::TempTree& tree, int files, int aliases) {
    for (int i = 0; i < files; ++i) tree.write("root/lib/libibverbs/libp" + std::to_string(i) + "-rdmav34.so", "");
    for (int i = 0; i < aliases; ++i) tree.symlink("/lib", "root/alias" + std::to_string(i));
}

// "/alias0:/alias1:..." for stem "/alias".
std::string numbered_path(const std::string& stem, int count) {
    std::string path;
    for (int i = 0; i < count; ++i) path += (i > 0 ? ":" : "") + stem + std::to_string(i);
    return path;
}

TEST(LibraryPathBounds, AliasesOfOneFolderAreOneLoaderDirectory) {
    test::TempTree tree;
    make_aliased_lib(tree, 1, 200);
    const RootedFileView rooted(tree.path("root"));
    const MemoFileView files(rooted);
    const Environment env{{"LD_LIBRARY_PATH", numbered_path("/alias", 200) + ":/lib"}};
    const auto dirs = loader_dirs(&env, &files, "x86_64").dirs;
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

// A container whose /opt/lib is a bind mount of the rootfs's own /lib: two
// paths that resolve to different places (/lib in the rootfs, the host's
// path of that folder) and are one folder, as the kernel names it.
struct BindMountAlias {
    test::TempTree tree;
    std::shared_ptr<const FileView> host = std::make_shared<RootedFileView>("/");
    EnrootFileView container;

    explicit BindMountAlias(int files)
        : container(tree.path("root"), host,
                    {EnrootMount{tree.path("root/lib"), "/opt/lib", "none", "bind", 1, "test fstab"}}) {
        make_aliased_lib(tree, files, 0);
    }
};

TEST(LibraryPathBounds, ABindMountAliasHasTheFoldersIdentity) {
    const BindMountAlias alias(1);
    const FileInfo direct = alias.container.stat("/lib/libibverbs");
    const FileInfo bound = alias.container.stat("/opt/lib/libibverbs");
    ASSERT_EQ(direct.kind, FileKind::directory);
    ASSERT_EQ(bound.kind, FileKind::directory);
    EXPECT_NE(direct.resolved_path, bound.resolved_path) << "the paths alone do not tell";
    ASSERT_TRUE(direct.identity.has_value());
    EXPECT_EQ(direct.identity, bound.identity);
    EXPECT_NE(alias.container.stat("/lib").identity, direct.identity);
}

TEST(LibraryPathBounds, ABindMountAliasIsListedOnce) {
    const BindMountAlias alias(100);
    // Room for one listing: a second would pass the bound and come back empty.
    const MemoFileView files(alias.container, kMaxLookupsPerCheck, 150);
    EXPECT_EQ(files.list("/lib/libibverbs").size(), 100U);
    EXPECT_EQ(files.list("/opt/lib/libibverbs").size(), 100U);
    EXPECT_EQ(files.stat("/opt/lib/libibverbs").kind, FileKind::directory);
}

TEST(LibraryPathBounds, ABindMountAliasIsOneLoaderDirectory) {
    const BindMountAlias alias(1);
    const MemoFileView files(alias.container);
    const Environment env{{"LD_LIBRARY_PATH", "/opt/lib:/lib"}};
    const auto dirs = loader_dirs(&env, &files, "x86_64").dirs;
    EXPECT_NE(std::find(dirs.begin(), dirs.end(), "/opt/lib"), dirs.end());
    EXPECT_EQ(std::find(dirs.begin(), dirs.end(), "/lib"), dirs.end()) << "/lib is /opt/lib again";
}

TEST(LibraryPathBounds, WithoutAnIdentityAFolderIsListedOnceByItsResolvedPath) {
    launchguard::testing::MemoryFileView view;  // a recorded view: paths, no identities
    for (int i = 0; i < 100; ++i) view.add_file("/lib/libibverbs/libp" + std::to_string(i) + "-rdmav34.so", "");
    view.add_file("/other/libibverbs/a.so", "");
    view.add_symlink("/alias", "/lib");
    ASSERT_FALSE(view.stat("/lib/libibverbs").identity.has_value());
    const MemoFileView files(view, kMaxLookupsPerCheck, 150);
    EXPECT_EQ(files.list("/lib/libibverbs").size(), 100U);
    EXPECT_EQ(files.list("/alias/libibverbs").size(), 100U);
    EXPECT_EQ(files.list("/other/libibverbs").size(), 1U) << "another folder is listed for itself";
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
    LoaderDirs dirs;
    for (int i = 0; i < 40; ++i) dirs.dirs.push_back("/d" + std::to_string(i));
    dirs.dirs.emplace_back("/late");
    const LibraryFound found = find_in_dirs(files, dirs, "libnccl.so.2");
    EXPECT_TRUE(found.path.empty()) << "the bound stops the search before /late";
    ASSERT_EQ(found.undecided.size(), 1U);
    EXPECT_NE(found.undecided[0].find("launchguard's bound of 30 paths per check"), std::string::npos)
        << found.undecided[0];
}

TEST(LibraryPathBounds, PastTheDirectoryBoundTheRestIsNamedOnceAsUnknown) {
    test::TempTree tree;
    tree.write("root/usr/lib/libnccl.so.2", "x");
    tree.write("root/d10/libearly.so", "x");
    const RootedFileView rooted(tree.path("root"));
    const MemoFileView files(rooted);
    const Environment env{{"LD_LIBRARY_PATH", numbered_path("/d", 300)}};
    const LoaderDirs dirs = loader_dirs(&env, &files, "x86_64");
    ASSERT_EQ(dirs.dirs.size(), kMaxLoaderDirsPerCheck);
    EXPECT_EQ(dirs.dirs.back(), "/d255");
    EXPECT_TRUE(dirs.not_searched.starts_with(kCheckBoundDetail)) << dirs.not_searched;
    // The other 44 entries and the seven x86_64 system directories.
    EXPECT_NE(dirs.not_searched.find("256 library directories per check was reached; 51 more"), std::string::npos)
        << dirs.not_searched;
    const LibraryFound found = find_in_dirs(files, dirs, "libnccl.so.2");
    EXPECT_TRUE(found.path.empty()) << "/usr/lib comes after entries that were not searched";
    ASSERT_EQ(found.undecided.size(), 1U);
    EXPECT_EQ(found.undecided[0], dirs.not_searched);
    EXPECT_EQ(find_in_dirs(files, dirs, "libearly.so").path, "/d10/libearly.so") << "within the bound: found";
}

TEST(LibraryPathBounds, AliasesAreFoldedBeforeTheDirectoryBound) {
    test::TempTree tree;
    make_aliased_lib(tree, 1, 300);
    tree.write("root/late/libnccl.so.2", "x");
    const RootedFileView rooted(tree.path("root"));
    const MemoFileView files(rooted);
    const Environment env{{"LD_LIBRARY_PATH", numbered_path("/alias", 300) + ":/late"}};
    const LoaderDirs dirs = loader_dirs(&env, &files, "x86_64");
    EXPECT_TRUE(dirs.not_searched.empty()) << dirs.not_searched;
    const LibraryFound found = find_in_dirs(files, dirs, "libnccl.so.2");
    EXPECT_EQ(found.path, "/late/libnccl.so.2");
    EXPECT_TRUE(found.undecided.empty());
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
