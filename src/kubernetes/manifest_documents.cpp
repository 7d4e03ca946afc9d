#include "kubernetes/manifest_documents.h"

#include "kubernetes/yaml_json.h"
#include "util/yaml_guard.h"

#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/stream_parser.hpp>

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

std::string kind_of(const json::value& value) {
    if (!value.is_object()) return "";
    const json::value* kind = value.get_object().if_contains("kind");
    return kind != nullptr && kind->is_string() ? std::string(kind->get_string()) : "";
}

Status add_document(json::value value, const std::string& where, std::size_t document, const std::string& pointer,
                    const std::string& origin, std::vector<ManifestDocument>& out) {
    if (value.is_null()) return Done{};  // an empty document between separators
    auto fail = [&](const std::string& field, const std::string& message) {
        Error e = make_file_error(origin, 0, where + ": " + message);
        e.field = field;
        return Status(e);
    };
    std::string kind = kind_of(value);
    if (kind == "List") {
        const json::value* items = value.get_object().if_contains("items");
        if (items == nullptr || !items->is_array()) return fail("items", "a List needs an items list");
        if (items->get_array().empty()) {
            out.push_back({std::move(value), where, false, document, pointer});
            return Done{};
        }
        for (std::size_t i = 0; i < items->get_array().size(); ++i) {
            auto added = add_document(items->get_array()[i], where + ", items[" + std::to_string(i) + "]", document,
                                      pointer + "/items/" + std::to_string(i), origin, out);
            if (!added) return added;
        }
        return Done{};
    }
    if (kind == "AdmissionReview") {
        const json::value* request = value.get_object().if_contains("request");
        if (request == nullptr || !request->is_object()) return fail("request", "an AdmissionReview needs a request");
        const json::value* object = request->get_object().if_contains("object");
        if (object == nullptr || !object->is_object()) {
            return fail("request.object", "an AdmissionReview needs request.object (the object to admit)");
        }
        out.push_back({*object, where + ", request.object", true, document, pointer});
        return Done{};
    }
    out.push_back({std::move(value), where, false, document, pointer});
    return Done{};
}

// Duplicate keys of a JSON text, with their lines: Boost.JSON's parser
// keeps the last value of a key and says nothing, so the text is walked a
// second time with its SAX parser, one line per write so that each key is
// seen while its line is parsed.
class DuplicateKeyHandler {
public:
    static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

    int line = 1;
    std::size_t document = 0;  // of the file, 1-based, counted as the reader counts them
    std::vector<ManifestDuplicateKey> found;

    bool on_document_begin(boost::system::error_code&) { return true; }
    bool on_document_end(boost::system::error_code&) { return true; }
    bool on_array_begin(boost::system::error_code&) {
        if (!open_.empty()) value_begins();  // a top-level array is not a document: its elements are
        open_.push_back(false);
        keys_.emplace_back();
        return true;
    }
    bool on_array_end(std::size_t, boost::system::error_code&) { return close(); }
    bool on_object_begin(boost::system::error_code&) {
        value_begins();
        open_.push_back(true);
        keys_.emplace_back();
        return true;
    }
    bool on_object_end(std::size_t, boost::system::error_code&) { return close(); }
    bool on_string_part(boost::json::string_view, std::size_t, boost::system::error_code&) { return true; }
    bool on_string(boost::json::string_view, std::size_t, boost::system::error_code&) { return scalar(); }
    bool on_key_part(boost::json::string_view part, std::size_t, boost::system::error_code&) {
        key_.append(part.data(), part.size());
        return true;
    }
    bool on_key(boost::json::string_view part, std::size_t, boost::system::error_code&) {
        key_.append(part.data(), part.size());
        if (!keys_.empty() && !keys_.back().insert(key_).second) found.push_back({document, line, key_});
        key_.clear();
        return true;
    }
    bool on_number_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_int64(std::int64_t, boost::json::string_view, boost::system::error_code&) { return scalar(); }
    bool on_uint64(std::uint64_t, boost::json::string_view, boost::system::error_code&) { return scalar(); }
    bool on_double(double, boost::json::string_view, boost::system::error_code&) { return scalar(); }
    bool on_bool(bool, boost::system::error_code&) { return scalar(); }
    bool on_null(boost::system::error_code&) { return scalar(); }
    bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }

private:
    // A value of the stream is a document; so is an element of an array
    // that is a value of the stream.
    void value_begins() {
        if (open_.empty() || (open_.size() == 1 && !open_.front())) ++document;
    }
    bool scalar() {
        value_begins();
        return true;
    }
    bool close() {
        open_.pop_back();
        keys_.pop_back();
        return true;
    }
    std::vector<bool> open_;  // true: an object
    std::vector<std::set<std::string>> keys_;
    std::string key_;
};

// A top-level array of the stream stands for its elements, which
// value_begins counted; the array itself is not a document.
std::vector<ManifestDuplicateKey> json_duplicate_keys(std::string_view text) {
    boost::json::basic_parser<DuplicateKeyHandler> parser{boost::json::parse_options{}};
    DuplicateKeyHandler& handler = parser.handler();
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t newline = text.find('\n', at);
        std::size_t end = newline == std::string_view::npos ? text.size() : newline + 1;
        while (at < end) {
            boost::system::error_code ec;
            at += parser.write_some(true, text.data() + at, end - at, ec);
            if (ec) return handler.found;       // not reached: the text parsed as JSON already
            if (parser.done()) parser.reset();  // the next value of the stream
        }
        ++handler.line;
    }
    return handler.found;
}

// A JSON value, or several one after another (a JSON stream, as kubectl
// reads a file that starts with `{`); a top-level array stands for its
// elements. Nothing when the text is not JSON.
bool read_json_stream(std::string_view text, std::vector<json::value>& values) {
    std::size_t at = text.find_first_not_of(" \t\r\n");
    json::stream_parser parser;
    while (at != std::string_view::npos) {
        boost::system::error_code ec;
        parser.reset();
        std::size_t used = parser.write_some(text.data() + at, text.size() - at, ec);
        if (!ec && !parser.done()) parser.finish(ec);
        if (ec || !parser.done()) return false;
        json::value value = parser.release();
        if (value.is_array()) {
            for (auto& element : value.get_array()) values.push_back(std::move(element));
        } else {
            values.push_back(std::move(value));
        }
        at = text.find_first_not_of(" \t\r\n", at + used);
    }
    return true;
}

}  // namespace

std::string describe_duplicate_key(const std::string& origin, const ManifestDuplicateKey& duplicate) {
    return origin + ":" + std::to_string(duplicate.line) + ": document " + std::to_string(duplicate.document) +
           ": duplicate key \"" + duplicate.key +
           "\": the last one is read (kubectl reads it so), and the API server's field validation warns about "
           "or refuses a duplicate field";
}

Result<ManifestFile> read_manifest_file(std::string_view text, const std::string& origin) {
    ManifestFile file;
    std::size_t first = text.find_first_not_of(" \t\r\n");
    std::vector<json::value> values;
    if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[') &&
        read_json_stream(text, values)) {
        file.format = ManifestFormat::json;
        for (std::size_t i = 0; i < values.size(); ++i) {
            file.file_documents.push_back(values[i]);
            auto added = add_document(std::move(values[i]), "document " + std::to_string(i + 1), i + 1, "", origin,
                                      file.documents);
            if (!added) return added.error();
        }
        file.duplicate_keys = json_duplicate_keys(text);
        return file;
    }
    // Not JSON after all: YAML flow style reads it below, or says why not.
    if (auto guarded = check_yaml_terminates(text, origin); !guarded) return guarded.error();
    try {
        std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
        if (auto bounded = check_yaml_expansion(documents, origin); !bounded) return bounded.error();
        for (std::size_t i = 0; i < documents.size(); ++i) {
            std::string where = "document " + std::to_string(i + 1);
            DuplicateKeys duplicates;
            json::value value = yaml_to_json(documents[i], &duplicates);
            for (const auto& duplicate : duplicates.found()) {
                file.duplicate_keys.push_back({i + 1, duplicate.line, duplicate.key});
            }
            file.file_documents.push_back(value);
            auto added = add_document(std::move(value), where, i + 1, "", origin, file.documents);
            if (!added) return added.error();
        }
    } catch (const YAML::Exception& e) {
        return yaml_exception_error(e, origin, "not YAML or JSON");
    }
    return file;
}

Result<std::vector<ManifestDocument>> read_manifest_documents(std::string_view text, const std::string& origin) {
    auto file = read_manifest_file(text, origin);
    if (!file) return file.error();
    return std::move(file->documents);
}

}  // namespace launchguard::kubernetes
