#include "nccl/library_search.h"

#include <gtest/gtest.h>

#include "support/memory_file_view.h"

namespace launchguard::nccl {
namespace {

using launchguard::testing::MemoryFileView;

TEST(LibrarySearch, VersionsFromFileNames) {
    EXPECT_EQ(version_from_file_name("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"), (Version{2, 21, 5}));
    EXPECT_EQ(version_from_file_name("libnccl.so.2.27"), (Version{2, 27, 0}));
    EXPECT_FALSE(version_from_file_name("libnccl.so.2").has_value());
    EXPECT_FALSE(version_from_file_name("libnccl.so").has_value());
    EXPECT_FALSE(version_from_file_name("libnccl-net.so.2.21.5").has_value());
    EXPECT_FALSE(version_from_file_name("libnccl.so.2.x.5").has_value());
    EXPECT_LT((Version{2, 26, 9}), (Version{2, 27, 3}));
    EXPECT_EQ((Version{2, 27, 3}).to_string(), "2.27.3");
}

TEST(LibrarySearch, LoaderDirsInOrderWithoutRepeats) {
    MemoryFileView view;
    view.add_file("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n/opt/a\n")
        .add_file("/etc/ld.so.conf.d/cuda.conf", "/usr/local/cuda/lib64\n/opt/a\n")
        .add_file("/etc/ld.so.conf.d/ignored.txt", "/nope\n");
    Environment env{{"LD_LIBRARY_PATH", "/opt/nccl/lib::/usr/lib"}};
    const auto dirs = loader_dirs(&env, &view, "").dirs;
    ASSERT_GE(dirs.size(), 4U);
    EXPECT_EQ(dirs[0], "/opt/nccl/lib");
    EXPECT_EQ(dirs[1], "/usr/lib");
    EXPECT_EQ(dirs[2], "/opt/a");
    EXPECT_EQ(dirs[3], "/usr/local/cuda/lib64");
    EXPECT_EQ(std::count(dirs.begin(), dirs.end(), "/usr/lib"), 1);
    EXPECT_EQ(std::count(dirs.begin(), dirs.end(), "/nope"), 0);
}

TEST(LibrarySearch, LoaderDirsLeaveOutTheOtherArchitecture) {
    MemoryFileView view;
    view.add_file("/etc/ld.so.conf.d/efa.conf", "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu\n/opt/x86_64-linux-gnu\n");
    Environment env{{"LD_LIBRARY_PATH", "/opt/nccl/lib/aarch64-linux-gnu"}};
    auto has = [](const std::vector<std::string>& dirs, const std::string& dir) {
        return std::find(dirs.begin(), dirs.end(), dir) != dirs.end();
    };
    const auto x86 = loader_dirs(&env, &view, "x86_64").dirs;
    for (const auto& dir : x86) EXPECT_FALSE(dir.ends_with("aarch64-linux-gnu")) << dir;
    EXPECT_TRUE(has(x86, "/usr/lib/x86_64-linux-gnu"));
    EXPECT_TRUE(has(x86, "/opt/x86_64-linux-gnu"));
    const auto arm = loader_dirs(&env, &view, "aarch64").dirs;
    for (const auto& dir : arm) EXPECT_FALSE(dir.ends_with("x86_64-linux-gnu")) << dir;
    EXPECT_TRUE(has(arm, "/opt/nccl/lib/aarch64-linux-gnu"));
    EXPECT_TRUE(has(arm, "/usr/lib/aarch64-linux-gnu"));
    // An unknown architecture keeps both.
    const auto unknown = loader_dirs(&env, &view, "").dirs;
    EXPECT_TRUE(has(unknown, "/usr/lib/aarch64-linux-gnu"));
    EXPECT_TRUE(has(unknown, "/usr/lib/x86_64-linux-gnu"));
    EXPECT_TRUE(has(unknown, "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu"));
}

TEST(LibrarySearch, TheFirstLibnccl2AndItsLinkTarget) {
    MemoryFileView view;
    view.add_file("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "elf")
        .add_symlink("/usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.21.5");
    NcclLibrary lib = find_nccl_library(view, loader_dirs(nullptr, &view, "x86_64"));
    EXPECT_EQ(lib.found.path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2");
    EXPECT_EQ(lib.found.resolved, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5");
    EXPECT_EQ(lib.version, (Version{2, 21, 5}));
    MemoryFileView dangling;
    dangling.add_symlink("/usr/lib/libnccl.so.2", "libnccl.so.2.21.5");
    EXPECT_TRUE(find_nccl_library(dangling, loader_dirs(nullptr, &dangling, "")).found.path.empty());
}

TEST(LibrarySearch, AViewThatCannotTellIsUndecided) {
    MemoryFileView view;
    view.add_unknown("/usr/lib/x86_64-linux-gnu/libnccl.so.2");
    NcclLibrary lib = find_nccl_library(view, LoaderDirs{.dirs = {"/usr/lib/x86_64-linux-gnu"}, .not_searched = {}});
    EXPECT_TRUE(lib.found.path.empty());
    EXPECT_EQ(lib.found.undecided, std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libnccl.so.2"});
}

}  // namespace
}  // namespace launchguard::nccl
