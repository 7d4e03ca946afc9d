// Prometheus text for GET /metrics: requests by endpoint and status code,
// decisions, findings by rule and action, a latency histogram per endpoint,
// errors by reason, certificate reloads and review cache lookups.
// Thread-safe; every session of every I/O thread records here. Lookups
// take views and allocate only for a label set seen the first time: an
// admission records under one lock, with no allocation.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace launchguard::webhook {

class Metrics {
public:
    void request(std::string_view endpoint, unsigned status, std::chrono::nanoseconds elapsed);
    void decision(std::string_view endpoint, std::string_view decision);
    void finding(std::string_view rule, std::string_view action);
    void error(std::string_view reason);
    void certificate_reload(bool ok);
    void review_cache(bool hit);
    // What one reviewed admission counts, under one lock: the cache lookup
    // (none without a cache), the error reason and the decision ("" for
    // none), the findings as (rule, action).
    void admission(std::string_view endpoint, std::optional<bool> cache_hit, std::string_view error,
                   std::string_view decision, std::span<const std::pair<std::string, std::string>> findings);

    [[nodiscard]] std::string render() const;

    // Upper bounds of the latency buckets, seconds (+Inf is implied).
    static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025,
                                                        0.05,   0.1,   0.25,  0.5,   1.0,  2.5};

private:
    struct Histogram {
        std::array<unsigned long long, kBuckets.size()> buckets{};
        unsigned long long count = 0;
        double sum = 0;
    };
    // Orders (string, X) keys against (string_view, X) probes.
    struct LabelsLess {
        using is_transparent = void;
        template <class A, class B>
        bool operator()(const A& a, const B& b) const {
            const std::string_view a_first(a.first);
            const std::string_view b_first(b.first);
            if (a_first != b_first) return a_first < b_first;
            return view(a.second) < view(b.second);
        }
        static std::string_view view(std::string_view text) { return text; }
        static unsigned view(unsigned number) { return number; }
    };
    template <class Second>
    using Counters = std::map<std::pair<std::string, Second>, unsigned long long, LabelsLess>;

    void count_decision(std::string_view endpoint, std::string_view decision);
    void count_finding(std::string_view rule, std::string_view action);
    void count_error(std::string_view reason);

    mutable std::mutex mutex_;
    Counters<unsigned> requests_;
    Counters<std::string> decisions_;
    Counters<std::string> findings_;
    std::map<std::string, unsigned long long, std::less<>> errors_;
    std::map<std::string, Histogram, std::less<>> latency_;
    unsigned long long reloads_ok_ = 0;
    unsigned long long reloads_failed_ = 0;
    unsigned long long cache_hits_ = 0;
    unsigned long long cache_misses_ = 0;
};

}  // namespace launchguard::webhook
