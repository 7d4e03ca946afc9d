// Word expansion as the shell does it before running a command: quotes,
// $NAME and ${NAME}, the defaults ${NAME:-x} and ${NAME:=x}, "${A[@]}", and
// what only the running job knows ($(...), backquotes, $1), which leaves the
// word unknown with the construct that makes it so.
#include "shell/interpreter.h"

#include <cctype>

namespace launchguard::shell {

std::vector<Word> Interpreter::expand(const RawWord& raw) {
    std::string_view text = raw.raw;
    if (expand_depth_ >= kMaxNesting) return {Word{"", false, "defaults nested too deep", std::nullopt, {}}};
    ++expand_depth_;
    // A nested expansion (a default's text) keeps no pattern of its own.
    std::string saved_pattern = std::move(pattern_);
    bool saved_ok = pattern_ok_;
    bool saved_used = pattern_used_;
    std::vector<Word> words = expand_unguarded(text);
    pattern_ = std::move(saved_pattern);
    pattern_ok_ = saved_ok;
    pattern_used_ = saved_used;
    --expand_depth_;
    return words;
}

std::vector<Word> Interpreter::expand_unguarded(std::string_view text) {
    // "${A[@]}": the array's elements, one word each.
    std::string_view bare = text;
    if (bare.size() >= 2 && bare.front() == '"' && bare.back() == '"') bare = bare.substr(1, bare.size() - 2);
    if (bare.starts_with("${") && (bare.ends_with("[@]}") || bare.ends_with("[*]}"))) {
        std::string_view name = bare.substr(2, bare.size() - 6);
        auto it = variables.find(name);
        if (it == variables.end()) return {};
        if (!it->second.array_known) return {Word{"", false, std::string(text), std::nullopt, {}}};
        return it->second.array;
    }
    Word word;
    pattern_.clear();
    pattern_ok_ = keep_patterns;
    pattern_used_ = false;
    bool quoted = false;
    bool had_expansion = false;
    std::size_t i = 0;
    auto unknown = [&](std::string_view construct) {
        if (word.known) word.why_unknown = std::string(construct);
        word.known = false;
        pattern_ok_ = false;
        word.runtime_parts.push_back({word.text.size(), std::string(construct)});
    };
    // Literal text: a '$' in it would read as a reference in the pattern.
    auto literal = [&](std::string_view piece) {
        word.text += piece;
        if (piece.find_first_of("$`") != std::string_view::npos) pattern_ok_ = false;
        pattern_ += piece;
    };
    while (i < text.size()) {
        char c = text[i];
        if (c == '\'') {
            quoted = true;
            std::size_t end = text.find('\'', i + 1);
            if (end == std::string_view::npos) end = text.size();
            literal(text.substr(i + 1, end - i - 1));
            i = end + 1;
        } else if (c == '"') {
            quoted = true;
            ++i;
            while (i < text.size() && text[i] != '"') {
                if (text[i] == '\\' && i + 1 < text.size() &&
                    std::string_view("$`\"\\\n").find(text[i + 1]) != std::string_view::npos) {
                    if (text[i + 1] != '\n') literal(text.substr(i + 1, 1));
                    i += 2;
                } else if (text[i] == '$' || text[i] == '`') {
                    had_expansion = true;
                    i = expand_dollar(text, i, word, unknown);
                } else {
                    literal(text.substr(i++, 1));
                }
            }
            ++i;
        } else if (c == '\\' && i + 1 < text.size()) {
            literal(text.substr(i + 1, 1));
            i += 2;
        } else if (c == '$' || c == '`') {
            had_expansion = true;
            i = expand_dollar(text, i, word, unknown);
        } else if (c == '~' && i == 0) {
            unknown("~ (the home directory on the compute node)");
            ++i;
        } else {
            literal(text.substr(i++, 1));
        }
    }
    if (!quoted && had_expansion && word.known && word.text.empty()) return {};
    if (!word.known && pattern_ok_ && pattern_used_) word.pattern = pattern_;
    return {word};
}

// Expands the $-construct (or backquote) at text[i]; returns the index after it.
template <typename Unknown>
std::size_t Interpreter::expand_dollar(std::string_view text, std::size_t i, Word& word, Unknown&& unknown) {
    if (text[i] == '`') {
        std::size_t end = text.find('`', i + 1);
        end = end == std::string_view::npos ? text.size() : end + 1;
        unknown(text.substr(i, end - i));
        return end;
    }
    if (i + 1 >= text.size()) {
        word.text += '$';
        pattern_ok_ = false;
        return i + 1;
    }
    char next = text[i + 1];
    if (next == '(' || next == '{') {
        // Index just after the bracket that closes the one at text[i + 1].
        const char close = next == '(' ? ')' : '}';
        std::size_t end = text.size();
        int depth = 0;
        for (std::size_t j = i + 1; j < text.size(); ++j) {
            if (text[j] == '\\') {
                ++j;
            } else if (text[j] == '\'' && next == '(') {
                std::size_t quote = text.find('\'', j + 1);
                if (quote == std::string_view::npos) break;
                j = quote;
            } else if (text[j] == next) {
                ++depth;
            } else if (text[j] == close && --depth == 0) {
                end = j + 1;
                break;
            }
        }
        std::string_view group = text.substr(i, end - i);
        if (next == '(') {
            unknown(group);
        } else {
            expand_parameter(group.substr(2, group.size() >= 3 ? group.size() - 3 : 0), group, word, unknown);
        }
        return end;
    }
    if (is_name_start(next)) {
        std::size_t end = i + 1;
        while (end < text.size() && is_name_char(text[end])) ++end;
        append_variable(text.substr(i + 1, end - i - 1), text.substr(i, end - i), word, unknown);
        return end;
    }
    if (std::isdigit(static_cast<unsigned char>(next)) != 0 ||
        std::string_view("@*#?$!-").find(next) != std::string_view::npos) {
        unknown(text.substr(i, 2));
        return i + 2;
    }
    word.text += '$';
    pattern_ok_ = false;
    return i + 1;
}

namespace {

template <typename Unknown>
bool append_text(Word& word, std::string_view text, std::string_view written, Unknown&& unknown) {
    if (word.text.size() + text.size() > kMaxValueBytes) {
        unknown(std::string(written) + " (longer than " + std::to_string(kMaxValueBytes) + " bytes)");
        return false;
    }
    word.text += text;
    return true;
}

}  // namespace

template <typename Unknown>
void Interpreter::append_variable(std::string_view name, std::string_view written, Word& word, Unknown&& unknown) {
    auto it = variables.find(name);
    if (it == variables.end() && keep_patterns) {
        // Not the shell's own: the environment it starts in decides.
        bool ok = pattern_ok_;
        unknown(written);
        pattern_ok_ = ok;
        pattern_ += "${" + std::string(name) + "}";
        pattern_used_ = true;
        return;
    }
    if (it == variables.end() || !it->second.value) {
        bool ok = pattern_ok_ && it != variables.end() && it->second.pattern.has_value();
        unknown(written);
        if (ok) {
            pattern_ok_ = true;
            pattern_ += *it->second.pattern;
            pattern_used_ = true;
        }
        return;
    }
    if (append_text(word, *it->second.value, written, unknown)) {
        pattern_ += *it->second.value;
        if (it->second.value->find_first_of("$`") != std::string::npos) pattern_ok_ = false;
    }
}

// ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:=default}; any other form is unknown.
template <typename Unknown>
void Interpreter::expand_parameter(std::string_view inner, std::string_view written, Word& word, Unknown&& unknown) {
    std::size_t name_end = 0;
    while (name_end < inner.size() && is_name_char(inner[name_end])) ++name_end;
    std::string_view name = inner.substr(0, name_end);
    std::string_view op = inner.substr(name_end);
    if (name.empty()) {
        unknown(written);
        return;
    }
    if (op.empty()) {
        append_variable(name, written, word, unknown);
        return;
    }
    pattern_ok_ = false;  // a default: the pattern would not say which value applies
    bool assign_default = op.starts_with(":=") || op.starts_with("=");
    bool use_default = op.starts_with(":-") || op.starts_with("-") || assign_default;
    if (!use_default) {
        unknown(written);
        return;
    }
    auto it = variables.find(name);
    if (it != variables.end() && it->second.value && !(op.front() == ':' && it->second.value->empty())) {
        append_text(word, *it->second.value, written, unknown);
        return;
    }
    if ((it != variables.end() && !it->second.value) || (it == variables.end() && keep_patterns)) {
        // Unknown, or set by the environment the shell starts in, which decides.
        unknown(written);
        return;
    }
    // The script's default: what the job gets unless the environment the
    // shell starts in (sbatch exports the submitting shell's by default) or a
    // positional argument sets it.
    std::string_view fallback = op.substr(op.front() == ':' ? 2 : 1);
    std::vector<Word> expanded = expand(RawWord{std::string(fallback), 0, false, {}, 0, true});
    Word value = expanded.empty() ? Word{} : expanded.front();
    if (!value.known) {
        unknown(written);
    } else {
        append_text(word, value.text, written, unknown);
    }
    if (assign_default && std::isdigit(static_cast<unsigned char>(name.front())) == 0) {
        set_variable(std::string(name), value.known ? std::optional<std::string>(value.text) : std::nullopt,
                     value.why_unknown, 0, "default", false);
    }
}

}  // namespace launchguard::shell
