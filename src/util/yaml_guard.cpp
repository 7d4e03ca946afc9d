#include "util/yaml_guard.h"

namespace launchguard {
namespace {

struct Cursor {
    std::string_view text;
    std::size_t pos = 0;
    int line = 1;

    [[nodiscard]] bool done() const { return pos >= text.size(); }
    [[nodiscard]] char peek() const { return text[pos]; }
    void advance() {
        if (text[pos] == '\n') ++line;
        ++pos;
    }
    [[nodiscard]] bool at_line_start() const { return pos == 0 || text[pos - 1] == '\n'; }
};

void skip_comment(Cursor& c) {
    while (!c.done() && c.peek() != '\n') c.advance();
}

void skip_quoted(Cursor& c) {
    const char quote = c.peek();
    c.advance();
    while (!c.done()) {
        const char ch = c.peek();
        if (quote == '"' && ch == '\\') {
            c.advance();
            if (!c.done()) c.advance();
            continue;
        }
        c.advance();
        if (ch == quote) {
            if (quote == '\'' && !c.done() && c.peek() == '\'') {  // '' is an escaped quote
                c.advance();
                continue;
            }
            return;
        }
    }
}

// Whitespace and comments; false at a "---" or "..." line (the document ends).
bool skip_space(Cursor& c) {
    while (!c.done()) {
        const char ch = c.peek();
        if (c.at_line_start() && (c.text.substr(c.pos, 3) == "---" || c.text.substr(c.pos, 3) == "...")) return false;
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
            c.advance();
        } else if (ch == '#') {
            skip_comment(c);
        } else if (ch == '%' && c.at_line_start()) {  // a directive
            skip_comment(c);
        } else {
            return true;
        }
    }
    return false;
}

void skip_to_next_document(Cursor& c) {
    while (!c.done()) {
        if (c.at_line_start() && c.text.substr(c.pos, 3) == "---") {
            for (int i = 0; i < 3; ++i) c.advance();
            return;
        }
        c.advance();
    }
}

}  // namespace

Status check_yaml_flow_roots(std::string_view text, const std::string& origin) {
    Cursor c{text};
    while (!c.done()) {
        if (!skip_space(c)) {
            skip_to_next_document(c);
            continue;
        }
        if (c.peek() != '[' && c.peek() != '{') {
            skip_to_next_document(c);  // a block document: yaml-cpp copes
            continue;
        }
        int depth = 0;
        bool closed = false;
        while (!c.done() && !closed) {
            const char ch = c.peek();
            if (ch == '"' || ch == '\'') {
                skip_quoted(c);
                continue;
            }
            if (ch == '#' && c.pos > 0 && (text[c.pos - 1] == ' ' || text[c.pos - 1] == '\t')) {
                skip_comment(c);
                continue;
            }
            if (ch == '[' || ch == '{') ++depth;
            if (ch == ']' || ch == '}') closed = --depth == 0;
            c.advance();
        }
        if (closed && skip_space(c) && c.peek() == ',') {
            return make_file_error(origin, c.line,
                                   "invalid YAML: a ',' after the flow collection that is the document's root");
        }
        skip_to_next_document(c);
    }
    return Done{};
}

}  // namespace launchguard
