#include "probe/environment_probe.h"

#include <unistd.h>

#include "probe/environment_entries.h"
#include "probe/text_file.h"
#include "util/text_escape.h"

extern char** environ;  // NOLINT: POSIX declares it nowhere in a header

namespace launchguard {
namespace {

Environment parse_environ_block(std::string_view text) {
    Environment env;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\0', pos);
        if (end == std::string_view::npos) end = text.size();
        add_environ_entry(env, text.substr(pos, end - pos));
        pos = end + 1;
    }
    return env;
}

}  // namespace

Result<Environment> parse_env_text(std::string_view text, std::string origin) {
    // A /proc/PID/environ dump ends with the NUL that terminates its last
    // entry; a NUL anywhere else is a stray byte in a line-based file, and
    // splitting the whole file on it would swallow the lines around it.
    if (!text.empty() && text.back() == '\0') return parse_environ_block(text);

    Environment env;
    int line_no = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (line.find('\0') != std::string_view::npos) {
            return make_file_error(origin, line_no,
                                   "NUL byte inside a line (a NUL-separated environ dump must end with a NUL)");
        }
        std::string_view stripped = trim(line);
        if (stripped.empty() || stripped.front() == '#') continue;
        std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) {
            return make_file_error(origin, line_no, "expected KEY=VALUE, got '" + std::string(stripped) + "'");
        }
        std::string_view name = line.substr(0, eq);
        if (!is_variable_name(name)) {
            std::string msg = "invalid variable name '" + std::string(name) + "'";
            if (name.substr(0, 7) == "export ")
                msg += " (an env file holds plain KEY=VALUE lines; drop 'export')";
            else if (trim(name) != name)
                msg += " (no spaces are allowed around the name)";
            return make_file_error(origin, line_no, msg);
        }
        env[std::string(name)] = std::string(line.substr(eq + 1));
    }
    return env;
}

Result<Environment> read_env_file(const std::string& path) {
    auto text = read_text_file(path);
    if (!text) return text.error();
    return parse_env_text(*text, path);
}

Result<Environment> read_process_environ(int pid, const std::string& proc_root) {
    std::string path = under_root(proc_root, std::to_string(pid) + "/environ");
    auto text = read_text_file(path);
    if (!text) return text.error();
    // A process with an empty environment has an empty file: no NUL to detect.
    if (text->empty()) return Environment{};
    // /proc/PID/environ is NUL-separated even when the last entry lacks its
    // terminator; supply it so the format is not mistaken for lines.
    if (text->back() != '\0') text->push_back('\0');
    return parse_env_text(*text, path);
}

Environment current_process_environment() { return environment_from_entries(environ); }

}  // namespace launchguard
