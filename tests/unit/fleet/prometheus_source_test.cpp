// `fleet --prometheus`: what node-check's metrics writer produces, read back
// as Prometheus's API returns it, makes the same records; odd and hostile
// responses (from the parser and from a real socket) are errors, never a
// crash; one node's bad series leave the others' records alone.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <thread>

#include "fleet/prometheus_client.h"
#include "fleet/prometheus_source.h"
#include "node/node_metrics.h"

namespace launchguard::fleet {
namespace {

namespace json = boost::json;

// Exposition text (as node_exporter would serve the file) into series with
// the scrape's labels added.
std::vector<std::pair<std::string, Series>> scrape(const std::string& text, const std::string& instance) {
    std::vector<std::pair<std::string, Series>> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        const std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.empty() || line[0] == '#') continue;
        Series s;
        std::size_t i = line.find_first_of("{ ");
        const std::string name = line.substr(0, i);
        if (line[i] == '{') {
            ++i;
            while (line[i] != '}') {
                const std::size_t eq = line.find('=', i);
                const std::string label = line.substr(i, eq - i);
                std::string value;
                std::size_t j = eq + 2;
                for (; line[j] != '"'; ++j) {
                    if (line[j] == '\\') {
                        ++j;
                        value += line[j] == 'n' ? '\n' : line[j];
                    } else {
                        value += line[j];
                    }
                }
                s.labels[label] = value;
                i = j + 1;
                if (line[i] == ',') ++i;
            }
            ++i;
        }
        s.labels["__name__"] = name;
        s.labels["instance"] = instance;
        s.labels["job"] = "node";
        s.points.push_back({1777629600.0, std::stod(line.substr(i + 1))});
        out.emplace_back(name, std::move(s));
    }
    return out;
}

// What each of record_queries() would return over these scrapes.
SeriesByMetric query_results(const std::vector<std::pair<std::string, Series>>& scraped) {
    SeriesByMetric by;
    for (const auto& q : record_queries()) by[std::string(q.metric)];
    for (const auto& [name, s] : scraped) {
        const bool filtered = name == kMetricNodeHealth || name == kMetricRuleOutcome;
        if (filtered && s.points.back().value != 1.0) continue;
        if (by.contains(name)) by[name].push_back(s);
    }
    return by;
}

json::object fact(json::value value) {
    if (value.is_null()) return json::object{{"value", nullptr}, {"reason", "unreadable"}};
    return json::object{{"value", std::move(value)}, {"source", "test"}};
}

json::object node_record(const std::string& host, const std::string& node_class) {
    return json::object{{"schema", "launchguard.node-record/v1"},
                        {"node", json::object{{"hostname", host}, {"class", node_class}}},
                        {"checked_at", "2026-05-01T10:00:00Z"},
                        {"health", "degraded"},
                        {"facts", json::object{{"kernel.release", fact("6.1.0-18-amd64")},
                                               {"gpu.driver_version", fact("550.54.15")},
                                               {"hca.firmware", fact("28.39.1002")},
                                               {"inventory.gpus", fact(8)},
                                               {"cpu.numa_balancing", fact(false)},
                                               {"kernel.cmdline", fact("ro quiet \"x\"\\y")},
                                               {"iommu.mode", fact(nullptr)}}}};
}

NodeVerdict degraded_verdict() {
    NodeVerdict v;
    v.health = NodeHealth::degraded;
    v.rules = {{"power.governor", RuleOutcome::pass, ""},
               {"hw.pcie-degraded", RuleOutcome::block, "GPU 0000:17:00.0 runs at 16GT/s x8 of 32GT/s x16"},
               {"virt.page-size", RuleOutcome::unknown, "no sysfs"}};
    return v;
}

std::string metrics_of(const std::string& host, const std::string& node_class) {
    const auto record = node_record(host, node_class);
    return render_node_metrics(degraded_verdict(),
                               std::chrono::system_clock::time_point(std::chrono::seconds(1777629600)),
                               std::chrono::milliseconds(1500), &record);
}

TEST(NodeMetrics, InfoSeriesCarryTheRecord) {
    const std::string text = metrics_of("gpu-a01", "h100");
    EXPECT_NE(text.find("launchguard_node_info{node=\"gpu-a01\",node_class=\"h100\",schema=\"launchguard.node-metrics/"
                        "v1\",kernel_release=\"6.1.0-18-amd64\",gpu_driver_version=\"550.54.15\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("launchguard_node_fact_info{fact=\"inventory.gpus\",value=\"8\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("launchguard_node_fact_info{fact=\"kernel.cmdline\",value=\"ro quiet \\\"x\\\"\\\\y\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_node_fact_unknown_info{fact=\"iommu.mode\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("launchguard_node_finding_info{rule=\"hw.pcie-degraded\",message=\"GPU 0000:17:00.0"),
              std::string::npos);
    // Only rules that warned or blocked have a finding series.
    EXPECT_EQ(text.find("launchguard_node_finding_info{rule=\"virt.page-size\""), std::string::npos);
    EXPECT_EQ(text.find("launchguard_node_problem_info"), std::string::npos);
    // The series that were there before stay as they were.
    EXPECT_NE(text.find("launchguard_node_rule_outcome{rule=\"hw.pcie-degraded\",outcome=\"block\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("launchguard_node_health{health=\"degraded\"} 1\n"), std::string::npos);
}

TEST(NodeMetrics, FreeTextIsCutAndMadeValidUtf8) {
    NodeVerdict v = unknown_verdict(std::string(300, 'x') + "\xff");
    const auto record = node_record("n1", "c");
    const std::string text = render_node_metrics(v, {}, {}, &record);
    const std::size_t at = text.find("launchguard_node_problem_info{problem=\"");
    ASSERT_NE(at, std::string::npos) << text;
    const std::size_t end = text.find('"', at + 39);
    EXPECT_EQ(end - (at + 39), kMetricTextLimit);
    const auto odd = node_record("n\xc3", "c");
    // Prometheus refuses a file whose label values are not UTF-8: U+FFFD instead.
    EXPECT_NE(render_node_metrics(v, {}, {}, &odd).find("node=\"n\xEF\xBF\xBD\""), std::string::npos);
}

TEST(PrometheusSource, RecordsFromTheWritersSeries) {
    auto scraped = scrape(metrics_of("gpu-a01", "h100"), "gpu-a01:9100");
    auto more = scrape(metrics_of("gpu-a02", "h100"), "gpu-a02:9100");
    scraped.insert(scraped.end(), more.begin(), more.end());
    const FleetInput input = records_from_series(query_results(scraped), "http://prom:9090");
    ASSERT_TRUE(input.errors.empty()) << input.errors.front().message;
    ASSERT_EQ(input.nodes.size(), 2U);
    const NodeRecord& n = input.nodes[0].hostname == "gpu-a01" ? input.nodes[0] : input.nodes[1];
    EXPECT_EQ(n.node_class, "h100");
    EXPECT_EQ(n.health, "degraded");
    EXPECT_EQ(n.checked_at, "2026-05-01T10:00:00Z");
    ASSERT_EQ(n.rules.size(), 3U);
    bool blocked = false;
    for (const auto& r : n.rules) {
        if (r.id != "hw.pcie-degraded") continue;
        blocked = true;
        EXPECT_EQ(r.outcome, "block");
        EXPECT_EQ(r.message, "GPU 0000:17:00.0 runs at 16GT/s x8 of 32GT/s x16");
    }
    EXPECT_TRUE(blocked);
    EXPECT_EQ(n.facts.at("hca.firmware"), std::optional<std::string>("28.39.1002"));
    EXPECT_EQ(n.facts.at("inventory.gpus"), std::optional<std::string>("8"));
    EXPECT_EQ(n.facts.at("cpu.numa_balancing"), std::optional<std::string>("false"));
    EXPECT_EQ(n.facts.at("kernel.cmdline"), std::optional<std::string>("ro quiet \"x\"\\y"));
    EXPECT_EQ(n.facts.at("iommu.mode"), std::nullopt);
    EXPECT_NE(n.origin.find("instance=\"gpu-a0"), std::string::npos) << n.origin;

    const FleetReport report = analyze_fleet(input, 0.9);
    EXPECT_EQ(report.nodes, 2U);
    EXPECT_EQ(report.conforming, 0U);
}

TEST(PrometheusSource, OneNodesBadSeriesLeaveTheOthers) {
    auto scraped = scrape(metrics_of("good", "c"), "good:9100");
    auto wrong_schema = scrape(metrics_of("old", "c"), "old:9100");
    for (auto& [name, s] : wrong_schema)
        if (name == kMetricNodeInfo) s.labels["schema"] = "launchguard.node-metrics/v9";
    auto bad_outcome = scrape(metrics_of("odd", "c"), "odd:9100");
    for (auto& [name, s] : bad_outcome)
        if (name == kMetricRuleOutcome && s.labels["outcome"] == "block") s.labels["outcome"] = "maybe";
    auto no_info = scrape(metrics_of("bare", "c"), "bare:9100");
    std::erase_if(no_info, [](const auto& p) { return p.first == kMetricNodeInfo; });
    for (const auto* part : {&wrong_schema, &bad_outcome, &no_info})
        scraped.insert(scraped.end(), part->begin(), part->end());
    const FleetInput input = records_from_series(query_results(scraped), "http://prom:9090");
    ASSERT_EQ(input.nodes.size(), 1U);
    EXPECT_EQ(input.nodes[0].hostname, "good");
    ASSERT_EQ(input.errors.size(), 3U);
    std::string all;
    for (const auto& e : input.errors) all += e.origin + ": " + e.message + "\n";
    EXPECT_NE(all.find("schema 'launchguard.node-metrics/v9'"), std::string::npos) << all;
    EXPECT_NE(all.find("outcome 'maybe'"), std::string::npos) << all;
    EXPECT_NE(all.find("instance=\"bare:9100\""), std::string::npos) << all;
    EXPECT_NE(all.find("no launchguard_node_info"), std::string::npos) << all;
}

TEST(PrometheusSource, AnUnknownNodeKeepsItsProblem) {
    const auto record = node_record("down", "c");
    const std::string text = render_node_metrics(unknown_verdict("probe stalled: sysfs"), {}, {}, &record);
    const FleetInput input = records_from_series(query_results(scrape(text, "down:9100")), "p");
    ASSERT_EQ(input.nodes.size(), 1U);
    EXPECT_EQ(input.nodes[0].health, "unknown");
    EXPECT_EQ(input.nodes[0].problem, "probe stalled: sysfs");
    EXPECT_TRUE(input.nodes[0].rules.empty());
}

TEST(PrometheusResponse, OddBodiesAreErrors) {
    struct Case {
        std::string body;
        std::string says;
    };
    const Case cases[] = {
        {"", "not JSON"},
        {"<html>502 Bad Gateway</html>", "not JSON"},
        {"[1,2]", "not a JSON object"},
        {"{}", "no \"status\""},
        {R"({"status":"error","errorType":"bad_data","error":"parse error at char 4"})",
         "Prometheus says: bad_data: parse error at char 4"},
        {R"({"status":"error"})", "no error message"},
        {R"({"status":"success"})", "no \"data\""},
        {R"({"status":"success","data":{"resultType":"scalar","result":[1,"1"]}})", "resultType"},
        {R"({"status":"success","data":{"resultType":"vector","result":{}}})", "data.result"},
        {std::string(100000, '['), "not JSON"},
    };
    for (const auto& c : cases) {
        std::string error;
        EXPECT_FALSE(parse_query_response(c.body, error)) << c.body.substr(0, 40);
        EXPECT_NE(error.find(c.says), std::string::npos) << c.body.substr(0, 40) << " -> " << error;
    }
}

TEST(PrometheusResponse, OddSeriesAreSkippedAndCounted) {
    const std::string body = R"({"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"__name__":"launchguard_node_info","node":"a"},"value":[1777629600.5,"1"]},
        {"metric":{"node":7},"value":[1,"1"]},
        {"metric":{"node":"b"},"value":[1,"one"]},
        {"metric":{"node":"c"},"value":["x","1"]},
        {"metric":{"node":"d"}},
        "nonsense",
        {"metric":{"node":"e"},"value":[1,"NaN"]}]}})";
    std::string error;
    std::size_t skipped = 0;
    const auto series = parse_query_response(body, error, &skipped);
    ASSERT_TRUE(series) << error;
    EXPECT_EQ(series->size(), 2U);
    EXPECT_EQ(skipped, 5U);
    EXPECT_DOUBLE_EQ((*series)[0].points[0].time, 1777629600.5);
}

TEST(PrometheusHistory, ClassesOverTime) {
    auto series = [](std::string node_class, std::vector<std::pair<double, double>> points) {
        Series s;
        s.labels["node_class"] = std::move(node_class);
        for (auto [t, v] : points) s.points.push_back({t, v});
        return s;
    };
    const std::vector<Series> nodes = {series("a", {{100, 10}, {160, 10}, {220, 12}}), series("b", {{160, 4}})};
    const std::vector<Series> conforming = {series("a", {{100, 10}, {220, 9}})};
    const auto history = history_from_series(nodes, conforming);
    ASSERT_EQ(history.size(), 2U);
    ASSERT_EQ(history[0].points.size(), 3U);
    EXPECT_EQ(history[0].points[1].conforming, 0U);  // no conforming sample: none conformed
    EXPECT_EQ(history[0].points[2].nodes, 12U);
    EXPECT_EQ(history[0].points[2].conforming, 9U);
    EXPECT_EQ(history[1].name, "b");
    EXPECT_EQ(history[1].points[0].time, 160);
}

TEST(RecordHistory, HostsAtSeveralTimes) {
    auto record = [](std::string host, std::string at, std::string outcome) {
        NodeRecord r;
        r.hostname = std::move(host);
        r.node_class = "c";
        r.checked_at = std::move(at);
        r.health = outcome == "pass" ? "healthy" : "degraded";
        r.rules.push_back({"hw.pcie-degraded", outcome, ""});
        return r;
    };
    EXPECT_TRUE(history_of_records({record("a", "2026-05-01T10:00:00Z", "pass")}).empty());
    const auto history = history_of_records(
        {record("a", "2026-05-01T10:00:00Z", "pass"), record("b", "2026-05-01T10:00:00Z", "pass"),
         record("a", "2026-05-01T11:00:00Z", "block"), record("b", "2026-05-01T12:00:00Z", "block")});
    ASSERT_EQ(history.size(), 1U);
    ASSERT_EQ(history[0].points.size(), 3U);
    EXPECT_EQ(history[0].points[0].conforming, 2U);
    EXPECT_EQ(history[0].points[1].conforming, 1U);
    EXPECT_EQ(history[0].points[2].conforming, 0U);
    EXPECT_EQ(history[0].points[2].nodes, 2U);
}

TEST(PrometheusOptions, UrlsDurationsAndTimes) {
    std::string error;
    auto url = parse_prometheus_url("http://127.0.0.1:9099/prom/", error);
    ASSERT_TRUE(url) << error;
    EXPECT_EQ(url->host, "127.0.0.1");
    EXPECT_EQ(url->port, "9099");
    EXPECT_EQ(url->prefix, "/prom");
    url = parse_prometheus_url("https://[::1]", error);
    ASSERT_TRUE(url) << error;
    EXPECT_TRUE(url->tls);
    EXPECT_EQ(url->host, "::1");
    EXPECT_EQ(url->port, "443");
    for (const char* bad : {"ftp://x", "http://", "http://u:p@x", "http://x:99999", "http://x/?q=1", "http://x:port"})
        EXPECT_FALSE(parse_prometheus_url(bad, error)) << bad;
    EXPECT_EQ(parse_duration_seconds("1h30m"), 5400.0);
    EXPECT_EQ(parse_duration_seconds("2d"), 172800.0);
    EXPECT_EQ(parse_duration_seconds("500ms"), 0.5);
    for (const char* bad : {"", "h", "5", "5x", "0s", "-5m", "99999999999s"})
        EXPECT_FALSE(parse_duration_seconds(bad)) << bad;
    EXPECT_EQ(parse_time_seconds("2026-05-01T10:00:00Z"), 1777629600.0);
    EXPECT_EQ(parse_time_seconds("2026-05-01T12:00:00+02:00"), 1777629600.0);
    EXPECT_EQ(parse_time_seconds("1777629600.5"), 1777629600.5);
    for (const char* bad : {"yesterday", "2026-13-01T00:00:00Z", "-5", "1e9"})
        EXPECT_FALSE(parse_time_seconds(bad)) << bad;
    EXPECT_EQ(url_encode("a{b=\"c\"} == 1"), "a%7Bb%3D%22c%22%7D%20%3D%3D%201");
}

// A server on loopback that answers every connection with `reply` (or
// nothing, holding the connection open), for the client's error paths.
class CannedServer {
public:
    explicit CannedServer(std::string reply, bool silent = false) : reply_(std::move(reply)), silent_(silent) {
        acceptor_.open(boost::asio::ip::tcp::v4());
        acceptor_.bind({boost::asio::ip::address_v4::loopback(), 0});
        acceptor_.listen();
        port_ = acceptor_.local_endpoint().port();
        accept();
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~CannedServer() {
        ioc_.stop();
        thread_.join();
    }
    [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

private:
    void accept() {
        acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket socket) {
            if (ec) return;
            auto s = std::make_shared<boost::asio::ip::tcp::socket>(std::move(socket));
            auto buffer = std::make_shared<std::string>();
            boost::asio::async_read_until(*s, boost::asio::dynamic_buffer(*buffer), "\r\n\r\n",
                                          [this, s, buffer](boost::system::error_code e, std::size_t) {
                                              if (e || silent_) {
                                                  held_.push_back(s);
                                                  return;
                                              }
                                              boost::asio::async_write(
                                                  *s, boost::asio::buffer(reply_),
                                                  [s](boost::system::error_code, std::size_t) {
                                                      boost::system::error_code ignored;
                                                      s->shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
                                                  });
                                          });
            accept();
        });
    }
    boost::asio::io_context ioc_;
    boost::asio::ip::tcp::acceptor acceptor_{ioc_};
    std::string reply_;
    bool silent_;
    unsigned short port_ = 0;
    std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> held_;
    std::thread thread_;
};

std::string http_reply(int status, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
}

std::string read_error(const std::string& url, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                       std::size_t max_bytes = 1 << 20) {
    std::string error;
    PrometheusRequest request;
    auto parsed = parse_prometheus_url(url, error);
    EXPECT_TRUE(parsed) << error;
    request.url = *parsed;
    request.at = 1777629600;
    request.timeout = timeout;
    request.max_response_bytes = max_bytes;
    EXPECT_FALSE(read_prometheus(request, error));
    return error;
}

TEST(PrometheusClient, FailuresNameTheUrlAndTheCause) {
    {
        CannedServer server(http_reply(
            422,
            R"({"status":"error","errorType":"execution","error":"query processing would load too many samples"})"));
        const std::string error = read_error(server.url());
        EXPECT_NE(error.find(server.url()), std::string::npos) << error;
        EXPECT_NE(error.find("HTTP 422"), std::string::npos) << error;
        EXPECT_NE(error.find("too many samples"), std::string::npos) << error;
    }
    {
        CannedServer server("SSH-2.0-OpenSSH_9.2\r\n");
        EXPECT_NE(read_error(server.url()).find("reading the response"), std::string::npos);
    }
    {
        CannedServer server(http_reply(200, "<html>login</html>"));
        EXPECT_NE(read_error(server.url()).find("body begins: <html>login"), std::string::npos);
    }
    {
        CannedServer server(http_reply(200, std::string(4096, ' ')));
        EXPECT_NE(read_error(server.url(), std::chrono::seconds(5), 1024).find("larger than 1024 bytes"),
                  std::string::npos);
    }
    {
        CannedServer server("", true);
        const auto start = std::chrono::steady_clock::now();
        const std::string error = read_error(server.url(), std::chrono::milliseconds(300));
        EXPECT_NE(error.find("timed out"), std::string::npos) << error;
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    }
    {
        // A port nothing listens on: bound, then closed.
        std::string url;
        {
            CannedServer server("");
            url = server.url();
        }
        EXPECT_NE(read_error(url).find("connecting"), std::string::npos);
    }
}

TEST(PrometheusClient, AnEmptyPrometheusIsNoNodes) {
    CannedServer server(http_reply(200, R"({"status":"success","data":{"resultType":"vector","result":[]}})"));
    std::string error;
    PrometheusRequest request;
    request.url = *parse_prometheus_url(server.url(), error);
    request.since = 1777620000;
    request.at = 1777629600;
    auto input = read_prometheus(request, error);
    ASSERT_TRUE(input) << error;
    EXPECT_TRUE(input->nodes.empty());
    EXPECT_TRUE(input->history.empty());
}

}  // namespace
}  // namespace launchguard::fleet
