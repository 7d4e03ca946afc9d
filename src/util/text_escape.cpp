#include "util/text_escape.h"

#include <cstdint>
#include <cstdio>

namespace launchguard {
namespace {

// Length of the well-formed UTF-8 sequence at text[pos] and its code point,
// or 0 when the byte there does not start one (Unicode 15, table 3-7).
std::size_t sequence_at(std::string_view text, std::size_t pos, std::uint32_t& code_point) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(pos);
    if (lead < 0x80) {
        code_point = lead;
        return 1;
    }
    std::size_t length = 0;
    unsigned char low = 0x80;  // allowed range of the second byte
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
        code_point = lead & 0x1Fu;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        code_point = lead & 0x0Fu;
        if (lead == 0xE0) low = 0xA0;   // overlong
        if (lead == 0xED) high = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        code_point = lead & 0x07u;
        if (lead == 0xF0) low = 0x90;   // overlong
        if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
    } else {
        return 0;
    }
    if (pos + length > text.size()) return 0;
    for (std::size_t i = 1; i < length; ++i) {
        const unsigned char b = byte(pos + i);
        if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xBF)) return 0;
        code_point = (code_point << 6) | (b & 0x3Fu);
    }
    return length;
}

std::string hex_escape(const char* prefix, unsigned value, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%0*X", prefix, digits, value);
    return buf;
}

// Calls on_valid(code_point, bytes) for each well-formed sequence and
// on_invalid(byte) for each byte that starts none.
template <typename OnValid, typename OnInvalid>
void for_each_sequence(std::string_view text, OnValid on_valid, OnInvalid on_invalid) {
    for (std::size_t pos = 0; pos < text.size();) {
        std::uint32_t code_point = 0;
        std::size_t length = sequence_at(text, pos, code_point);
        if (length == 0) {
            on_invalid(static_cast<unsigned char>(text[pos]));
            ++pos;
        } else {
            on_valid(code_point, text.substr(pos, length));
            pos += length;
        }
    }
}

}  // namespace

std::string valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for_each_sequence(
        text, [&](std::uint32_t, std::string_view bytes) { out.append(bytes); },
        [&](unsigned char) { out += "\xEF\xBF\xBD"; });  // U+FFFD REPLACEMENT CHARACTER
    return out;
}

std::string printable_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for_each_sequence(
        text,
        [&](std::uint32_t code_point, std::string_view bytes) {
            if (code_point == '\n')
                out += "\\n";
            else if (code_point == '\r')
                out += "\\r";
            else if (code_point == '\t')
                out += "\\t";
            else if (code_point < 0x20 || code_point == 0x7F)
                out += hex_escape("\\x", code_point, 2);
            else if (code_point >= 0x80 && code_point <= 0x9F)
                out += hex_escape("\\u", code_point, 4);
            else
                out.append(bytes);
        },
        [&](unsigned char byte) { out += hex_escape("\\x", byte, 2); });
    return out;
}

bool is_variable_name(std::string_view name) {
    if (name.empty()) return false;
    auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    if (!alpha(name.front())) return false;
    for (char c : name) {
        if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
    }
    return true;
}

std::string fstab_escape(std::string_view field) {
    std::string out;
    for (char c : field) {
        switch (c) {
            case ' ':
                out += "\\040";
                break;
            case '\t':
                out += "\\011";
                break;
            case '\n':
                out += "\\012";
                break;
            case '\\':
                out += "\\134";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string fstab_unescape(std::string_view field) {
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        // getmntent decodes exactly these four; any other backslash stays.
        if (field[i] == '\\' && field.size() - i >= 4) {
            std::string_view code = field.substr(i + 1, 3);
            char decoded = code == "040"   ? ' '
                           : code == "011" ? '\t'
                           : code == "012" ? '\n'
                           : code == "134" ? '\\'
                                           : '\0';
            if (decoded != '\0') {
                out += decoded;
                i += 3;
                continue;
            }
        }
        out += field[i];
    }
    return out;
}

}  // namespace launchguard
