// The webhook's log lines (both formats) and their buffer: nothing written
// is lost, warnings go out at once, the rest at the flush interval, when
// the buffer fills, or when the log is destroyed.
#include "log.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace launchguard::webhook {
namespace {
namespace json = boost::json;
using std::chrono::milliseconds;

// 2026-11-30T14:09:19.260Z
const auto kNow = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796047759260LL));

std::string line(LogFormat format, std::string_view level, std::string_view message, LogFields fields) {
    std::string out;
    format_log_line(out, format, level, message, fields, kNow);
    return out;
}

TEST(WebhookLog, JsonLinesAreOneObjectWithTheFieldsInKeyOrder) {
    const std::string text = line(LogFormat::json, "info", "admission",
                                  {{"uid", "u-1"}, {"decision", "allow"}, {"name", "a \"quoted\"\\ name\n\x01"}});
    ASSERT_EQ(text.back(), '\n');
    EXPECT_EQ(text.find('\n'), text.size() - 1);
    EXPECT_EQ(text.substr(0, 33), R"({"time":"2026-11-30T14:09:19Z","l)");
    EXPECT_LT(text.find("\"decision\""), text.find("\"name\""));
    EXPECT_LT(text.find("\"name\""), text.find("\"uid\""));
    const json::value parsed = json::parse(text);
    EXPECT_EQ(parsed.at("level"), "info");
    EXPECT_EQ(parsed.at("msg"), "admission");
    EXPECT_EQ(parsed.at("name"), "a \"quoted\"\\ name\n\x01");
    // What boost::json::serialize writes for the same string.
    EXPECT_NE(text.find(json::serialize(json::string("a \"quoted\"\\ name\n\x01"))), std::string::npos);
}

TEST(WebhookLog, TextLinesQuoteWhatWouldSplitAField) {
    const std::string text =
        line(LogFormat::text, "warn", "serving certificate changed",
             {{"plain", "x"}, {"spaced", "a b"}, {"empty", ""}, {"newline", "a\nb"}, {"eq", "k=v"}});
    // Local time, to the millisecond; spdlog's word for the level.
    EXPECT_EQ(text.size() > 24 ? text.substr(19, 13) : text, ".260 warning ");
    EXPECT_NE(
        text.find(" serving certificate changed empty=\"\" eq=\"k=v\" newline=\"a\\nb\" plain=x spaced=\"a b\"\n"),
        std::string::npos)
        << text;
}

TEST(WebhookLog, ALaterSetReplacesAField) {
    LogRecord record{{"decision", "allow"}};
    record.set("uid", "1");
    record.set("decision", "block");
    ASSERT_EQ(record.fields().size(), 2U);
    ASSERT_NE(record.find("decision"), nullptr);
    EXPECT_EQ(*record.find("decision"), "block");
    EXPECT_EQ(record.find("name"), nullptr);
}

class BufferedLogTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(::pipe2(fds_, O_NONBLOCK), 0);
        // Room for every line of the tests: the writer never blocks.
        ::fcntl(fds_[1], F_SETPIPE_SZ, 1 << 20);
    }
    void TearDown() override {
        ::close(fds_[0]);
        ::close(fds_[1]);
    }
    std::string written() {
        std::string out;
        char buffer[65536];
        ssize_t n;
        while ((n = ::read(fds_[0], buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<std::size_t>(n));
        return out;
    }
    int fds_[2] = {-1, -1};
};

TEST_F(BufferedLogTest, InfoLinesWaitForTheFlushAndNoneIsLost) {
    {
        BufferedLog log(fds_[1], LogFormat::json, std::chrono::hours(1));
        for (int i = 0; i < 100; ++i) log.write("info", "admission", {{"uid", std::to_string(i)}});
        EXPECT_EQ(written(), "");  // no write(2) per line
        log.write("info", "admission", {{"uid", "last"}});
    }  // destroyed: as at the end of the drain
    const std::string text = written();
    std::size_t lines = 0;
    for (char c : text) lines += c == '\n';
    EXPECT_EQ(lines, 101U);
    EXPECT_NE(text.find(R"("uid":"0")"), std::string::npos);
    EXPECT_NE(text.find(R"("uid":"last"})"), std::string::npos);
}

TEST_F(BufferedLogTest, WarningsAndErrorsGoOutAtOnceWithWhatCameBefore) {
    BufferedLog log(fds_[1], LogFormat::text, std::chrono::hours(1));
    log.write("info", "admission", {{"uid", "before"}});
    log.write("error", "admission", {{"status", "500"}});
    const std::string text = written();
    EXPECT_NE(text.find("uid=before"), std::string::npos);
    EXPECT_NE(text.find("error admission status=500"), std::string::npos);
    EXPECT_LT(text.find("uid=before"), text.find("status=500"));
}

TEST_F(BufferedLogTest, TheIntervalAndAFullBufferFlush) {
    BufferedLog log(fds_[1], LogFormat::json, milliseconds(20), 4096);
    log.write("info", "admission", {{"uid", "timed"}});
    std::string text;
    for (int i = 0; i < 200 && text.empty(); ++i) {
        std::this_thread::sleep_for(milliseconds(5));
        text = written();
    }
    EXPECT_NE(text.find("timed"), std::string::npos);

    BufferedLog slow(fds_[1], LogFormat::json, std::chrono::hours(1), 4096);
    for (int i = 0; i < 100; ++i) slow.write("info", "admission", {{"uid", "filler-" + std::to_string(i)}});
    EXPECT_GE(written().size(), 4096U);
}

}  // namespace
}  // namespace launchguard::webhook
