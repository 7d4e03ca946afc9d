#include "report/fix_script.h"

#include <algorithm>
#include <cctype>

#include <vector>

#include "profile/size_parser.h"

namespace launchguard {

std::string shell_quote(std::string_view value) {
    bool plain = !value.empty();
    for (char c : value) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/' ||
              c == ':' || c == ',' || c == '=' || c == '^' || c == '+')) {
            plain = false;
        }
    }
    if (plain) return std::string(value);
    std::string out = "'";
    for (char c : value) {
        if (c == '\'') out += "'\\''";
        else out += c;
    }
    return out + "'";
}

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
                        env_lines += "# " + f.rule + ": " + f.message + "\n";
                        header_done = true;
                    }
                    env_lines += op.kind == RemediationOp::Kind::set_env
                                     ? "export " + op.name + "=" + shell_quote(op.value) + "\n"
                                     : "unset " + op.name + "\n";
                    break;
                case RemediationOp::Kind::mount_file:
                    mounts.push_back(op.host_path + ":" + op.container_path + (op.readonly ? ":ro" : ""));
                    break;
                case RemediationOp::Kind::shm_size: shm = std::max(shm, op.bytes); break;
                case RemediationOp::Kind::add_capability: caps.push_back(op.name); break;
                case RemediationOp::Kind::manual: manual += "#   [" + f.rule + "] " + op.text + "\n"; break;
            }
        }
    }

    std::string out = "# launchguard --fix: profile " + report.profile + ", decision " +
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
            out += "#   docker/podman: --shm-size=" + std::to_string(shm >> 20) + "m   (Kubernetes: emptyDir medium: Memory, sizeLimit: " +
                   format_byte_size(shm) + ", at /dev/shm)\n";
        }
        for (const auto& c : caps) out += "#   docker/podman: --cap-add=" + c + "\n";
    }
    if (!manual.empty()) out += "# manual steps (node or image):\n" + manual;
    return out;
}

}  // namespace launchguard
