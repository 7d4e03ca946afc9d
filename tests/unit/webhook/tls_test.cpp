#include "tls.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "unit/probe/temp_tree.h"

namespace launchguard::webhook {
namespace {

using test::TempTree;

// A fresh self-signed EC pair in DIR/NAME.{crt,key}, made by the openssl CLI.
void make_pair(const TempTree& tree, const std::string& name) {
    const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
                            "-subj /CN=launchguard-test -keyout '" + tree.path(name + ".key") + "' -out '" +
                            tree.path(name + ".crt") + "' >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

void copy(const TempTree& tree, const std::string& from, const std::string& to) {
    std::filesystem::copy_file(tree.path(from), tree.path(to), std::filesystem::copy_options::overwrite_existing);
}

TEST(CertificateStore, LoadsAPairAndNamesTheFileThatDoesNot) {
    TempTree tree;
    make_pair(tree, "a");
    make_pair(tree, "b");
    EXPECT_TRUE(CertificateStore::open(tree.path("a.crt"), tree.path("a.key")).ok());
    auto missing = CertificateStore::open(tree.path("none.crt"), tree.path("a.key"));
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().file, tree.path("none.crt"));
    auto mismatch = CertificateStore::open(tree.path("a.crt"), tree.path("b.key"));
    ASSERT_FALSE(mismatch.ok());
    EXPECT_NE(mismatch.error().to_string().find("cannot use this key with the certificate"), std::string::npos);
}

TEST(CertificateStore, ReloadsARotatedPairAndKeepsTheOldOneUntilTheNewLoads) {
    TempTree tree;
    make_pair(tree, "a");
    make_pair(tree, "b");
    copy(tree, "a.crt", "tls.crt");
    copy(tree, "a.key", "tls.key");
    auto store = CertificateStore::open(tree.path("tls.crt"), tree.path("tls.key"));
    ASSERT_TRUE(store.ok());
    auto first = (*store)->current();
    EXPECT_FALSE((*store)->check().changed);

    // Half a rotation: the new certificate with the old key. Keep serving the old pair.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    copy(tree, "b.crt", "tls.crt");
    auto half = (*store)->check();
    EXPECT_TRUE(half.changed);
    EXPECT_FALSE(half.loaded);
    EXPECT_NE(half.error.find("key values mismatch"), std::string::npos);
    EXPECT_EQ((*store)->current(), first);

    copy(tree, "b.key", "tls.key");
    auto done = (*store)->check();
    EXPECT_TRUE(done.loaded) << done.error;
    EXPECT_NE((*store)->current(), first);
    EXPECT_FALSE((*store)->check().changed);
}

}  // namespace
}  // namespace launchguard::webhook
