#include "context/comm_backend.h"
#include "util/text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

namespace launchguard {
namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_token_char(char c) { return is_name_char(c) || c == '-'; }

// A backend value as PyTorch reads it: "gloo", "nccl", "mpi", or a device
// map "cpu:gloo,cuda:nccl". nullopt for anything else (ucc, a custom one).
std::optional<CommBackend> parse_backend(std::string_view value) {
    std::string text = ascii_lower(value);
    bool nccl = false;
    std::optional<CommBackend> other;
    std::size_t begin = 0;
    while (begin <= text.size()) {
        std::size_t end = std::min(text.find(',', begin), text.size());
        std::string_view entry = std::string_view(text).substr(begin, end - begin);
        if (auto colon = entry.rfind(':'); colon != std::string_view::npos) entry = entry.substr(colon + 1);
        if (entry == "nccl") {
            nccl = true;
        } else if (entry == "gloo" || entry == "mpi") {
            CommBackend backend = entry == "gloo" ? CommBackend::gloo : CommBackend::mpi;
            if (other && *other != backend) return std::nullopt;
            other = backend;
        } else {
            return std::nullopt;
        }
        begin = end + 1;
    }
    if (nccl) return CommBackend::nccl;
    return other;
}

// Names that select the process group backend, as an option or a Python
// keyword; "rdzv_backend" (torchrun's rendezvous) selects no collective library.
constexpr std::array<std::string_view, 6> kBackendKeys = {"backend",     "dist-backend", "dist_backend",
                                                          "ddp-backend", "ddp_backend",  "distributed-backend"};

struct Selection {
    CommBackend backend;
    std::string written;
};

// The value after `key` at text[value_at...]: quoted or bare, "$NAME" and
// "${NAME}" resolved from `env`.
std::optional<std::string> value_at(std::string_view text, std::size_t at, const Environment& env) {
    while (at < text.size() && (text[at] == '"' || text[at] == '\'')) ++at;
    std::size_t end = at;
    while (end < text.size() && (is_token_char(text[end]) || text[end] == ':' || text[end] == ',' || text[end] == '$' ||
                                 text[end] == '{' || text[end] == '}')) {
        ++end;
    }
    std::string_view value = text.substr(at, end - at);
    while (!value.empty() && value.back() == ',') value.remove_suffix(1);
    if (value.starts_with('$')) {
        std::string_view name = value.substr(1);
        if (name.starts_with('{') && name.ends_with('}')) name = name.substr(1, name.size() - 2);
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        return it->second;
    }
    if (value.empty()) return std::nullopt;
    return std::string(value);
}

void backend_options(std::string_view text, const Environment& env, std::vector<Selection>& out) {
    for (std::size_t at = text.find("backend"); at != std::string_view::npos; at = text.find("backend", at + 1)) {
        std::size_t start = at;
        while (start > 0 && is_token_char(text[start - 1])) --start;
        std::size_t key_end = at + 7;
        if (key_end < text.size() && is_token_char(text[key_end])) continue;
        std::string_view token = text.substr(start, key_end - start);
        bool option = token.starts_with("--");
        if (option) token.remove_prefix(2);
        if (std::find(kBackendKeys.begin(), kBackendKeys.end(), token) == kBackendKeys.end()) continue;
        std::size_t next = key_end;
        while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
        bool assigned = next < text.size() && text[next] == '=';
        if (!assigned && !(option && next > key_end)) continue;  // a keyword needs '=', an option '=' or a blank
        if (assigned) ++next;
        while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
        auto value = value_at(text, next, env);
        if (!value) continue;
        if (auto backend = parse_backend(*value)) {
            out.push_back({*backend, std::string(text.substr(start, next - start)) + *value});
        }
    }
}

// dist.init_process_group("gloo", ...): the backend is the first positional argument.
void init_calls(std::string_view text, const Environment& env, std::vector<Selection>& out) {
    constexpr std::string_view kCall = "init_process_group(";
    for (std::size_t at = text.find(kCall); at != std::string_view::npos; at = text.find(kCall, at + 1)) {
        std::size_t next = at + kCall.size();
        while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next])) != 0) ++next;
        if (next >= text.size() || (text[next] != '"' && text[next] != '\'')) continue;
        auto value = value_at(text, next, env);
        if (!value) continue;
        if (auto backend = parse_backend(*value)) out.push_back({*backend, "init_process_group(\"" + *value + "\")"});
    }
}

// BACKEND=gloo in the environment, with the command naming BACKEND.
void backend_variables(std::string_view text, const Environment& env, std::vector<Selection>& out) {
    for (const auto& [name, value] : env) {
        std::string lowered = ascii_lower(name);
        if (!lowered.ends_with("backend") || lowered.find("rdzv") != std::string::npos) continue;
        auto backend = parse_backend(value);
        if (!backend) continue;
        for (std::size_t at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
            bool starts = at == 0 || !is_name_char(text[at - 1]);
            bool ends = at + name.size() >= text.size() || !is_name_char(text[at + name.size()]);
            if (starts && ends) {
                out.push_back({*backend, name + "=" + value + " (read by the command)"});
                break;
            }
        }
    }
}

}  // namespace

std::string_view to_string(CommBackend backend) {
    switch (backend) {
        case CommBackend::nccl:
            return "nccl";
        case CommBackend::gloo:
            return "gloo";
        case CommBackend::mpi:
            return "mpi";
    }
    return "nccl";
}

Fact<CommBackend> comm_backend_from_command(const std::vector<std::string>& words, const Environment& env,
                                            const std::string& where) {
    std::string text;
    for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
    std::vector<Selection> selections;
    backend_options(text, env, selections);
    init_calls(text, env, selections);
    backend_variables(text, env, selections);
    auto nccl = std::find_if(selections.begin(), selections.end(),
                             [](const Selection& s) { return s.backend == CommBackend::nccl; });
    if (nccl != selections.end()) return Fact<CommBackend>::known(CommBackend::nccl, where + ": " + nccl->written);
    if (!selections.empty()) {
        return Fact<CommBackend>::known(selections.front().backend, where + ": " + selections.front().written);
    }
    return Fact<CommBackend>::unknown(where +
                                      " selects no communication backend (--backend, init_process_group(...)); "
                                      "the program may use NCCL");
}

}  // namespace launchguard
