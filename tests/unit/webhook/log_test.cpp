// The webhook's log lines in both formats, and the log that writes them
// through spdlog.
#include "log.h"

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <boost/json.hpp>

#include <chrono>
#include <sstream>
#include <string>

namespace launchguard::webhook {
namespace {
namespace json = boost::json;

// 2026-11-30T14:09:19.260Z
const auto kNow = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796047759260LL));

std::string line(LogFormat format, std::string_view level, std::string_view message, LogFields fields) {
    return format_log_line(format, level, message, fields, kNow);
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

TEST(WebhookLog, EveryLineGoesToTheSinkInTheChosenFormat) {
    std::ostringstream json_lines;
    std::ostringstream text_lines;
    {
        Log json_log(LogFormat::json, std::make_shared<spdlog::sinks::ostream_sink_mt>(json_lines));
        Log text_log(LogFormat::text, std::make_shared<spdlog::sinks::ostream_sink_mt>(text_lines));
        for (int i = 0; i < 100; ++i) json_log.write("info", "admission", {{"uid", std::to_string(i)}});
        json_log.write("error", "admission", {{"status", "500"}});
        text_log.write("warn", "drain timeout: stopping with requests still open", {});
        text_log.write("info", "admission", {{"uid", "u 1"}});
    }
    std::istringstream in(json_lines.str());
    std::string each;
    int lines = 0;
    while (std::getline(in, each)) {
        const json::value parsed = json::parse(each);
        EXPECT_EQ(parsed.at("msg"), "admission");
        EXPECT_TRUE(parsed.as_object().contains("time"));
        ++lines;
        if (lines == 101) {
            EXPECT_EQ(parsed.at("level"), "error");
            EXPECT_EQ(parsed.at("status"), "500");
        }
    }
    EXPECT_EQ(lines, 101);
    const std::string text = text_lines.str();
    EXPECT_NE(text.find(" warning drain timeout: stopping with requests still open\n"), std::string::npos) << text;
    EXPECT_NE(text.find(" info admission uid=\"u 1\"\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace launchguard::webhook
