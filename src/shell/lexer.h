// Shell text split into commands of words, as a POSIX shell or bash splits
// it before expanding anything: quoting, line continuations, comments,
// heredocs (their bodies are data and are skipped), arrays `NAME=( ... )`,
// subshell parentheses and the operators that join commands. Nothing is
// expanded here (shell/interpreter.h does that). Every loop advances through
// the input and nesting is bounded, so hostile text cannot make it hang or
// overflow the stack; what it cannot follow becomes a note, never a failure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace launchguard::shell {

// Array elements kept per array, words kept per command: far above any real
// script, low enough that a hostile one cannot blow up the expansion.
inline constexpr std::size_t kMaxWords = 4096;
// Quotes and $(...) inside each other, and ${a:-${b:-...}} defaults, are
// followed this deep; deeper text is kept as written and counts as unknown.
inline constexpr int kMaxNesting = 64;

bool is_name_start(char c);
bool is_name_char(char c);
// A shell variable name: [A-Za-z_][A-Za-z0-9_]*.
bool is_name(std::string_view text);
// The last path component: /usr/bin/srun is srun.
std::string_view base_name(std::string_view word);

// Whether a word inserted at `offset` of `text` (with a blank before it)
// stands on its own there: the character before is not a backslash, which
// would escape the blank and join the new word to the one before, and the
// character at `offset` ends a word (a blank, a line end, `;`, `&`, `|`, `)`)
// rather than an operator written without a blank (`-<<<<`), which the new
// word would be glued to. The end of the text is such a place.
bool word_may_be_added_at(std::string_view text, std::size_t offset);

// A word as written (quotes kept), or an array assignment NAME=( ... ).
struct RawWord {
    std::string raw;
    int line = 0;
    bool is_array = false;          // raw holds "NAME=" or "NAME+="
    std::vector<RawWord> elements;  // the array's words
    std::size_t end = 0;            // offset just after the word in the text it was read from
    bool complete = true;           // false when a quote or $( in it is never closed
};

struct RawCommand {
    // A subshell's '(' and ')' come as commands of their own, so that what
    // is set between them can be dropped when it closes.
    enum class Kind { simple, subshell_open, subshell_close };
    // How the command is joined to the one before it: `a && b` runs b only
    // when a succeeds, `a || b` only when it fails, `a | b` in a pipeline.
    enum class Joint { none, and_then, or_else, pipe };
    Kind kind = Kind::simple;
    std::vector<RawWord> words;
    int line = 0;
    int last_line = 0;
    Joint joint = Joint::none;
};

// The commands of `text`, whose first line is numbered `first_line`; what
// the lexer could not follow (an unclosed quote or heredoc) is added to
// `notes` with its line.
std::vector<RawCommand> lex(std::string_view text, int first_line, std::vector<std::string>& notes);

}  // namespace launchguard::shell
