#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "unit/probe/temp_tree.h"
#include "util/atomic_file.h"

namespace launchguard {
namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

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

}  // namespace
}  // namespace launchguard
