#include "review_parser.h"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/value_stack.hpp>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <string.h>  // memmem

#include <algorithm>
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

    // The last event was the key of a subtree left out, and its value has
    // not begun: the caller may check and pass over the value itself.
    [[nodiscard]] bool at_skipped_value() const { return skip_next_ && !skipping(); }
    // Containers open around that value.
    [[nodiscard]] std::size_t depth() const { return levels_.size(); }

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
        if (object)
            stack_.push_object(members);
        else
            stack_.push_array(members);
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

// Passes over one JSON value without building or reporting anything: the
// fast way past a left-out subtree. It accepts only what basic_parser
// accepts (RFC 8259, no extensions, valid UTF-8) and gives up (null) on
// anything it does not vouch for, wrong or merely unusual (a \u surrogate,
// nesting past max_nesting): the caller then parses the whole body with
// basic_parser, which decides and names the error.
class ValueSkipper {
public:
    ValueSkipper(const char* end, std::size_t max_nesting)
        : end_(end), max_nesting_(std::min(max_nesting, open_.size())) {}

    const char* skip(const char* p) {
        std::size_t depth = 0;
    value:
        p = whitespace(p);
        if (p == end_) return nullptr;
        switch (*p) {
            case '{':
            case '[':
                if (depth == max_nesting_) return nullptr;
                open_[depth++] = *p;
                p = whitespace(p + 1);
                if (p == end_) return nullptr;
                if (*p == (open_[depth - 1] == '{' ? '}' : ']')) {
                    ++p;
                    --depth;
                    goto after_value;
                }
                if (open_[depth - 1] == '{') goto key;
                goto value;
            case '"':
                p = string(p + 1);
                break;
            case 't':
                p = literal(p, "true");
                break;
            case 'f':
                p = literal(p, "false");
                break;
            case 'n':
                p = literal(p, "null");
                break;
            default:
                p = number(p);
        }
        if (p == nullptr) return nullptr;
    after_value:
        if (depth == 0) return p;
        p = whitespace(p);
        if (p == end_) return nullptr;
        if (*p == ',') {
            ++p;
            if (open_[depth - 1] == '[') goto value;
            p = whitespace(p);
            if (p == end_) return nullptr;
            goto key;
        }
        if (*p != (open_[depth - 1] == '{' ? '}' : ']')) return nullptr;
        ++p;
        --depth;
        goto after_value;
    key:  // at a non-space character
        if (*p != '"' || (p = string(p + 1)) == nullptr) return nullptr;
        p = whitespace(p);
        if (p == end_ || *p != ':') return nullptr;
        ++p;
        goto value;
    }

private:
    const char* whitespace(const char* p) const {
        while (p != end_ && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
        return p;
    }

    const char* literal(const char* p, std::string_view word) const {
        if (static_cast<std::size_t>(end_ - p) < word.size() || std::string_view(p, word.size()) != word)
            return nullptr;
        return p + word.size();
    }

    // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    const char* number(const char* p) const {
        auto digit = [this](const char* q) { return q != end_ && *q >= '0' && *q <= '9'; };
        auto digits = [&](const char* q) {
            if (!digit(q)) return static_cast<const char*>(nullptr);
            while (digit(q)) ++q;
            return q;
        };
        if (p != end_ && *p == '-') ++p;
        if (!digit(p)) return nullptr;
        if (*p == '0')
            ++p;
        else
            p = digits(p);
        if (p != end_ && *p == '.' && (p = digits(p + 1)) == nullptr) return nullptr;
        if (p != end_ && (*p == 'e' || *p == 'E')) {
            ++p;
            if (p != end_ && (*p == '+' || *p == '-')) ++p;
            p = digits(p);
        }
        return p;
    }

    // After the opening quote; past the closing one.
    const char* string(const char* p) const {
#if defined(__SSE2__)
        const __m128i quote = _mm_set1_epi8('"');
        const __m128i backslash = _mm_set1_epi8('\\');
        const __m128i space = _mm_set1_epi8(0x20);
#endif
        for (;;) {
#if defined(__SSE2__)
            // 16 plain characters at a time: a signed compare with 0x20 also
            // catches bytes of 0x80 and above, which are checked one by one.
            while (end_ - p >= 16) {
                const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
                const __m128i special =
                    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
                                 _mm_cmplt_epi8(chunk, space));
                const int mask = _mm_movemask_epi8(special);
                if (mask != 0) {
                    p += __builtin_ctz(static_cast<unsigned>(mask));
                    break;
                }
                p += 16;
            }
#endif
            if (p == end_) return nullptr;
            const auto c = static_cast<unsigned char>(*p);
            if (c == '"') return p + 1;
            if (c == '\\') {
                p = escape(p + 1);
            } else if (c >= 0x80) {
                p = utf8(p);
            } else if (c < 0x20) {
                return nullptr;
            } else {
                ++p;
            }
            if (p == nullptr) return nullptr;
        }
    }

    // After the backslash.
    const char* escape(const char* p) const {
        if (p == end_) return nullptr;
        switch (*p) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                return p + 1;
            case 'u':
                break;
            default:
                return nullptr;
        }
        if (end_ - p < 5) return nullptr;
        unsigned code = 0;
        for (int i = 1; i <= 4; ++i) {
            const char h = p[i];
            unsigned v;
            if (h >= '0' && h <= '9')
                v = static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
                v = static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                v = static_cast<unsigned>(h - 'A' + 10);
            else
                return nullptr;
            code = code * 16 + v;
        }
        if (code >= 0xD800 && code <= 0xDFFF) return nullptr;  // surrogates: basic_parser's call
        return p + 5;
    }

    // One well-formed UTF-8 sequence (Unicode 15, table 3-7) at p.
    const char* utf8(const char* p) const {
        const auto* u = reinterpret_cast<const unsigned char*>(p);
        const std::size_t left = static_cast<std::size_t>(end_ - p);
        auto continuation = [&](std::size_t i, unsigned char low = 0x80, unsigned char high = 0xBF) {
            return i < left && u[i] >= low && u[i] <= high;
        };
        const unsigned char lead = u[0];
        if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? p + 2 : nullptr;
        if (lead >= 0xE0 && lead <= 0xEF) {
            const unsigned char low = lead == 0xE0 ? 0xA0 : 0x80;
            const unsigned char high = lead == 0xED ? 0x9F : 0xBF;
            return continuation(1, low, high) && continuation(2) ? p + 3 : nullptr;
        }
        if (lead >= 0xF0 && lead <= 0xF4) {
            const unsigned char low = lead == 0xF0 ? 0x90 : 0x80;
            const unsigned char high = lead == 0xF4 ? 0x8F : 0xBF;
            return continuation(1, low, high) && continuation(2) && continuation(3) ? p + 4 : nullptr;
        }
        return nullptr;
    }

    const char* end_;
    std::array<char, 256> open_{};
    std::size_t max_nesting_;
};

json::value parse_whole(std::string_view body, std::error_code& ec, json::storage_ptr storage,
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

// Where the text of a left-out key ends (just past its closing quote), at or
// after `from`; the end of the body when there is none. A match may be a
// string or a key elsewhere: the handler says which.
class SkippedKeys {
public:
    explicit SkippedKeys(std::string_view body) : body_(body) {}
    std::size_t next(std::size_t from) {
        constexpr std::size_t none = std::string_view::npos;
        std::size_t nearest = body_.size();  // where the nearest match so far starts
        std::size_t cut = body_.size();
        for (Key& key : keys_) {
            if (key.found == none || key.found < from) {
                key.found = none;
                // Only a match that starts before the nearest one matters, and
                // no text is searched twice: oldObject is not looked for across
                // the managedFields that are then passed over.
                const std::size_t start = std::max(from, key.clear_to);
                const std::size_t stop = std::min(body_.size(), nearest + key.text.size());
                if (start < stop) {
                    // memmem, not string_view::find: that one stops at every '"'.
                    const void* hit = ::memmem(body_.data() + start, stop - start, key.text.data(), key.text.size());
                    if (hit != nullptr)
                        key.found = static_cast<std::size_t>(static_cast<const char*>(hit) - body_.data());
                }
                if (key.found == none) key.clear_to = std::max(key.clear_to, nearest);
            }
            if (key.found != none && key.found < nearest) {
                nearest = key.found;
                cut = key.found + key.text.size();
            }
        }
        return cut;
    }

private:
    struct Key {
        std::string_view text;
        std::size_t clear_to = 0;  // no match starts before this
        std::size_t found = std::string_view::npos;
    };
    std::string_view body_;
    std::array<Key, 2> keys_{{{R"("managedFields")"}, {R"("oldObject")"}}};
};

}  // namespace

json::value parse_admission_review(std::string_view body, std::error_code& ec, json::storage_ptr storage,
                                   const json::parse_options& options) {
    // The body goes to basic_parser in pieces cut after each left-out key.
    // When the handler confirms such a key, ValueSkipper passes over its
    // value (managedFields is most of a real request's bytes, and tokenizing
    // it was most of the parse) and the parser is given `null` in its place.
    json::basic_parser<SkippingHandler> parser(options, storage);
    json::error_code error;
    SkippedKeys keys(body);
    std::size_t at = 0;
    for (;;) {
        const std::size_t cut = keys.next(at);
        const bool last = cut == body.size();
        const std::size_t used = parser.write_some(!last, body.data() + at, cut - at, error);
        if (!error && used != cut - at) error = json::error::extra_data;
        if (error) {
            ec = error;
            return nullptr;
        }
        at = cut;
        if (last) break;
        if (!parser.handler().at_skipped_value()) continue;
        const std::size_t nesting =
            options.max_depth > parser.handler().depth() + 1 ? options.max_depth - parser.handler().depth() - 1 : 0;
        ValueSkipper skipper(body.data() + body.size(), nesting);
        const char* p = body.data() + at;
        while (p != body.data() + body.size() && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
        const char* after = p != body.data() + body.size() && *p == ':' ? skipper.skip(p + 1) : nullptr;
        if (after == nullptr) return parse_whole(body, ec, std::move(storage), options);
        parser.write_some(true, ":null", 5, error);
        if (error) {
            ec = error;
            return nullptr;
        }
        at = static_cast<std::size_t>(after - body.data());
    }
    ec = {};
    return parser.handler().release();
}

}  // namespace launchguard::webhook
