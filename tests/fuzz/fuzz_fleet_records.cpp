// `launchguard fleet`: node records as a directory or stream holds them,
// and Prometheus's answers as `fleet --prometheus` reads them. The first
// byte picks the parser. Whatever the input, every host ends with one
// record, a host whose sources disagree does not conform, the history (from
// records at several times, or from range answers) stays within its bounds,
// and the report renders.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>

#include "fleet/fleet.h"
#include "fleet/fleet_render.h"
#include "fleet/prometheus_source.h"

namespace {

using namespace launchguard::fleet;

void check_history(const std::vector<ClassHistory>& history) {
    if (history.size() > kMaxHistoryClasses) std::abort();
    for (const auto& h : history) {
        if (h.points.size() > kMaxHistoryPoints) std::abort();
        for (const auto& p : h.points) {
            if (p.time < 0 || p.conforming > p.nodes) std::abort();
        }
    }
}

void check_report(FleetInput input) {
    std::set<std::string> hosts;
    for (const auto& node : input.nodes) {
        if (!hosts.insert(node.hostname).second) std::abort();
        if (!node.conflict.empty() && conforms(node)) std::abort();
    }
    if (input.errors.size() > kMaxErrorsKept) std::abort();
    const FleetReport report = analyze_fleet(std::move(input), 0.5);
    (void)render_fleet_text(report);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] % 2 == 0) {
        // Two sources, so that claims of one host from both meet.
        FleetInput input;
        input.now = 1777629600;
        const std::size_t half = text.find('\x1e');
        read_records_text(text.substr(0, half), "records/node-a1.json", input, true);
        if (half != std::string_view::npos) read_records_text(text.substr(half + 1), "records/x.jsonl", input, true);
        // As read_fleet does: history from every record, before keep_newest.
        input.history = history_of_records(input.nodes);
        bound_history(input.history);
        check_history(input.history);
        keep_newest(input);
        check_report(std::move(input));
        return 0;
    }
    std::string error;
    auto series = parse_query_response(text, error);
    if (!series) return 0;
    SeriesRecords records("http://prom:9090", 1777629600);
    for (const auto& q : record_queries()) {
        if (!records.add(q.metric, *series, error)) return 0;
    }
    check_report(records.finish());
    check_history(history_from_series(*series, *series));
    return 0;
}
