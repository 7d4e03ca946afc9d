// `launchguard review` on a manifest: any bytes become documents or an error,
// and every document a review of it or an error naming a field, without a
// crash, a hang or undefined behaviour. A patch that comes back must apply.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/profile_loader.h"
#include "kubernetes/json_patch.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/workload_review.h"
#include "profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace launchguard;
    static const Profile profile = load_profile("default").value();
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto documents = kubernetes::read_manifest_documents(text, "fuzz.yaml");
    if (!documents) return 0;
    for (const auto& document : *documents) {
        (void)kubernetes::requested_node_labels(document.object);
        kubernetes::ReviewOptions options;
        options.fix_blocking = true;
        auto review = kubernetes::review_workload(document.object, profile, options);
        if (!review || review->patch.empty()) continue;
        if (!kubernetes::apply_json_patch(document.object, review->patch)) std::abort();  // the API server would 500
    }
    return 0;
}
