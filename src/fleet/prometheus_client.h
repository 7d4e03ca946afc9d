// The HTTP side of `launchguard fleet --prometheus URL`: Prometheus's HTTP
// API over Boost.Beast, plain http or https (OpenSSL, the system's trusted
// certificates, host name checked). One connection per query, a deadline
// on each (connect, TLS, request and response together) and a bound on the
// response's size; every failure is an error naming the URL and, where
// Prometheus said why, its message.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fleet/fleet.h"

namespace launchguard::fleet {

struct PrometheusUrl {
    bool tls = false;
    std::string host;    // without brackets for IPv6
    std::string port;    // "9090" when the URL names none and is http, "443" for https
    std::string prefix;  // path before /api/v1, without a trailing slash ("" or "/prometheus")
    std::string text;    // as given, for messages
};

// "http://host[:port][/prefix]" or https; nullopt with `error` otherwise
// (another scheme, user:password@, a query or fragment, no host).
std::optional<PrometheusUrl> parse_prometheus_url(std::string_view text, std::string& error);

// "90s", "15m", "6h", "2d", "1w", "1h30m" (Prometheus's duration units; ms
// too) as seconds; nullopt when it is not one, or zero.
std::optional<double> parse_duration_seconds(std::string_view text);

// A time as an operator writes it: RFC 3339 ("2026-05-01T10:00:00Z") or
// Unix seconds ("1777629600", "1777629600.5").
std::optional<double> parse_time_seconds(std::string_view text);

// "query=up%7Bjob%3D%22x%22%7D": unreserved bytes as they are, the rest %XX.
std::string url_encode(std::string_view text);

struct PrometheusRequest {
    PrometheusUrl url;
    std::optional<double> at;     // Unix seconds; nullopt: now
    std::optional<double> since;  // start of the history range; nullopt: no history
    std::optional<double> step;   // seconds between history points; nullopt: the range / 120, at least 1 s
    std::chrono::milliseconds timeout{30'000};
    // An answer's bound: with its parsed form and its series (at most
    // kMaxAnswerMemory) beside the records (kMaxRecordMemory), fleet stays
    // under a gigabyte whatever the server sends.
    std::size_t max_response_bytes = std::size_t{64} << 20;
};

// The records at `at` and, with `since`, conformance over [since, at]. On a
// failure that leaves no report (Prometheus unreachable, an error response,
// an unreadable body) nullopt with `error`; series that make no record are
// errors in FleetInput::errors and the rest is read.
std::optional<FleetInput> read_prometheus(const PrometheusRequest& request, std::string& error);

}  // namespace launchguard::fleet
