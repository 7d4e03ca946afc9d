// Recent admission verdicts, keyed by everything the review reads of an
// object. A Job with 64 pods sends 64 Pod admissions whose specs are the
// same template; the mutating and validating webhooks, and the API
// server's reinvocation, see the same object again. A hit costs a hash and
// a compare, and answers with the verdict's serialized response members.
//
// Why it stays: the webhook's targets (docs/design/WEBHOOK.md: 5,000
// reviews/s per 2-core replica, p99 at most 2 ms at 1,000/s) are met on
// bench/webhook_bench.sh's repeated object only with it. Without it (every
// request reviewed) the server made 3,039 requests/s where it made 15,109
// with it, in the same run on the shared 2-vCPU machine (load average 13-19;
// nginx made 6,588/s for the same bytes); on the idle machine, 4,392/s and a
// p99 of 2.6 ms without it, 13,258/s and 1.57 ms with it.
//
// The key is what the Kubernetes reader reads of the object
// (kubernetes::review_input, which owns that definition), plus the
// endpoint, profile and mode, and what the launch gate's choice was, with
// the text of its warning: everything the answer says. Lookups compare whole
// keys, never only hashes: a pod crafted to collide with an allowed one's
// hash is a miss.
// Thread-safe; bounded by entries and by the bytes of the requests whose
// verdicts it holds (a stand-in for their memory).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "endpoint.h"
#include "engine/engine.h"
#include "profile/profile.h"

namespace launchguard::webhook {

// What the review of one object decided, less what differs per request
// (the uid, the object's name).
struct Verdict {
    // The AdmissionReview response's members after "uid", serialized with
    // their leading commas: allowed, status, patchType/patch, warnings,
    // auditAnnotations; and the same with auditAnnotations.dryRun.
    std::string members;
    std::string members_dry_run;
    std::vector<std::pair<std::string_view, std::string>> log;  // decision, rules by action, note, error; literal keys
    std::string decision;                                       // for the decision counter; "" counts none
    std::vector<std::pair<std::string, std::string>> findings;  // (rule, action) for the findings counter
    std::string error;                                          // error counter reason, "" for none
};

// One admission's object as a cache lookup sees it; `object` is borrowed.
struct ReviewProbe {
    Endpoint endpoint = Endpoint::mutate;
    const Profile* profile = nullptr;
    Mode mode = Mode::enforce;
    const boost::json::value* object = nullptr;
    std::size_t hash = 0;
    // What /mutate does about the launch gate (added, opted out, a refused
    // opt-out warned about), and the warning's text, which quotes the
    // annotation's value: the top-level annotation that decides them is not
    // part of the review input. Borrowed.
    unsigned gate = 0;
    std::string_view gate_warning;
};

ReviewProbe review_probe(Endpoint endpoint, const Profile* profile, Mode mode, const boost::json::value& object,
                         unsigned gate = 0, std::string_view gate_warning = {});

class ReviewCache {
public:
    ReviewCache(std::size_t max_entries, std::size_t max_bytes);

    // Null on a miss.
    std::shared_ptr<const Verdict> find(const ReviewProbe& probe);
    // `request_bytes`: the size of the request the verdict came from. Keeps
    // a copy of what the review read of the object.
    void insert(const ReviewProbe& probe, std::shared_ptr<const Verdict> verdict, std::size_t request_bytes);

    struct Counts {
        unsigned long long hits = 0;
        unsigned long long misses = 0;
        std::size_t entries = 0;
    };
    [[nodiscard]] Counts counts() const;

private:
    struct Entry {
        Endpoint endpoint;
        const Profile* profile;
        Mode mode;
        unsigned gate;
        std::string gate_warning;
        boost::json::value input;  // kubernetes::review_input of the object
        std::size_t hash;
        std::shared_ptr<const Verdict> verdict;
        std::size_t bytes;
    };
    using Lru = std::list<Entry>;  // most recently used first
    static bool matches(const Entry& entry, const ReviewProbe& probe);

    std::size_t max_entries_;
    std::size_t max_bytes_;
    mutable std::mutex mutex_;
    Lru lru_;
    std::unordered_multimap<std::size_t, Lru::iterator> by_hash_;
    std::size_t bytes_ = 0;
    unsigned long long hits_ = 0;
    unsigned long long misses_ = 0;
};

}  // namespace launchguard::webhook
