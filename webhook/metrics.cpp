#include "metrics.h"

#include <fmt/format.h>

namespace launchguard::webhook {
namespace {

// Label values are rule ids, endpoints and fixed words, but escape anyway:
// the text format breaks on a quote, a backslash or a newline.
std::string label(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

// The counter for these labels, made the first time they are seen.
template <class Map, class Probe, class Key>
unsigned long long& counter(Map& map, const Probe& probe, Key&& key) {
    auto it = map.find(probe);
    if (it == map.end()) it = map.emplace(std::forward<Key>(key), 0).first;
    return it->second;
}

}  // namespace

void Metrics::request(std::string_view endpoint, unsigned status, std::chrono::nanoseconds elapsed) {
    const double seconds = std::chrono::duration<double>(elapsed).count();
    std::lock_guard lock(mutex_);
    ++counter(requests_, std::pair<std::string_view, unsigned>(endpoint, status),
              std::pair<std::string, unsigned>(endpoint, status));
    auto histogram = latency_.find(endpoint);
    if (histogram == latency_.end()) histogram = latency_.emplace(std::string(endpoint), Histogram{}).first;
    Histogram& h = histogram->second;
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
        if (seconds <= kBuckets[i]) ++h.buckets[i];
    }
    ++h.count;
    h.sum += seconds;
}

void Metrics::count_decision(std::string_view endpoint, std::string_view decision) {
    ++counter(decisions_, std::pair<std::string_view, std::string_view>(endpoint, decision),
              std::pair<std::string, std::string>(endpoint, decision));
}

void Metrics::count_finding(std::string_view rule, std::string_view action) {
    ++counter(findings_, std::pair<std::string_view, std::string_view>(rule, action),
              std::pair<std::string, std::string>(rule, action));
}

void Metrics::count_error(std::string_view reason) { ++counter(errors_, reason, std::string(reason)); }

void Metrics::decision(std::string_view endpoint, std::string_view decision) {
    std::lock_guard lock(mutex_);
    count_decision(endpoint, decision);
}

void Metrics::finding(std::string_view rule, std::string_view action) {
    std::lock_guard lock(mutex_);
    count_finding(rule, action);
}

void Metrics::error(std::string_view reason) {
    std::lock_guard lock(mutex_);
    count_error(reason);
}

void Metrics::admission(std::string_view endpoint, std::optional<bool> cache_hit, std::string_view error,
                        std::string_view decision, std::span<const std::pair<std::string, std::string>> findings) {
    std::lock_guard lock(mutex_);
    if (cache_hit) ++(*cache_hit ? cache_hits_ : cache_misses_);
    if (!error.empty()) count_error(error);
    if (!decision.empty()) count_decision(endpoint, decision);
    for (const auto& [rule, action] : findings) count_finding(rule, action);
}

void Metrics::certificate_reload(bool ok) {
    std::lock_guard lock(mutex_);
    ++(ok ? reloads_ok_ : reloads_failed_);
}

void Metrics::review_cache(bool hit) {
    std::lock_guard lock(mutex_);
    ++(hit ? cache_hits_ : cache_misses_);
}

std::string Metrics::render() const {
    std::lock_guard lock(mutex_);
    std::string out;
    out +=
        "# HELP launchguard_webhook_requests_total HTTP requests by endpoint and status code.\n"
        "# TYPE launchguard_webhook_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
        out += fmt::format("launchguard_webhook_requests_total{{endpoint=\"{}\",code=\"{}\"}} {}\n", label(key.first),
                           key.second, n);
    }
    out +=
        "# HELP launchguard_webhook_decisions_total Admission decisions by endpoint.\n"
        "# TYPE launchguard_webhook_decisions_total counter\n";
    for (const auto& [key, n] : decisions_) {
        out += fmt::format("launchguard_webhook_decisions_total{{endpoint=\"{}\",decision=\"{}\"}} {}\n",
                           label(key.first), label(key.second), n);
    }
    out +=
        "# HELP launchguard_webhook_findings_total Findings by rule and the action taken.\n"
        "# TYPE launchguard_webhook_findings_total counter\n";
    for (const auto& [key, n] : findings_) {
        out += fmt::format("launchguard_webhook_findings_total{{rule=\"{}\",action=\"{}\"}} {}\n", label(key.first),
                           label(key.second), n);
    }
    out +=
        "# HELP launchguard_webhook_errors_total Requests answered with an error, by reason.\n"
        "# TYPE launchguard_webhook_errors_total counter\n";
    for (const auto& [reason, n] : errors_) {
        out += fmt::format("launchguard_webhook_errors_total{{reason=\"{}\"}} {}\n", label(reason), n);
    }
    out +=
        "# HELP launchguard_webhook_certificate_reloads_total Serving certificate reloads by result.\n"
        "# TYPE launchguard_webhook_certificate_reloads_total counter\n";
    out += fmt::format("launchguard_webhook_certificate_reloads_total{{result=\"ok\"}} {}\n", reloads_ok_);
    out += fmt::format("launchguard_webhook_certificate_reloads_total{{result=\"failed\"}} {}\n", reloads_failed_);
    out +=
        "# HELP launchguard_webhook_review_cache_lookups_total Admissions answered from an earlier review of the "
        "same object (hit) or reviewed (miss).\n"
        "# TYPE launchguard_webhook_review_cache_lookups_total counter\n";
    out += fmt::format("launchguard_webhook_review_cache_lookups_total{{result=\"hit\"}} {}\n", cache_hits_);
    out += fmt::format("launchguard_webhook_review_cache_lookups_total{{result=\"miss\"}} {}\n", cache_misses_);
    out +=
        "# HELP launchguard_webhook_request_duration_seconds Time from the request's last byte to the response.\n"
        "# TYPE launchguard_webhook_request_duration_seconds histogram\n";
    for (const auto& [endpoint, h] : latency_) {
        for (std::size_t i = 0; i < kBuckets.size(); ++i) {
            out += fmt::format("launchguard_webhook_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"{}\"}} {}\n",
                               label(endpoint), kBuckets[i], h.buckets[i]);
        }
        out += fmt::format("launchguard_webhook_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"+Inf\"}} {}\n",
                           label(endpoint), h.count);
        out += fmt::format("launchguard_webhook_request_duration_seconds_sum{{endpoint=\"{}\"}} {}\n", label(endpoint),
                           h.sum);
        out += fmt::format("launchguard_webhook_request_duration_seconds_count{{endpoint=\"{}\"}} {}\n",
                           label(endpoint), h.count);
    }
    return out;
}

}  // namespace launchguard::webhook
