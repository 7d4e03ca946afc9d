#include "support/shared_fixtures.h"

#include <stdlib.h>

#include <filesystem>
#include <system_error>

namespace launchguard::testing {

const std::string& shared_fixtures_root() {
    static const std::string root = LAUNCHGUARD_SHARED_FIXTURES;
    return root;
}

// An empty folder (a /nonexistent someone made) holds none of them either.
bool shared_fixtures_present() {
    std::error_code error;
    return std::filesystem::is_directory(shared_fixtures_root(), error) &&
           !std::filesystem::is_empty(shared_fixtures_root(), error);
}

void skip_test_without_shared_fixtures() {
    if (shared_fixtures_present() || ::testing::UnitTest::GetInstance()->current_test_info() == nullptr) return;
    const std::string message =
        "needs the public fixtures: LAUNCHGUARD_SHARED_FIXTURES not found (" + shared_fixtures_root() + ")";
    // What GTEST_SKIP() records, then an end of the test that is not a failure.
    GTEST_MESSAGE_AT_(__FILE__, __LINE__, message.c_str(), ::testing::TestPartResult::kSkip);
    throw ::testing::AssertionException(
        ::testing::TestPartResult(::testing::TestPartResult::kSkip, __FILE__, __LINE__, message.c_str()));
}

std::string shared_fixture_path(const std::string& relative) {
    skip_test_without_shared_fixtures();
    return shared_fixtures_root() + "/" + relative;
}

std::string rootfs_with_ndv5_topology() {
    skip_test_without_shared_fixtures();
    namespace fs = std::filesystem;
    struct AssembledRoot {
        fs::path root;
        AssembledRoot() {
            std::string pattern = (fs::temp_directory_path() / "launchguard-rootfs-XXXXXX").string();
            if (::mkdtemp(pattern.data()) == nullptr) return;
            root = pattern;
            fs::copy(std::string(LAUNCHGUARD_FIXTURES) + "/cli/rootfs-topo-missing", root, fs::copy_options::recursive);
            fs::create_directories(root / "opt/microsoft/ndv5");
            std::error_code missing;  // without the public fixtures: a root without the file
            fs::copy_file(shared_fixture_path("nccl-topo/ndv5-topo.xml"), root / "opt/microsoft/ndv5-topo.xml",
                          missing);
            fs::create_symlink("../ndv5-topo.xml", root / "opt/microsoft/ndv5/topo.xml");
        }
        ~AssembledRoot() {
            std::error_code ignored;
            if (!root.empty()) fs::remove_all(root, ignored);
        }
        AssembledRoot(const AssembledRoot&) = delete;
        AssembledRoot& operator=(const AssembledRoot&) = delete;
    };
    static const AssembledRoot assembled;
    return assembled.root.string();
}

}  // namespace launchguard::testing
