// `launchguard fleet --prometheus URL`: the node records rebuilt from the
// series node-check writes for node_exporter's textfile collector
// (node/node_metrics.h), as Prometheus's HTTP API returns them, and the
// conformance of each class over a time range. The parts that read the API's
// JSON are separate from the HTTP client (fleet/prometheus_client.h) so that
// tests feed them odd responses directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/fleet.h"

namespace launchguard::fleet {

// One series of a query result: its labels (with __name__ when the query
// keeps it) and its samples (one for an instant vector).
struct Series {
    std::map<std::string, std::string> labels;
    struct Point {
        double time = 0;  // Unix seconds
        double value = 0;
    };
    std::vector<Point> points;
};

// A response of /api/v1/query or /api/v1/query_range: the series of a
// "vector" or "matrix" result. nullopt with `error` set for an error
// response ("bad_data: parse error at char 5 ...") or one that is not the
// API's shape (naming what is wrong). A series whose own shape is wrong is
// skipped and counted in `skipped`, as is one with more than 64 labels. An
// answer that takes more than kMaxParsedAnswerMemory to parse, or whose
// series would hold more than kMaxAnswerMemory, is an error.
// Never throws.
inline constexpr std::size_t kMaxAnswerMemory = std::size_t{192} << 20;
inline constexpr std::size_t kMaxParsedAnswerMemory = std::size_t{192} << 20;
std::optional<std::vector<Series>> parse_query_response(std::string_view body, std::string& error,
                                                        std::size_t* skipped = nullptr);

// The instant queries whose results make the records, in this order, and
// the labels each metric has of its own; whatever other labels a series has
// (instance, job: those of the scrape) tell the nodes apart.
struct SeriesQuery {
    std::string_view metric;
    std::string_view promql;
};
const std::vector<SeriesQuery>& record_queries();

// The results of record_queries(), by metric name.
using SeriesByMetric = std::map<std::string, std::vector<Series>, std::less<>>;

// Node records from the series at one time. A scrape target without a
// readable launchguard_node_info, or whose series contradict each other
// (two node names, an outcome that is none of pass/warn/block/unknown), is an
// error naming it and is left out; the others are read. `origin` names the
// source in errors and records ("http://prometheus:9090"). Each target is
// its record's source (keep_newest: two targets that name one node and
// disagree are a conflict); a check timestamp later than `now` +
// kClockSkewSeconds leaves the target out.
FleetInput records_from_series(const SeriesByMetric& series, const std::string& origin, std::int64_t now = unix_now());

// The same, one query's answer at a time, so that an answer's series are
// let go before the next is read: add() each metric of record_queries() in
// that order, then finish(). add() is false with `error` once the records
// pass kMaxRecordMemory.
class SeriesRecords {
public:
    explicit SeriesRecords(std::string origin, std::int64_t now = unix_now());
    bool add(std::string_view metric, const std::vector<Series>& series, std::string& error);
    FleetInput finish();

    struct Building {
        NodeRecord record;
        bool info = false;
        bool health = false;
        std::string problem;  // a contradiction: the target is left out
    };

private:
    std::string origin_;
    std::int64_t now_;
    std::map<std::string, Building> targets_;
};

// The range queries for conformance over time: nodes per class, and
// conforming nodes per class (check ran, no rule warned or blocked).
std::string_view history_nodes_query();
std::string_view history_conforming_query();

// Conformance over time from the two range results, by class; a step where
// a class has nodes but none conforming is a point with conforming 0. Times
// outside years 1970..9999 are skipped, and bound_history applies.
std::vector<ClassHistory> history_from_series(const std::vector<Series>& nodes, const std::vector<Series>& conforming);

}  // namespace launchguard::fleet
