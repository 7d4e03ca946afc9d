// The webhook's handler on any request body: a 400 with a reason or a 200
// AdmissionReview that echoes the uid, never a crash, a hang or undefined
// behaviour, and never a patch from /validate. An answer from the review
// cache is the answer a fresh review gives. The site adds the launch gate,
// so /mutate's injection meets every fuzzed object too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "admission.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace launchguard::webhook;
    // With the launch gate, so its injection runs on every object that requests a GPU.
    static const WebhookConfig config = [] {
        WebhookConfig site = default_webhook_config("default", launchguard::Mode::enforce).value();
        site.gate.enabled = true;
        site.gate.image = "registry.example/launchguard:1.0";
        return site;
    }();
    static ReviewCache cache(64, 1U << 20);
    std::string_view body(reinterpret_cast<const char*>(data), size);
    for (Endpoint endpoint : {Endpoint::validate, Endpoint::mutate}) {
        Answer answer = handle_admission(endpoint, body, config);
        if (answer.status != 200 && answer.status != 400) std::abort();  // 500 means something threw
        if (endpoint == Endpoint::validate && answer.body.find("\"patch\"") != std::string::npos) std::abort();
        // Twice through the cache: the second is a hit whenever the first was cacheable.
        handle_admission(endpoint, body, config, &cache);
        if (handle_admission(endpoint, body, config, &cache).body != answer.body) std::abort();
    }
    return 0;
}
