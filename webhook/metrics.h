// Prometheus text for GET /metrics: requests by endpoint and status code,
// decisions, findings by rule and action, a latency histogram per endpoint,
// errors by reason, certificate reloads and review cache lookups.
// Thread-safe; every session of every I/O thread records here.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace launchguard::webhook {

class Metrics {
public:
    void request(const std::string& endpoint, unsigned status, std::chrono::nanoseconds elapsed);
    void decision(const std::string& endpoint, const std::string& decision);
    void finding(const std::string& rule, const std::string& action);
    void error(const std::string& reason);
    void certificate_reload(bool ok);
    void review_cache(bool hit);

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
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, unsigned>, unsigned long long> requests_;
    std::map<std::pair<std::string, std::string>, unsigned long long> decisions_;
    std::map<std::pair<std::string, std::string>, unsigned long long> findings_;
    std::map<std::string, unsigned long long> errors_;
    std::map<std::string, Histogram> latency_;
    unsigned long long reloads_ok_ = 0;
    unsigned long long reloads_failed_ = 0;
    unsigned long long cache_hits_ = 0;
    unsigned long long cache_misses_ = 0;
};

}  // namespace launchguard::webhook
