// `launchguard check` on a container root whose LD_LIBRARY_PATH a hostile
// task wrote: many aliases of one large provider folder, and thousands of
// entries that are symlink chains. The check must end, decide what it can
// and say "unknown" with the bound where it stopped looking. (What this
// costs in memory and time is measured by hand, not asserted here.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/launch_fixture.h"
#include "support/run_command.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

using testing::fixture_path;
using testing::quote_arg;

// A root with libibverbs in /lib and a uverbs device; `path` is the task's LD_LIBRARY_PATH.
class LibraryPathCheck : public ::testing::Test {
protected:
    test::TempTree tree;

    void SetUp() override {
        tree.write("root/lib/libibverbs.so.1", "elf");
        tree.write("root/dev/infiniband/uverbs0", "");
    }

    // net.verbs-missing on the 32em64t node (mlx5_0 ACTIVE) for a 4-node
    // job, as text: what a user reads.
    [[nodiscard]] testing::CommandResult check(const std::string& path) const {
        const std::string env = tree.path("job.env");
        std::ofstream(env) << "PATH=/usr/bin:/bin\nLD_LIBRARY_PATH=" << path << "\n";
        return testing::run_command("timeout 120 " + quote_arg(LAUNCHGUARD_CLI) + " check --root " +
                                    quote_arg(tree.path("root")) + " --env-file " + quote_arg(env) + " --hwloc-xml " +
                                    quote_arg(fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml")) +
                                    " --sysfs-root " + quote_arg(fixture_path("sysfs/h100-baremetal")) +
                                    " --cpus 0-3 --runtime bare --job-nodes 4 --rule net.verbs-missing --format text");
    }

    void empty_files(const std::string& dir, const std::string& stem, int count) const {
        tree.mkdir(dir);
        for (int i = 0; i < count; ++i) {
            const std::string name = tree.path(dir + "/" + stem + std::to_string(i) + "-rdmav34.so");
            const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            ASSERT_GE(fd, 0) << name;
            ::close(fd);
        }
    }
};

std::string numbered(const std::string& stem, int count) {
    std::string path;
    for (int i = 0; i < count; ++i) path += (i > 0 ? ":" : "") + stem + std::to_string(i);
    return path;
}

TEST_F(LibraryPathCheck, TwoHundredAliasesOfAHundredThousandFileProviderFolderAreDecided) {
    // Listed once, the folder fits the check's bound (250,000 entries); once
    // per alias it would pass it and leave the rule unknown.
    empty_files("root/lib/libibverbs", "libvendor", 100'000);
    for (int i = 0; i < 200; ++i) tree.symlink("/lib", "root/alias" + std::to_string(i));
    auto r = check(numbered("/alias", 200));
    EXPECT_LT(r.exit_code, 4) << r.err;
    EXPECT_NE(r.out.find("no libmlx5-rdmav*.so verbs provider for the node's HCAs"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("launchguard's bound"), std::string::npos) << r.out;
}

TEST_F(LibraryPathCheck, TenThousandSymlinkChainEntriesAreUnknownNamingTheBound) {
    // Each entry /eN -> /l1 -> ... -> /l39 -> /lib: forty links, as many as
    // the kernel follows, for every one of them.
    for (int i = 1; i < 39; ++i) tree.symlink("/l" + std::to_string(i + 1), "root/l" + std::to_string(i));
    tree.symlink("/lib", "root/l39");
    for (int i = 0; i < 10'000; ++i) tree.symlink("/l1", "root/e" + std::to_string(i));
    auto r = check(numbered("/e", 10'000));
    EXPECT_LT(r.exit_code, 4) << r.err;
    EXPECT_NE(r.out.find("cannot tell whether the container can open the node's RDMA devices"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("not looked at: launchguard's bound of "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("verbs provider for the node's HCAs"), std::string::npos) << "a guess, not a finding";
}

TEST_F(LibraryPathCheck, AProviderPastTheLibraryDirectoryBoundIsUnknownNotMissing) {
    tree.write("root/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so", "elf");
    EXPECT_EQ(check("/lib").out.find("verbs provider"), std::string::npos) << "within the bound: found";
    auto r = check("/lib:" + numbered("/d", 300));
    EXPECT_NE(r.out.find("256 library directories per check was reached"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("verbs provider for the node's HCAs"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace launchguard
