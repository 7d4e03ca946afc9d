// The tests a script decides from its own text: `[[ ... ]]`, `[ ... ]`,
// `test ...` and `(( ... ))`, with && and || inside them (-a and -o in
// `[ ]`), on values the reader knows (an #SBATCH --nodes seeds
// SLURM_NNODES). Anything else is undecided: nullopt, never a guess.
#include <charconv>

#include "shell/interpreter.h"

namespace launchguard::shell {
namespace {

std::optional<long long> whole_number(std::string_view text) {
    long long value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<bool> compare(std::string_view op, long long left, long long right) {
    if (op == "-eq" || op == "==") return left == right;
    if (op == "-ne" || op == "!=") return left != right;
    if (op == "-lt" || op == "<") return left < right;
    if (op == "-le" || op == "<=") return left <= right;
    if (op == "-gt" || op == ">") return left > right;
    if (op == "-ge" || op == ">=") return left >= right;
    return std::nullopt;
}

// One primary of [[ ]] / [ ]: `! X`, `-n X`, `-z X`, `X`, `X op Y`.
std::optional<bool> primary(std::vector<std::string> a, bool double_bracket) {
    bool negate = false;
    if (!a.empty() && a.front() == "!") {
        negate = true;
        a.erase(a.begin());
    }
    std::optional<bool> result;
    if (a.size() == 1) {
        result = !a[0].empty();
    } else if (a.size() == 2 && (a[0] == "-n" || a[0] == "-z")) {
        result = a[0] == "-n" ? !a[1].empty() : a[1].empty();
    } else if (a.size() == 3) {
        const std::string& op = a[1];
        bool glob = a[2].find_first_of("*?[") != std::string::npos;
        if ((op == "=" || op == "==") && !(double_bracket && glob)) {
            result = a[0] == a[2];
        } else if (op == "!=" && !(double_bracket && glob)) {
            result = a[0] != a[2];
        } else if (op.size() == 3 && op.front() == '-') {
            auto left = whole_number(a[0]);
            auto right = whole_number(a[2]);
            if (left && right) result = compare(op, *left, *right);
        }
    }
    if (result && negate) result = !*result;
    return result;
}

// `A || B`, `A && B` (&& binding tighter), over primaries: decided when the
// decided parts settle it (`true || unknown` is true).
std::optional<bool> chain(const std::vector<std::string>& args, bool double_bracket) {
    const std::string_view kOr = double_bracket ? "||" : "-o";
    const std::string_view kAnd = double_bracket ? "&&" : "-a";
    std::optional<bool> any = false;
    std::vector<std::string> conjunction;
    std::optional<bool> all = true;
    std::vector<std::string> current;
    auto close_primary = [&] {
        auto value = primary(current, double_bracket);
        current.clear();
        if (value == false) {
            all = false;
        } else if (!value && all == true) {
            all = std::nullopt;
        }
    };
    auto close_conjunction = [&] {
        close_primary();
        if (all == true) {
            any = true;
        } else if (!all && any == false) {
            any = std::nullopt;
        }
        all = true;
    };
    for (const auto& arg : args) {
        if (arg == kOr) {
            close_conjunction();
        } else if (arg == kAnd) {
            close_primary();
        } else {
            current.push_back(arg);
        }
    }
    close_conjunction();
    return any;
}

}  // namespace

std::optional<bool> Interpreter::evaluate_test(const std::vector<RawWord>& words, std::size_t at) {
    if (at >= words.size()) return std::nullopt;
    const std::string& open = words[at].raw;
    if (open == "((") return at + 1 < words.size() ? evaluate_arithmetic(words[at + 1].raw) : std::nullopt;
    if (open != "[[" && open != "[" && open != "test") return std::nullopt;
    std::string close = open == "[[" ? "]]" : open == "[" ? "]" : "";
    std::vector<std::string> args;
    bool closed = close.empty();
    for (std::size_t i = at + 1; i < words.size(); ++i) {
        if (!close.empty() && words[i].raw == close) {
            closed = i + 1 == words.size();
            break;
        }
        if (open == "[[" && (words[i].raw == "&&" || words[i].raw == "||")) {
            args.push_back(words[i].raw);
            continue;
        }
        // Inside [[ ]] words are not split; an unquoted empty expansion is still an argument there.
        auto expanded = expand(words[i]);
        if (expanded.empty() && open == "[[") expanded.push_back(Word{});
        for (auto& word : expanded) {
            if (!word.known) return std::nullopt;
            args.push_back(std::move(word.text));
        }
    }
    if (!closed) return std::nullopt;
    return chain(args, open == "[[");
}

// `(( A op B ))` with && and ||: operands are numbers, $NAME, ${NAME} or a
// bare NAME (arithmetic reads names as variables); any other expression is
// undecided.
std::optional<bool> Interpreter::evaluate_arithmetic(std::string_view expression) {
    std::vector<std::string> args;
    std::size_t i = 0;
    while (i < expression.size()) {
        char c = expression[i];
        if (c == ' ' || c == '\t' || c == '\n') {
            ++i;
            continue;
        }
        std::size_t op_length = 0;
        for (std::string_view op : {"&&", "||", ">=", "<=", "==", "!=", ">", "<"}) {
            if (expression.substr(i).starts_with(op)) {
                op_length = op.size();
                break;
            }
        }
        if (op_length > 0) {
            std::string op(expression.substr(i, op_length));
            // The operators as [[ ]] writes them, so one evaluator reads both.
            if (op == ">") op = "-gt";
            if (op == ">=") op = "-ge";
            if (op == "<") op = "-lt";
            if (op == "<=") op = "-le";
            if (op == "==") op = "-eq";
            if (op == "!=") op = "-ne";
            args.push_back(std::move(op));
            i += op_length;
            continue;
        }
        std::size_t end = i;
        while (end < expression.size() &&
               std::string_view(" \t\n&|<>=!").find(expression[end]) == std::string_view::npos)
            ++end;
        std::string_view operand = expression.substr(i, end - i);
        if (operand.empty()) return std::nullopt;  // a lone '!' or '=': not read
        i = end;
        if (whole_number(operand)) {
            args.emplace_back(operand);
            continue;
        }
        std::string text = operand.starts_with('$') ? std::string(operand) : "$" + std::string(operand);
        if (!is_name(operand.starts_with("${") && operand.ends_with('}') ? operand.substr(2, operand.size() - 3)
                     : operand.starts_with('$')                          ? operand.substr(1)
                                                                         : operand)) {
            return std::nullopt;
        }
        auto expanded = expand(RawWord{text, 0, false, {}, 0, true});
        // An unset variable is 0 in arithmetic.
        if (expanded.empty()) {
            args.emplace_back("0");
            continue;
        }
        if (!expanded.front().known || !whole_number(expanded.front().text)) return std::nullopt;
        args.push_back(expanded.front().text);
    }
    // A lone operand: true when it is not 0.
    if (args.size() == 1) return whole_number(args.front()).value_or(0) != 0;
    return chain(args, true);
}

}  // namespace launchguard::shell
