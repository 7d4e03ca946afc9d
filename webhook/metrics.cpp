#include "metrics.h"

#include <fmt/format.h>

#include <cstdint>

#include "util/prometheus_text.h"

namespace launchguard::webhook {
namespace {

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
    prometheus::TextWriter out;
    out.family("launchguard_webhook_requests_total", "counter", "HTTP requests by endpoint and status code.");
    for (const auto& [key, n] : requests_) {
        out.sample("launchguard_webhook_requests_total",
                   {{"endpoint", key.first}, {"code", std::to_string(key.second)}}, std::uint64_t{n});
    }
    out.family("launchguard_webhook_decisions_total", "counter", "Admission decisions by endpoint.");
    for (const auto& [key, n] : decisions_) {
        out.sample("launchguard_webhook_decisions_total", {{"endpoint", key.first}, {"decision", key.second}},
                   std::uint64_t{n});
    }
    out.family("launchguard_webhook_findings_total", "counter", "Findings by rule and the action taken.");
    for (const auto& [key, n] : findings_) {
        out.sample("launchguard_webhook_findings_total", {{"rule", key.first}, {"action", key.second}},
                   std::uint64_t{n});
    }
    out.family("launchguard_webhook_errors_total", "counter", "Requests answered with an error, by reason.");
    for (const auto& [reason, n] : errors_) {
        out.sample("launchguard_webhook_errors_total", {{"reason", reason}}, std::uint64_t{n});
    }
    out.family("launchguard_webhook_certificate_reloads_total", "counter", "Serving certificate reloads by result.");
    out.sample("launchguard_webhook_certificate_reloads_total", {{"result", "ok"}}, std::uint64_t{reloads_ok_});
    out.sample("launchguard_webhook_certificate_reloads_total", {{"result", "failed"}}, std::uint64_t{reloads_failed_});
    out.family("launchguard_webhook_review_cache_lookups_total", "counter",
               "Admissions answered from an earlier review of the same object (hit) or reviewed (miss).");
    out.sample("launchguard_webhook_review_cache_lookups_total", {{"result", "hit"}}, std::uint64_t{cache_hits_});
    out.sample("launchguard_webhook_review_cache_lookups_total", {{"result", "miss"}}, std::uint64_t{cache_misses_});
    out.family("launchguard_webhook_request_duration_seconds", "histogram",
               "Time from the request's last byte to the response.");
    for (const auto& [endpoint, h] : latency_) {
        for (std::size_t i = 0; i < kBuckets.size(); ++i) {
            out.sample("launchguard_webhook_request_duration_seconds_bucket",
                       {{"endpoint", endpoint}, {"le", fmt::format("{}", kBuckets[i])}}, std::uint64_t{h.buckets[i]});
        }
        out.sample("launchguard_webhook_request_duration_seconds_bucket", {{"endpoint", endpoint}, {"le", "+Inf"}},
                   std::uint64_t{h.count});
        out.sample("launchguard_webhook_request_duration_seconds_sum", {{"endpoint", endpoint}}, h.sum);
        out.sample("launchguard_webhook_request_duration_seconds_count", {{"endpoint", endpoint}},
                   std::uint64_t{h.count});
    }
    return out.take();
}

}  // namespace launchguard::webhook
