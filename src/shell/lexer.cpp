#include "shell/lexer.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace launchguard::shell {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

bool is_name(std::string_view text) {
    return !text.empty() && is_name_start(text.front()) && std::all_of(text.begin(), text.end(), is_name_char);
}

std::string_view base_name(std::string_view word) {
    std::size_t slash = word.rfind('/');
    return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

bool word_may_be_added_at(std::string_view text, std::size_t offset) {
    if (offset == 0 || offset > text.size() || text[offset - 1] == '\\') return false;
    return offset == text.size() || std::string_view(" \t\r\n;&|)").find(text[offset]) != std::string_view::npos;
}

namespace {

class Lexer {
public:
    Lexer(std::string_view text, int first_line, std::vector<std::string>& notes)
        : text_(text), line_(first_line), notes_(notes) {}

    std::vector<RawCommand> commands() {
        std::vector<RawCommand> out;
        RawCommand current;
        auto finish = [&] {
            if (!current.words.empty()) out.push_back(std::move(current));
            current = RawCommand{};
        };
        // How the next command is joined to the one before it; a line break
        // after `&&` or `||` keeps the join (`a &&<newline>b`).
        RawCommand::Joint joint = RawCommand::Joint::none;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\r') {
                ++pos_;
            } else if (c == '\\' && peek(1) == '\n') {
                pos_ += 2;
                ++line_;
            } else if (c == '#') {
                skip_comment();
            } else if (c == '\n') {
                ++pos_;
                ++line_;
                if (!current.words.empty()) joint = RawCommand::Joint::none;
                finish();
                skip_heredocs();
            } else if ((c == '&' || c == '|') && peek(1) == c && inside_double_brackets(current)) {
                // `[[ A && B ]]`: one test, whose && and || the reader decides.
                RawWord word;
                word.raw = std::string(2, c);
                word.line = line_;
                pos_ += 2;
                word.end = pos_;
                if (current.words.size() < kMaxWords) current.words.push_back(std::move(word));
            } else if (c == ';' || c == '&' || c == '|') {
                ++pos_;
                finish();
                if (c == ';') {
                    joint = RawCommand::Joint::none;
                } else if (peek(0) == c) {
                    ++pos_;
                    joint = c == '&' ? RawCommand::Joint::and_then : RawCommand::Joint::or_else;
                } else {
                    joint = c == '|' ? RawCommand::Joint::pipe : RawCommand::Joint::none;
                }
            } else if (c == '(' && peek(1) == '(' && at_command_start(current)) {
                read_arithmetic(current, joint);
            } else if (c == '(') {
                ++pos_;
                finish();
                scopes_.push_back(Scope::subshell);
                out.push_back(RawCommand{RawCommand::Kind::subshell_open, {}, line_, line_, joint});
                joint = RawCommand::Joint::none;
            } else if (c == ')') {
                ++pos_;
                finish();
                // In `case x in a) ...` a ')' ends a pattern, not a subshell.
                if (!scopes_.empty() && scopes_.back() == Scope::subshell) {
                    scopes_.pop_back();
                    out.push_back(
                        RawCommand{RawCommand::Kind::subshell_close, {}, line_, line_, RawCommand::Joint::none});
                }
            } else if (c == '<' && peek(1) == '<' && peek(2) != '<') {
                read_heredoc_start();
            } else {
                if (current.words.empty()) {
                    current.line = line_;
                    current.joint = joint;
                    joint = RawCommand::Joint::none;
                }
                RawWord word = read_word();
                current.last_line = line_;
                if (at_command_start(current)) {
                    if (word.raw == "case") scopes_.push_back(Scope::case_patterns);
                    if (word.raw == "esac" && !scopes_.empty() && scopes_.back() == Scope::case_patterns) {
                        scopes_.pop_back();
                    }
                }
                if (current.words.size() < kMaxWords && (!word.raw.empty() || word.is_array)) {
                    current.words.push_back(std::move(word));
                }
            }
        }
        finish();
        if (!heredocs_.empty()) {
            notes_.push_back("line " + std::to_string(line_) + ": heredoc '" + heredocs_.front().first +
                             "' is never closed");
        }
        return out;
    }

private:
    enum class Scope { subshell, case_patterns };

    // `(( expression ))`: the words "((", the expression as one word, and
    // "))", so that the reader can decide it. An expression that never closes
    // runs to the end of the text, with a note.
    void read_arithmetic(RawCommand& current, RawCommand::Joint& joint) {
        if (current.words.empty()) {
            current.line = line_;
            current.joint = joint;
            joint = RawCommand::Joint::none;
        }
        int start_line = line_;
        pos_ += 2;
        std::size_t begin = pos_;
        int depth = 0;
        while (pos_ < text_.size() && !(depth == 0 && text_[pos_] == ')' && peek(1) == ')')) {
            if (text_[pos_] == '(') ++depth;
            if (text_[pos_] == ')') --depth;
            if (text_[pos_] == '\n') ++line_;
            ++pos_;
        }
        std::string expression(text_.substr(begin, pos_ - begin));
        if (pos_ >= text_.size()) note_unterminated("((", start_line);
        pos_ = std::min(pos_ + 2, text_.size());
        for (std::string raw : {std::string("(("), expression, std::string("))")}) {
            if (current.words.size() >= kMaxWords) break;
            RawWord word;
            word.raw = std::move(raw);
            word.line = start_line;
            word.end = pos_;
            word.complete = false;  // no place of its own for an option
            current.words.push_back(std::move(word));
        }
        current.last_line = line_;
    }

    // Words after which the next one is still in command position.
    static bool opens_command(const std::string& w) {
        return w == "then" || w == "do" || w == "else" || w == "elif" || w == "{" || w == "!" || w == "if" ||
               w == "while" || w == "until";
    }

    // Only reserved words so far: the next word is in command position.
    static bool at_command_start(const RawCommand& command) {
        return std::all_of(command.words.begin(), command.words.end(),
                           [](const RawWord& w) { return opens_command(w.raw); });
    }

    // An `[[` in command position whose `]]` has not come yet.
    static bool inside_double_brackets(const RawCommand& command) {
        bool open = false;
        bool command_position = true;
        for (const auto& word : command.words) {
            if (word.raw == "[[" && command_position) open = true;
            if (word.raw == "]]") open = false;
            command_position = command_position && opens_command(word.raw);
        }
        return open;
    }

    [[nodiscard]] char peek(std::size_t ahead) const {
        return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
    }

    void skip_comment() {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    }

    // `<<WORD`, `<<-WORD`, `<<'WORD'`: the body starts on the next line and is skipped there.
    void read_heredoc_start() {
        pos_ += 2;
        bool strip_tabs = false;
        if (peek(0) == '-') {
            strip_tabs = true;
            ++pos_;
        }
        while (peek(0) == ' ' || peek(0) == '\t') ++pos_;
        std::string delimiter;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == '\'' || c == '"' || c == '\\') {
                ++pos_;
                continue;
            }
            if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' ||
                c == ')') {
                break;
            }
            delimiter += c;
            ++pos_;
        }
        if (delimiter.empty()) {
            notes_.push_back("line " + std::to_string(line_) + ": '<<' without a delimiter");
            return;
        }
        heredocs_.emplace_back(delimiter, strip_tabs);
    }

    void skip_heredocs() {
        while (!heredocs_.empty()) {
            auto [delimiter, strip_tabs] = heredocs_.front();
            heredocs_.erase(heredocs_.begin());
            int start = line_;
            bool closed = false;
            while (pos_ < text_.size()) {
                std::size_t end = text_.find('\n', pos_);
                std::string_view body_line =
                    text_.substr(pos_, (end == std::string_view::npos ? text_.size() : end) - pos_);
                pos_ = end == std::string_view::npos ? text_.size() : end + 1;
                ++line_;
                if (strip_tabs) {
                    while (!body_line.empty() && body_line.front() == '\t') body_line.remove_prefix(1);
                }
                if (!body_line.empty() && body_line.back() == '\r') body_line.remove_suffix(1);
                if (body_line == delimiter) {
                    closed = true;
                    break;
                }
            }
            if (!closed) {
                notes_.push_back("line " + std::to_string(start) + ": heredoc '" + delimiter +
                                 "' is never closed; the rest of the script is its body");
            }
        }
    }

    void note_unterminated(std::string_view what, int line) {
        unterminated_ = true;
        notes_.push_back("line " + std::to_string(line) + ": unterminated " + std::string(what) +
                         "; the rest of the script is read as part of it");
    }

    // Appends the rest of a '...' string (the opening quote already appended).
    void read_single_quoted(std::string& out) {
        int start = line_;
        while (pos_ < text_.size()) {
            char c = text_[pos_++];
            out += c;
            if (c == '\n') ++line_;
            if (c == '\'') return;
        }
        note_unterminated("single quote", start);
    }

    void read_double_quoted(std::string& out) {
        if (too_deep(out)) return;
        Nested nested(nesting_);
        int start = line_;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == '\\' && pos_ + 1 < text_.size()) {
                if (text_[pos_ + 1] == '\n') ++line_;
                out += text_.substr(pos_, 2);
                pos_ += 2;
                continue;
            }
            if (c == '$' && (peek(1) == '(' || peek(1) == '{')) {
                read_dollar_group(out);
                continue;
            }
            if (c == '`') {
                read_backquoted(out);
                continue;
            }
            ++pos_;
            out += c;
            if (c == '\n') ++line_;
            if (c == '"') return;
        }
        note_unterminated("double quote", start);
    }

    void read_backquoted(std::string& out) {
        int start = line_;
        out += text_[pos_++];
        while (pos_ < text_.size()) {
            char c = text_[pos_++];
            out += c;
            if (c == '\n') ++line_;
            if (c == '\\' && pos_ < text_.size()) {
                out += text_[pos_++];
            } else if (c == '`') {
                return;
            }
        }
        note_unterminated("backquote", start);
    }

    // Keeps the lexer's recursion (quotes in $(...) in quotes ...) bounded:
    // past kMaxNesting the rest of the input is taken as written.
    bool too_deep(std::string& out) {
        if (nesting_ < kMaxNesting) return false;
        notes_.push_back("line " + std::to_string(line_) + ": quotes and $(...) nested more than " +
                         std::to_string(kMaxNesting) + " deep; the rest of the script is not read");
        out += text_.substr(pos_);
        pos_ = text_.size();
        return true;
    }

    struct Nested {
        explicit Nested(int& depth) : depth_(depth) { ++depth_; }
        ~Nested() { --depth_; }
        Nested(const Nested&) = delete;
        Nested& operator=(const Nested&) = delete;
        int& depth_;
    };

    // $( ... ) or ${ ... }, with nesting and quotes inside.
    void read_dollar_group(std::string& out) {
        if (too_deep(out)) return;
        Nested nested(nesting_);
        int start = line_;
        const char open = text_[pos_ + 1];
        const char close = open == '(' ? ')' : '}';
        out += text_.substr(pos_, 2);
        pos_ += 2;
        int depth = 1;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == '\'') {
                out += text_[pos_++];
                read_single_quoted(out);
            } else if (c == '"') {
                out += text_[pos_++];
                read_double_quoted(out);
            } else if (c == '\\' && pos_ + 1 < text_.size()) {
                out += text_.substr(pos_, 2);
                pos_ += 2;
            } else {
                ++pos_;
                out += c;
                if (c == '\n') ++line_;
                if (c == open) ++depth;
                if (c == close && --depth == 0) return;
            }
        }
        note_unterminated(open == '(' ? "$(" : "${", start);
    }

    RawWord read_word() {
        RawWord word;
        word.line = line_;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '&' || c == '|' || c == ')') break;
            if (c == '<' && peek(1) == '<' && peek(2) != '<') break;  // cat<<EOF: the heredoc starts here
            if (c == '(') {
                // NAME=( ... ) and NAME+=( ... ) are arrays; `name()` a function.
                std::string_view raw = word.raw;
                bool assignment = raw.size() > 1 && raw.back() == '=' &&
                                  is_name(raw.substr(0, raw.size() - (raw.ends_with("+=") ? 2 : 1)));
                if (assignment) {
                    ++pos_;
                    word.is_array = true;
                    read_array(word);
                    word.end = pos_;
                    return word;
                }
                if (word.raw.empty()) break;
                if (word.raw.back() == '<' || word.raw.back() == '>') {
                    // <(...) and >(...), process substitution: read like $(...).
                    word.raw.pop_back();
                    --pos_;
                    read_dollar_group(word.raw);
                    continue;
                }
                word.raw += c;
                ++pos_;
                if (peek(0) == ')') {  // name(): a function definition
                    word.raw += ')';
                    ++pos_;
                }
                continue;
            }
            if (c == '\\' && pos_ + 1 < text_.size()) {
                if (text_[pos_ + 1] == '\n') {
                    pos_ += 2;
                    ++line_;
                    continue;
                }
                word.raw += text_.substr(pos_, 2);
                pos_ += 2;
            } else if (c == '\'') {
                word.raw += text_[pos_++];
                read_single_quoted(word.raw);
            } else if (c == '"') {
                word.raw += text_[pos_++];
                read_double_quoted(word.raw);
            } else if (c == '`') {
                read_backquoted(word.raw);
            } else if (c == '$' && (peek(1) == '(' || peek(1) == '{')) {
                read_dollar_group(word.raw);
            } else {
                word.raw += c;
                ++pos_;
            }
        }
        // The word ends at its last character, before any line continuation after it.
        word.end = pos_;
        // An unclosed construct takes the rest of the script, so the word ends inside it.
        word.complete = !(unterminated_ && pos_ == text_.size());
        while (word.end >= 2 && text_[word.end - 1] == '\n' && text_[word.end - 2] == '\\') word.end -= 2;
        return word;
    }

    void read_array(RawWord& array) {
        int start = line_;
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\r') {
                ++pos_;
            } else if (c == '\n') {
                ++pos_;
                ++line_;
            } else if (c == '#') {
                skip_comment();
            } else if (c == ')') {
                ++pos_;
                return;
            } else if (c == ';' || c == '&' || c == '|' || c == '(') {
                ++pos_;  // not valid inside an array; skipped so the reader always advances
            } else {
                RawWord element = read_word();
                if (element.raw.empty() && !element.is_array) {
                    ++pos_;
                    continue;
                }
                if (array.elements.size() < kMaxWords) array.elements.push_back(std::move(element));
            }
        }
        note_unterminated("array '('", start);
    }

    std::string_view text_;
    std::size_t pos_ = 0;
    int line_;
    std::vector<std::string>& notes_;
    std::vector<std::pair<std::string, bool>> heredocs_;  // delimiter, strip leading tabs
    int nesting_ = 0;
    bool unterminated_ = false;  // a quote, backquote or $( ran to the end of the text
    std::vector<Scope> scopes_;  // open subshells and case pattern lists, innermost last
};

}  // namespace

std::vector<RawCommand> lex(std::string_view text, int first_line, std::vector<std::string>& notes) {
    Lexer lexer(text, first_line, notes);
    return lexer.commands();
}

}  // namespace launchguard::shell
