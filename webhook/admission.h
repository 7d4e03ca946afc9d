// POST /mutate and POST /validate: an AdmissionReview v1 in, an
// AdmissionReview v1 out, over the same core as every other front end
// (kubernetes/workload_review.h). Pure: no sockets, no clock, no globals,
// so the unit tests call it exactly as the server does.
#pragma once

#include <string>
#include <string_view>

#include "endpoint.h"
#include "log.h"
#include "metrics.h"
#include "review_cache.h"
#include "webhook_config.h"

namespace launchguard::webhook {

struct Answer {
    unsigned status = 200;
    std::string body;
    std::string_view content_type = "application/json";  // always a literal
    // For the server's one log line per request: uid, kind, namespace, name,
    // profile, mode, decision and the rules by action, or the error.
    LogRecord log;
};

// Never throws. A malformed review (not JSON, not an AdmissionReview v1,
// no request or uid) is HTTP 400 with the reason; everything else is a 200
// AdmissionReview whose response echoes the uid. Only /mutate ever carries
// a patch, and only a non-empty one.
// With a cache, an object already reviewed under the same profile and mode
// is answered from its verdict (review_cache.h).
Answer admit(Endpoint endpoint, std::string_view body, const WebhookConfig& config, Metrics& metrics,
             ReviewCache* cache = nullptr);

// Every warning of a response goes through here. Kubernetes asks for
// warnings of at most 120 characters; cut at a UTF-8 character boundary
// with "..." so kubectl shows whole characters. Control characters and
// invalid UTF-8 are escaped first (printable_text), so a warning cannot
// move the cursor or colour the terminal kubectl prints it on.
std::string fit_warning(std::string_view text, std::size_t max_chars = 120);

}  // namespace launchguard::webhook
