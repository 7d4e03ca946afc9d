// Manifest files as `kubectl apply -f` reads them: YAML (YAML 1.1 scalars,
// as sigs.k8s.io/yaml resolves them) or JSON (one value, a stream of values,
// or an array of documents), several documents per file,
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

enum class ManifestFormat { json, yaml };

// A key written twice in one mapping (object) of the file: the last one is
// read, as sigs.k8s.io/yaml and encoding/json read it, while the API
// server's field validation warns about or refuses the duplicate field.
struct ManifestDuplicateKey {
    std::size_t document = 0;  // 1-based, of the file
    int line = 0;              // 1-based, of the later key
    std::string key;
};

struct ManifestFile {
    ManifestFormat format = ManifestFormat::yaml;
    // The file's documents as written (a JSON array's elements, a JSON
    // stream's values), index = document - 1; empty YAML documents are null.
    std::vector<boost::json::value> file_documents;
    std::vector<ManifestDocument> documents;
    std::vector<ManifestDuplicateKey> duplicate_keys;
};

// Errors name the origin, the line (YAML) and the field. A List without
// items stays one document (a kind nothing judges), so that every document
// of the file has an entry.
Result<ManifestFile> read_manifest_file(std::string_view text, const std::string& origin);
Result<std::vector<ManifestDocument>> read_manifest_documents(std::string_view text, const std::string& origin);

// "FILE:LINE: document N: duplicate key "K": ..." for a note on stderr.
std::string describe_duplicate_key(const std::string& origin, const ManifestDuplicateKey& duplicate);

}  // namespace launchguard::kubernetes
