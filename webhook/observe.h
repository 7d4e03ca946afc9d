// The one wrapper around the handler: every request the server answers is
// counted here, and every admission logged here, once, after its answer is
// written. Nothing else in the flow counts or logs a request.
#pragma once

#include <chrono>
#include <string_view>

#include "admission.h"
#include "log.h"
#include "metrics.h"

namespace launchguard::webhook {

struct Served {
    std::string_view endpoint;  // "/mutate", "/validate", "/healthz", "/readyz", "/metrics", "other" or "error"
    unsigned status = 200;
    std::chrono::nanoseconds elapsed{};  // from the request's last byte to the answer's
    const Answer* admission = nullptr;   // the handler's answer at /mutate and /validate
    std::string_view error;              // what the server refused (body_too_large, bad_http...), "" for none
};

// Counts the request (by endpoint and code, its latency), the admission's
// facts (cache lookup, decision, findings, error) and the server's error;
// logs an admission's line: the handler's fields, then endpoint, status
// and ms. A 5xx is logged as an error.
void observe(Metrics& metrics, Log& log, const Served& served);

}  // namespace launchguard::webhook
