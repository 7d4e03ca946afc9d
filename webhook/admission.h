// POST /mutate and POST /validate: an AdmissionReview v1 in, an
// AdmissionReview v1 out, over the same core as every other front end
// (kubernetes/workload_review.h). The flow is three stages:
//
//   decode   the AdmissionReview envelope -> AdmissionRequest (or a 400)
//   decide   profile and mode, a refused annotation, the review cache,
//            judging the object -> Ruling (a Verdict, shared with the cache)
//   encode   Ruling or failure -> Answer: every answer's bytes are built here
//
// handle_admission() runs them. It has no sockets, no clock and no global
// state, and it counts and logs nothing: it does update the review cache.
// The server counts and logs each request once, around the handler, from
// the facts an Answer carries (observe.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "endpoint.h"
#include "log.h"
#include "review_cache.h"
#include "util/error.h"
#include "webhook_config.h"

namespace launchguard::webhook {

// What decode reads of an AdmissionReview; views into the parsed review.
struct AdmissionRequest {
    std::string_view uid;
    std::string_view namespace_name;             // "" when absent
    std::string_view kind;                       // request.kind.kind, "" when absent
    const boost::json::value* object = nullptr;  // null: DELETE and CONNECT carry none
    bool dry_run = false;
};

// Stage 1. The error's message is the reason a 400 gives: not a JSON
// object, not an admission.k8s.io/v1 AdmissionReview, no request or uid.
Result<AdmissionRequest> decode_review(const boost::json::value& review);

// Stage 2's result: the verdict, and whether the cache answered (empty
// without a cache or when no review was needed).
struct Ruling {
    std::shared_ptr<const Verdict> verdict;
    std::optional<bool> cache_hit;
};

// Stage 2. Chooses the profile and mode, refuses a forbidden annotation,
// looks the object up in `cache` (may be null) and judges it on a miss,
// inserting the verdict. `request_bytes` bounds what the cache keeps.
Ruling decide(Endpoint endpoint, const AdmissionRequest& request, const WebhookConfig& config, ReviewCache* cache,
              std::size_t request_bytes);

// What the handler answers, and the facts the wrapper around it counts and
// logs (observe.h).
struct Answer {
    unsigned status = 200;
    std::string body;
    std::string_view content_type = "application/json";  // always a literal
    // One log line's fields: uid, kind, namespace, name, profile, mode,
    // decision and the rules by action, or the error.
    LogRecord log;
    std::string error;     // the errors counter's reason ("bad_request", "internal", "unreadable_object"), "" none
    std::string decision;  // the decisions counter's label, "" counts none
    std::optional<bool> cache_hit;
    std::shared_ptr<const Verdict> verdict;  // its findings are counted; null for none
};

// Stage 3. The 200 AdmissionReview for a ruling: the uid echoed, the
// verdict's members (with auditAnnotations.dryRun for a dry run).
Answer encode(const AdmissionRequest& request, const Ruling& ruling);
// Stage 3 for no ruling: 400 (bad_request) or 500 (internal), text/plain with the reason.
Answer encode_failure(unsigned status, std::string_view counter, std::string_view reason);

// The three stages. Never throws: an exception is a 500. A malformed review
// is a 400 with the reason; everything else is a 200 AdmissionReview whose
// response echoes the uid. Only /mutate ever carries a patch, and only a
// non-empty one.
Answer handle_admission(Endpoint endpoint, std::string_view body, const WebhookConfig& config,
                        ReviewCache* cache = nullptr);

// Every warning of a response goes through here. Kubernetes asks for
// warnings of at most 120 characters; cut at a UTF-8 character boundary
// with "..." so kubectl shows whole characters. Control characters and
// invalid UTF-8 are escaped first (printable_text), so a warning cannot
// move the cursor or colour the terminal kubectl prints it on.
std::string fit_warning(std::string_view text, std::size_t max_chars = 120);

}  // namespace launchguard::webhook
