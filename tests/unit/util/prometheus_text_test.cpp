// The one Prometheus text writer of the webhook's /metrics and
// node-check's textfile: families, samples and the label escaper.
#include "util/prometheus_text.h"

#include <gtest/gtest.h>

namespace launchguard::prometheus {
namespace {

TEST(PrometheusText, LabelValuesEscapeBackslashQuoteAndNewlineOnly) {
    EXPECT_EQ(escape_label_value("topo.required"), "topo.required");
    EXPECT_EQ(escape_label_value(R"(a\b)"), R"(a\\b)");
    EXPECT_EQ(escape_label_value(R"(say "x")"), R"(say \"x\")");
    EXPECT_EQ(escape_label_value("two\nlines"), R"(two\nlines)");
    EXPECT_EQ(escape_label_value("tab\tand caf\xC3\xA9"), "tab\tand caf\xC3\xA9");  // kept as they are
    EXPECT_EQ(escape_label_value(""), "");
}

TEST(PrometheusText, FamiliesAndSamplesInTheExpositionFormat) {
    TextWriter out;
    out.family("launchguard_x_total", "counter", "Help with a \\ and a\nnewline.");
    out.sample("launchguard_x_total", {{"rule", "a\"b"}, {"action", "block"}}, std::uint64_t{3});
    out.sample("launchguard_x_total", {}, std::uint64_t{0});
    out.family("launchguard_seconds", "gauge", "Seconds.");
    out.sample("launchguard_seconds", {}, 0.000012);
    out.sample("launchguard_seconds", {{"le", "+Inf"}}, 1796047759.26);
    EXPECT_EQ(out.take(),
              "# HELP launchguard_x_total Help with a \\\\ and a\\nnewline.\n"
              "# TYPE launchguard_x_total counter\n"
              "launchguard_x_total{rule=\"a\\\"b\",action=\"block\"} 3\n"
              "launchguard_x_total 0\n"
              "# HELP launchguard_seconds Seconds.\n"
              "# TYPE launchguard_seconds gauge\n"
              "launchguard_seconds 0.000012\n"  // fixed-point: never an exponent
              "launchguard_seconds{le=\"+Inf\"} 1796047759.260000\n");
}

}  // namespace
}  // namespace launchguard::prometheus
