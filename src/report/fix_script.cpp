#include "report/fix_script.h"

#include <algorithm>
#include <vector>

#include "util/size_parser.h"
#include "util/text_escape.h"

namespace launchguard {

std::string shell_quote(std::string_view value) {
    // Words made only of these characters mean themselves to every POSIX
    // shell (no expansion, globbing or splitting); '^' is left out because
    // some shells glob on it.
    auto plain_char = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.' || c == '/' || c == ':' || c == ',' || c == '=' || c == '+';
    };
    if (!value.empty() && std::all_of(value.begin(), value.end(), plain_char)) return std::string(value);
    // Inside single quotes the shell interprets nothing ($, backquotes,
    // backslashes, newlines); a single quote ends the quoting, is written
    // escaped, and quoting resumes.
    std::string out = "'";
    for (char c : value) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

namespace {

// A comment line holds one line: a newline in a message or path taken from
// the launch would otherwise end the comment and start a command.
std::string comment_text(std::string_view text) { return printable_text(text); }

std::string env_line(const RemediationOp& op) {
    // A name is written bare, so it must be one the shell cannot read as
    // anything else; any other name is shown, escaped, in a comment.
    if (!is_variable_name(op.name)) {
        return "# not applied: '" + comment_text(op.name) + "' is not a valid variable name\n";
    }
    return op.kind == RemediationOp::Kind::set_env ? "export " + op.name + "=" + shell_quote(op.value) + "\n"
                                                   : "unset " + op.name + "\n";
}

}  // namespace

std::string render_fix_script(const Report& report) {
    std::string env_lines;
    std::vector<std::string> mounts;
    std::uint64_t shm = 0;
    std::vector<std::string> caps;
    std::string manual;

    for (const auto& f : report.findings) {
        bool header_done = false;
        for (const auto& op : f.remediation) {
            switch (op.kind) {
                case RemediationOp::Kind::set_env:
                case RemediationOp::Kind::unset_env:
                    if (!header_done) {
                        env_lines += "# " + comment_text(f.rule) + ": " + comment_text(f.message) + "\n";
                        header_done = true;
                    }
                    env_lines += env_line(op);
                    break;
                case RemediationOp::Kind::mount_file:
                    mounts.push_back(comment_text(op.host_path) + ":" + comment_text(op.container_path) +
                                     (op.readonly ? ":ro" : ""));
                    break;
                case RemediationOp::Kind::shm_size:
                    shm = std::max(shm, op.bytes);
                    break;
                case RemediationOp::Kind::add_capability:
                    caps.push_back(comment_text(op.name));
                    break;
                case RemediationOp::Kind::manual:
                    manual += "#   [" + comment_text(f.rule) + "] " + comment_text(op.text) + "\n";
                    break;
            }
        }
    }

    std::string out = "# launchguard --fix: profile " + comment_text(report.profile) + ", decision " +
                      std::string(to_string(report.decision)) + "\n";
    if (env_lines.empty() && mounts.empty() && shm == 0 && caps.empty() && manual.empty()) {
        return out + "# nothing to fix\n";
    }
    out += env_lines;
    if (!mounts.empty() || shm != 0 || !caps.empty()) {
        out += "# container launch flags:\n";
        std::string joined;
        for (const auto& m : mounts) joined += (joined.empty() ? "" : ",") + m;
        if (!mounts.empty()) {
            out += "#   srun (pyxis):  --container-mounts=" + joined + "\n";
            std::string docker;
            for (const auto& m : mounts) docker += " -v " + m;
            out += "#   docker/podman:" + docker + "\n";
        }
        if (shm != 0) {
            out += "#   docker/podman: --shm-size=" + std::to_string(shm >> 20) +
                   "m   (Kubernetes: emptyDir medium: Memory, sizeLimit: " + format_byte_size(shm) + ", at /dev/shm)\n";
        }
        for (const auto& c : caps) out += "#   docker/podman: --cap-add=" + c + "\n";
    }
    if (!manual.empty()) out += "# manual steps (node or image):\n" + manual;
    return out;
}

}  // namespace launchguard
