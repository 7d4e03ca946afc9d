#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/text.h"
#include "unit/probe/temp_tree.h"
#include "util/atomic_file.h"

namespace launchguard {
namespace {

using testing::read_all;

TEST(AtomicFile, ReplacesTheFileWithTheModeAskedForAndLeavesNoTemporary) {
    test::TempTree tree;
    const std::string path = tree.path("launchguard.prom");
    tree.write("launchguard.prom", "old\n");
    const mode_t old_umask = ::umask(077);
    auto written = write_file_atomically(path, "new\n", 0644);
    ::umask(old_umask);
    ASSERT_TRUE(written.ok()) << written.error().to_string();
    EXPECT_EQ(read_all(path), "new\n");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644U) << "the umask must not narrow it: node_exporter reads it as another user";
    int entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tree.root())) ++entries;
    EXPECT_EQ(entries, 1);
}

TEST(AtomicFile, AMissingDirectoryIsAnErrorNamingThePath) {
    test::TempTree tree;
    const std::string path = tree.path("no/such/dir/launchguard.prom");
    auto written = write_file_atomically(path, "x", 0644);
    ASSERT_FALSE(written.ok());
    EXPECT_EQ(written.error().file, path);
}

TEST(AtomicFile, RefusesToReplaceAnythingButARegularFile) {
    test::TempTree tree;
    const std::string fifo = tree.path("fifo.prom");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    tree.mkdir("dir.prom");
    tree.write("real.prom", "kept\n");
    tree.symlink(tree.path("real.prom"), "link.prom");
    struct Case {
        std::string path;
        std::string says;
        bool (*still)(const std::filesystem::path&);
    };
    const Case cases[] = {
        {fifo, "is a FIFO",
         [](const std::filesystem::path& p) { return std::filesystem::is_fifo(std::filesystem::symlink_status(p)); }},
        {tree.path("dir.prom"), "is a directory",
         [](const std::filesystem::path& p) {
             return std::filesystem::is_directory(std::filesystem::symlink_status(p));
         }},
        {tree.path("link.prom"), "is a symlink",
         [](const std::filesystem::path& p) {
             return std::filesystem::is_symlink(std::filesystem::symlink_status(p));
         }},
    };
    for (const auto& c : cases) {
        auto written = write_file_atomically(c.path, "new\n", 0644);
        ASSERT_FALSE(written.ok()) << c.path;
        EXPECT_EQ(written.error().file, c.path);
        EXPECT_NE(written.error().to_string().find(c.says + ", not a regular file"), std::string::npos)
            << written.error().to_string();
        EXPECT_TRUE(c.still(c.path)) << c.path << " was replaced";
    }
    EXPECT_EQ(read_all(tree.path("real.prom")), "kept\n") << "the link's target is untouched";
    int entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tree.root())) ++entries;
    EXPECT_EQ(entries, 4) << "no temporary file is left behind";
}

}  // namespace
}  // namespace launchguard
