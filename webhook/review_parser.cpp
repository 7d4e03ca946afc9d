#include "review_parser.h"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/value_stack.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace launchguard::webhook {
namespace json = boost::json;
namespace {

// Where a container sits, as far as skipping needs to know: the keys that
// lead to request.object.metadata.
enum class Place : std::uint8_t { other, request, object, metadata };

// A basic_parser handler that builds values on a value_stack, as
// json::parser does, except for the two subtrees it skips.
class SkippingHandler {
public:
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    // The stack's own scratch space comes from the request's arena too: from
    // the default resource it was a malloc per document.
    explicit SkippingHandler(json::storage_ptr storage) : stack_(storage) { stack_.reset(std::move(storage)); }

    json::value release() { return stack_.release(); }

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }

    bool on_object_begin(json::error_code&) { return open(); }
    bool on_object_end(std::size_t, json::error_code&) { return close(true); }
    bool on_array_begin(json::error_code&) { return open(); }
    bool on_array_end(std::size_t, json::error_code&) { return close(false); }

    bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
        if (skipping()) return true;
        key_.append(part.data(), part.size());
        return true;
    }
    bool on_key(json::string_view part, std::size_t, json::error_code&) {
        if (skipping()) return true;
        // A key that came in one piece (always, for a body in one buffer) is used where it lies.
        std::string_view key(part.data(), part.size());
        if (!key_.empty()) {
            key_.append(key);
            key = key_;
        }
        skip_next_ = skipped_key(key);
        if (!skip_next_) {
            stack_.push_key(key);
            next_place_ = place_of(key);
        }
        key_.clear();
        return true;
    }

    bool on_string_part(json::string_view part, std::size_t, json::error_code&) {
        if (skipping() || skip_next_) return true;
        stack_.push_chars(part);
        return true;
    }
    bool on_string(json::string_view part, std::size_t, json::error_code&) {
        if (scalar_skipped()) return true;
        stack_.push_string(part);
        return counted();
    }
    bool on_number_part(json::string_view, json::error_code&) { return true; }
    bool on_int64(std::int64_t value, json::string_view, json::error_code&) {
        if (scalar_skipped()) return true;
        stack_.push_int64(value);
        return counted();
    }
    bool on_uint64(std::uint64_t value, json::string_view, json::error_code&) {
        if (scalar_skipped()) return true;
        stack_.push_uint64(value);
        return counted();
    }
    bool on_double(double value, json::string_view, json::error_code&) {
        if (scalar_skipped()) return true;
        stack_.push_double(value);
        return counted();
    }
    bool on_bool(bool value, json::error_code&) {
        if (scalar_skipped()) return true;
        stack_.push_bool(value);
        return counted();
    }
    bool on_null(json::error_code&) {
        if (scalar_skipped()) return true;
        stack_.push_null();
        return counted();
    }
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }

private:
    struct Level {
        std::size_t members = 0;
        Place place = Place::other;
    };

    bool skipping() const { return skip_depth_ > 0; }

    // The key just read names a subtree no review reads.
    bool skipped_key(std::string_view key) const {
        const Place parent = levels_.empty() ? Place::other : levels_.back().place;
        return (parent == Place::request && key == "oldObject") ||
               (parent == Place::metadata && key == "managedFields");
    }

    // The place of a container opened under `key` in the current one.
    Place place_of(std::string_view key) const {
        const std::size_t depth = levels_.size();  // of the container holding the key
        const Place parent = depth == 0 ? Place::other : levels_.back().place;
        if (depth == 1 && key == "request") return Place::request;
        if (parent == Place::request && key == "object") return Place::object;
        if (parent == Place::object && key == "metadata") return Place::metadata;
        return Place::other;
    }

    bool open() {
        if (skipping()) {
            ++skip_depth_;
            return true;
        }
        if (skip_next_) {
            skip_next_ = false;
            skip_depth_ = 1;
            return true;
        }
        levels_.push_back(Level{0, next_place_});
        next_place_ = Place::other;
        return true;
    }

    bool close(bool object) {
        if (skipping()) {
            --skip_depth_;
            return true;
        }
        const std::size_t members = levels_.back().members;
        levels_.pop_back();
        if (object) stack_.push_object(members);
        else stack_.push_array(members);
        return counted();
    }

    bool scalar_skipped() {
        if (skipping()) return true;
        if (skip_next_) {
            skip_next_ = false;
            return true;
        }
        next_place_ = Place::other;
        return false;
    }

    // A value was pushed into the innermost container.
    bool counted() {
        if (!levels_.empty()) ++levels_.back().members;
        return true;
    }

    json::value_stack stack_;
    std::vector<Level> levels_;
    std::string key_;
    Place next_place_ = Place::other;
    bool skip_next_ = false;
    std::size_t skip_depth_ = 0;
};

}  // namespace

json::value parse_admission_review(std::string_view body, std::error_code& ec, json::storage_ptr storage,
                                   const json::parse_options& options) {
    json::basic_parser<SkippingHandler> parser(options, std::move(storage));
    json::error_code error;
    const std::size_t used = parser.write_some(false, body.data(), body.size(), error);
    if (!error && used != body.size()) error = json::error::extra_data;
    if (error) {
        ec = error;
        return nullptr;
    }
    ec = {};
    return parser.handler().release();
}

}  // namespace launchguard::webhook
