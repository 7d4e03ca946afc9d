#include "tls.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <optional>
#include <thread>

#include "unit/probe/temp_tree.h"

namespace launchguard::webhook {
namespace {

using test::TempTree;

// A fresh self-signed EC pair in DIR/NAME.{crt,key}, made by the openssl CLI.
void make_pair(const TempTree& tree, const std::string& name) {
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=launchguard-test -keyout '" +
        tree.path(name + ".key") + "' -out '" + tree.path(name + ".crt") + "' >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

void copy(const TempTree& tree, const std::string& from, const std::string& to) {
    std::filesystem::copy_file(tree.path(from), tree.path(to), std::filesystem::copy_options::overwrite_existing);
}

// Pairs a and b, tls.crt and tls.key copied from a, and a store over them.
std::unique_ptr<CertificateStore> store_serving_a(const TempTree& tree) {
    make_pair(tree, "a");
    make_pair(tree, "b");
    copy(tree, "a.crt", "tls.crt");
    copy(tree, "a.key", "tls.key");
    auto store = CertificateStore::open(tree.path("tls.crt"), tree.path("tls.key"));
    if (!store.ok()) {
        ADD_FAILURE() << store.error().to_string();
        return nullptr;
    }
    return std::move(store).value();
}

// Whether `result` came within 5 s. If not, a reader is blocked opening
// `fifo`: opening its write end lets it go, so the test fails, not hangs.
template <class T>
bool came_without_blocking(std::future<T>& result, const std::string& fifo) {
    if (result.wait_for(std::chrono::seconds(5)) == std::future_status::ready) return true;
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
    return false;
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
    auto store = store_serving_a(tree);
    ASSERT_NE(store, nullptr);
    auto first = store->current();
    EXPECT_FALSE(store->check().changed);

    // Half a rotation: the new certificate with the old key. Keep serving the old pair.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    copy(tree, "b.crt", "tls.crt");
    auto half = store->check();
    EXPECT_TRUE(half.changed);
    EXPECT_FALSE(half.loaded);
    EXPECT_NE(half.error.find("key values mismatch"), std::string::npos);
    EXPECT_EQ(store->current(), first);

    copy(tree, "b.key", "tls.key");
    auto done = store->check();
    EXPECT_TRUE(done.loaded) << done.error;
    EXPECT_NE(store->current(), first);
    EXPECT_FALSE(store->check().changed);
}

// A FIFO put where the certificate was: check() must come back at once (it
// runs on the thread that accepts connections), keep the old pair, report
// the failure once, and load the good pair when it returns.
TEST(CertificateStore, AFifoInPlaceOfTheCertificateIsRefusedWithoutBlocking) {
    TempTree tree;
    auto store = store_serving_a(tree);
    ASSERT_NE(store, nullptr);
    auto first = store->current();

    const std::string fifo = tree.path("fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::filesystem::rename(fifo, tree.path("tls.crt"));
    auto checked = std::async(std::launch::async, [&] { return store->check(); });
    ASSERT_TRUE(came_without_blocking(checked, tree.path("tls.crt"))) << "check() blocked on a FIFO";
    auto refused = checked.get();
    EXPECT_TRUE(refused.changed);
    EXPECT_FALSE(refused.loaded);
    EXPECT_FALSE(refused.repeated);
    EXPECT_NE(refused.error.find("FIFO"), std::string::npos) << refused.error;
    EXPECT_EQ(store->current(), first);
    // Tried again at the next check, but not reported again.
    auto again = store->check();
    EXPECT_FALSE(again.loaded);
    EXPECT_TRUE(again.repeated);

    copy(tree, "b.crt", "tls.new");
    std::filesystem::rename(tree.path("tls.new"), tree.path("tls.crt"));
    copy(tree, "b.key", "tls.key");
    auto restored = store->check();
    EXPECT_TRUE(restored.loaded) << restored.error;
    EXPECT_NE(store->current(), first);

    // At start too: refused with the file named, not waited on.
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // The thread hands back only the error: a Result holding the store,
    // carried through std::future, trips gcc 12's -Wfree-nonheap-object.
    auto opened = std::async(std::launch::async, [&]() -> std::optional<Error> {
        auto result = CertificateStore::open(fifo, tree.path("tls.key"));
        if (result.ok()) return std::nullopt;
        return result.error();
    });
    ASSERT_TRUE(came_without_blocking(opened, fifo)) << "open() blocked on a FIFO";
    auto at_start = opened.get();
    ASSERT_TRUE(at_start.has_value()) << "a FIFO was opened as the certificate";
    EXPECT_EQ(at_start->file, fifo);
}

TEST(CertificateStore, AForcedCheckReloadsUnchangedFiles) {
    TempTree tree;
    auto store = store_serving_a(tree);
    ASSERT_NE(store, nullptr);
    auto first = store->current();
    EXPECT_FALSE(store->check().changed);
    auto forced = store->check(true);
    EXPECT_TRUE(forced.loaded) << forced.error;
    EXPECT_NE(store->current(), first);
}

}  // namespace
}  // namespace launchguard::webhook
