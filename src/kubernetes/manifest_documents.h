// Manifest files as `kubectl apply -f` reads them: YAML (YAML 1.1 scalars,
// as sigs.k8s.io/yaml resolves them) or JSON, several documents per file,
// `kind: List` expanded into its items, and an AdmissionReview judged by its
// request.object. Each document becomes the JSON value the API server would
// hand a webhook.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "util/error.h"

namespace launchguard::kubernetes {

struct ManifestDocument {
    boost::json::value object;
    std::string where;  // "document 2", "document 1, items[3]", "document 1, request.object"
    // The document was an AdmissionReview: `object` is its request.object.
    bool admission_review = false;
    // The document of the file it comes from (1-based; a JSON array's
    // elements count as documents), and the RFC 6901 pointer of `object` in
    // it: "" for the document itself, "/items/3" for an item of a List. An
    // AdmissionReview's object keeps "", as a webhook's patch addresses it.
    std::size_t document = 0;
    std::string pointer;
};

// Errors name the origin, the line (YAML) and the field. A List without
// items stays one document (a kind nothing judges), so that every document
// of the file has an entry.
Result<std::vector<ManifestDocument>> read_manifest_documents(std::string_view text, const std::string& origin);

}  // namespace launchguard::kubernetes
