#include "context/captured_file_view.h"

#include <gtest/gtest.h>

#include <memory>

#include "probe/rooted_file_view.h"
#include "support/memory_file_view.h"
#include "unit/probe/temp_tree.h"

namespace launchguard {
namespace {

using testing::MemoryFileView;

std::shared_ptr<CapturedFileView> captured_host() {
    auto live = std::make_shared<MemoryFileView>("live host");
    live->add_file("/etc/nccl.conf", "NCCL_TOPO_FILE=/opt/topo.xml\n")
        .add_file("/opt/topo.xml", "<system version=\"1\"/>\n")
        .add_directory("/opt/empty");
    return std::make_shared<CapturedFileView>(live, "host, captured");
}

TEST(CapturedFileView, AnswersWhatWasAskedAfterTheHostIsOutOfReach) {
    auto view = captured_host();
    EXPECT_EQ(view->stat("/opt/topo.xml").kind, FileKind::regular);
    EXPECT_EQ(view->stat("/opt/missing.xml").kind, FileKind::missing);
    ASSERT_TRUE(view->read("/etc/nccl.conf").ok());
    EXPECT_EQ(view->list("/opt").size(), 2U);
    view->release();

    EXPECT_TRUE(view->released());
    EXPECT_EQ(view->stat("/opt/topo.xml").kind, FileKind::regular);
    EXPECT_EQ(view->stat("/opt/missing.xml").kind, FileKind::missing);
    auto conf = view->read("/etc/nccl.conf");
    ASSERT_TRUE(conf.ok());
    EXPECT_EQ(*conf, "NCCL_TOPO_FILE=/opt/topo.xml\n");
    EXPECT_EQ(view->list("/opt").size(), 2U);
    EXPECT_EQ(view->describe(), "host, captured");
}

TEST(CapturedFileView, WhatNobodyAskedIsUnknownNeverMissing) {
    auto view = captured_host();
    view->release();
    FileInfo info = view->stat("/opt/topo.xml");
    EXPECT_EQ(info.kind, FileKind::unknown);
    EXPECT_EQ(info.detail, "not captured on the host before the task entered its container");
    auto text = view->read("/opt/topo.xml");
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.error().to_string(),
              "/opt/topo.xml: not captured on the host before the task entered its container");
    EXPECT_TRUE(view->list("/opt").empty());
}

TEST(CapturedFileView, ARecordedReadAnswersTheReadsItCovers) {
    auto view = captured_host();
    ASSERT_TRUE(view->read("/opt/topo.xml", 1024).ok());
    view->release();
    // The whole file was recorded: any bound it fits in gets it, never a prefix.
    EXPECT_EQ(*view->read("/opt/topo.xml", 1U << 20), "<system version=\"1\"/>\n");
    auto small = view->read("/opt/topo.xml", 7);
    ASSERT_FALSE(small.ok());
    EXPECT_NE(small.error().to_string().find("larger than the 7-byte bound"), std::string::npos);

    auto big = std::make_shared<MemoryFileView>();
    big->add_file("/big", std::string(100, 'x'));
    CapturedFileView cut(big, "cut");
    EXPECT_FALSE(cut.read("/big", 10).ok());  // too large for that bound, live
    cut.release();
    EXPECT_FALSE(cut.read("/big", 10).ok());  // the recorded error covers that bound
    EXPECT_FALSE(cut.read("/big", 50).ok());  // a larger bound was never asked: not known
}

TEST(CapturedFileView, KeepsWhatTheLiveViewSaidOfAFilesIdentity) {
    // The host's folders are told apart by device and inode in task_init too.
    test::TempTree tree;
    tree.mkdir("lib");
    auto view = std::make_shared<CapturedFileView>(std::make_shared<RootedFileView>(tree.root()), "host, captured");
    const FileInfo live = view->stat("/lib");
    ASSERT_TRUE(live.identity.has_value());
    view->release();
    EXPECT_EQ(view->stat("/lib").identity, live.identity);
}

}  // namespace
}  // namespace launchguard
