// `launchguard review` on a manifest: any bytes become documents or an error,
// and every document a review of it or an error naming a field, without a
// crash, a hang or undefined behaviour. A patch that comes back must apply.
// Aliases and merge keys (`<<`) expand, but never past the stated bound: the
// documents of one file hold at most kMaxYamlNodes values together.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "engine/profile_loader.h"
#include "kubernetes/json_patch.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/workload_review.h"
#include "profile/profile.h"
#include "util/yaml_guard.h"

namespace {

// Values in `root`, counting each member and element: what the YAML
// expanded to.
std::size_t json_nodes(const boost::json::value& root) {
    std::size_t count = 0;
    std::vector<const boost::json::value*> pending{&root};
    while (!pending.empty()) {
        const boost::json::value* value = pending.back();
        pending.pop_back();
        ++count;
        if (value->is_array()) {
            for (const auto& item : value->get_array()) pending.push_back(&item);
        } else if (value->is_object()) {
            for (const auto& entry : value->get_object()) pending.push_back(&entry.value());
        }
    }
    return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace launchguard;
    static const Profile profile = load_profile("default").value();
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto documents = kubernetes::read_manifest_documents(text, "fuzz.yaml");
    if (!documents) return 0;
    std::size_t expanded = 0;
    for (const auto& document : *documents) expanded += json_nodes(document.object);
    if (expanded > kMaxYamlNodes) std::abort();  // an alias or merge expanded past the bound
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
