#include "util/prometheus_text.h"

#include <fmt/format.h>

#include <iterator>

namespace launchguard::prometheus {

namespace {

// The format's one escape: backslash and newline, and in label values the
// double quote too.
void append_escaped(std::string& out, std::string_view text, bool quote) {
    for (char c : text) {
        if (c == '\\' || (quote && c == '"')) out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
}

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    append_escaped(out, value, true);
    return out;
}

void TextWriter::family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    append_escaped(out_, help, false);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
}

void TextWriter::name_and_labels(std::string_view name, std::initializer_list<Label> labels) {
    out_ += name;
    if (labels.size() == 0) return;
    char separator = '{';
    for (const Label& label : labels) {
        out_ += separator;
        out_ += label.name;
        out_ += "=\"";
        append_escaped(out_, label.value, true);
        out_ += '"';
        separator = ',';
    }
    out_ += '}';
}

void TextWriter::sample(std::string_view name, std::initializer_list<Label> labels, std::uint64_t value) {
    name_and_labels(name, labels);
    fmt::format_to(std::back_inserter(out_), " {}\n", value);
}

void TextWriter::sample(std::string_view name, std::initializer_list<Label> labels, double value) {
    name_and_labels(name, labels);
    fmt::format_to(std::back_inserter(out_), " {:.6f}\n", value);
}

}  // namespace launchguard::prometheus
