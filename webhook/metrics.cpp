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

}  // namespace

void Metrics::request(const std::string& endpoint, unsigned status, std::chrono::nanoseconds elapsed) {
    const double seconds = std::chrono::duration<double>(elapsed).count();
    std::lock_guard lock(mutex_);
    ++requests_[{endpoint, status}];
    Histogram& h = latency_[endpoint];
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
        if (seconds <= kBuckets[i]) ++h.buckets[i];
    }
    ++h.count;
    h.sum += seconds;
}

void Metrics::decision(const std::string& endpoint, const std::string& decision) {
    std::lock_guard lock(mutex_);
    ++decisions_[{endpoint, decision}];
}

void Metrics::finding(const std::string& rule, const std::string& action) {
    std::lock_guard lock(mutex_);
    ++findings_[{rule, action}];
}

void Metrics::error(const std::string& reason) {
    std::lock_guard lock(mutex_);
    ++errors_[reason];
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
    out += "# HELP launchguard_webhook_requests_total HTTP requests by endpoint and status code.\n"
           "# TYPE launchguard_webhook_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
        out += fmt::format("launchguard_webhook_requests_total{{endpoint=\"{}\",code=\"{}\"}} {}\n", label(key.first),
                           key.second, n);
    }
    out += "# HELP launchguard_webhook_decisions_total Admission decisions by endpoint.\n"
           "# TYPE launchguard_webhook_decisions_total counter\n";
    for (const auto& [key, n] : decisions_) {
        out += fmt::format("launchguard_webhook_decisions_total{{endpoint=\"{}\",decision=\"{}\"}} {}\n",
                           label(key.first), label(key.second), n);
    }
    out += "# HELP launchguard_webhook_findings_total Findings by rule and the action taken.\n"
           "# TYPE launchguard_webhook_findings_total counter\n";
    for (const auto& [key, n] : findings_) {
        out += fmt::format("launchguard_webhook_findings_total{{rule=\"{}\",action=\"{}\"}} {}\n", label(key.first),
                           label(key.second), n);
    }
    out += "# HELP launchguard_webhook_errors_total Requests answered with an error, by reason.\n"
           "# TYPE launchguard_webhook_errors_total counter\n";
    for (const auto& [reason, n] : errors_) {
        out += fmt::format("launchguard_webhook_errors_total{{reason=\"{}\"}} {}\n", label(reason), n);
    }
    out += "# HELP launchguard_webhook_certificate_reloads_total Serving certificate reloads by result.\n"
           "# TYPE launchguard_webhook_certificate_reloads_total counter\n";
    out += fmt::format("launchguard_webhook_certificate_reloads_total{{result=\"ok\"}} {}\n", reloads_ok_);
    out += fmt::format("launchguard_webhook_certificate_reloads_total{{result=\"failed\"}} {}\n", reloads_failed_);
    out += "# HELP launchguard_webhook_review_cache_lookups_total Admissions answered from an earlier review of the "
           "same object (hit) or reviewed (miss).\n"
           "# TYPE launchguard_webhook_review_cache_lookups_total counter\n";
    out += fmt::format("launchguard_webhook_review_cache_lookups_total{{result=\"hit\"}} {}\n", cache_hits_);
    out += fmt::format("launchguard_webhook_review_cache_lookups_total{{result=\"miss\"}} {}\n", cache_misses_);
    out += "# HELP launchguard_webhook_request_duration_seconds Time from the request's last byte to the response.\n"
           "# TYPE launchguard_webhook_request_duration_seconds histogram\n";
    for (const auto& [endpoint, h] : latency_) {
        for (std::size_t i = 0; i < kBuckets.size(); ++i) {
            out += fmt::format("launchguard_webhook_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"{}\"}} {}\n",
                               label(endpoint), kBuckets[i], h.buckets[i]);
        }
        out += fmt::format("launchguard_webhook_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"+Inf\"}} {}\n",
                           label(endpoint), h.count);
        out += fmt::format("launchguard_webhook_request_duration_seconds_sum{{endpoint=\"{}\"}} {}\n", label(endpoint), h.sum);
        out += fmt::format("launchguard_webhook_request_duration_seconds_count{{endpoint=\"{}\"}} {}\n", label(endpoint),
                           h.count);
    }
    return out;
}

}  // namespace launchguard::webhook
