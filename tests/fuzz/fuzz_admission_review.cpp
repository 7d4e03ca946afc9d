// The webhook's handler on any request body: a 400 with a reason or a 200
// AdmissionReview that echoes the uid, never a crash, a hang or undefined
// behaviour, and never a patch from /validate.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "admission.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace launchguard::webhook;
    static const WebhookConfig config = default_webhook_config("default", launchguard::Mode::enforce).value();
    static Metrics metrics;
    std::string_view body(reinterpret_cast<const char*>(data), size);
    for (Endpoint endpoint : {Endpoint::validate, Endpoint::mutate}) {
        Answer answer = admit(endpoint, body, config, metrics);
        if (answer.status != 200 && answer.status != 400) std::abort();  // 500 means something threw
        if (endpoint == Endpoint::validate && answer.body.find("\"patch\"") != std::string::npos) std::abort();
    }
    return 0;
}
