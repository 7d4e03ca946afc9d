#include "report/enroot_patch.h"

#include <optional>
#include <sstream>

#include "util/text_escape.h"

namespace launchguard {
namespace {

std::vector<std::string> lines_of(std::string_view text) {
    std::vector<std::string> out;
    std::istringstream in{std::string(text)};
    std::string line;
    while (std::getline(in, line)) out.push_back(line);
    return out;
}

// enroot loads the file with "last duplicate wins".
bool environ_already_sets(const std::vector<std::string>& lines, const std::string& name, const std::string& value) {
    const std::string prefix = name + "=";
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
        if (it->rfind(prefix, 0) == 0) return it->substr(prefix.size()) == value;
    }
    return false;
}

bool mounts_already_target(const std::vector<std::string>& lines, const std::string& target) {
    for (const auto& line : lines) {
        std::istringstream fields(line);
        std::string source;
        std::string dst;
        fields >> source >> dst;
        if (fstab_unescape(dst) == target) return true;
    }
    return false;
}

// enroot reads $ENROOT_ENVIRON one NAME=VALUE per line: a line break in the
// value would start a line of the user's choosing (LD_PRELOAD=...).
std::optional<std::string> environ_cannot_carry(const RemediationOp& op) {
    if (!is_variable_name(op.name)) {
        return "cannot set '" + printable_text(op.name) + "' in the container: not a valid variable name";
    }
    if (op.value.find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
        return "cannot set " + op.name + " in the container: its value '" + printable_text(op.value) +
               "' holds a line break, which $ENROOT_ENVIRON cannot carry";
    }
    return std::nullopt;
}

}  // namespace

std::string enroot_mount_line(const RemediationOp& op) {
    return fstab_escape(op.host_path) + " " + fstab_escape(op.container_path) + " none x-create=file,bind," +
           (op.readonly ? "ro" : "rw") + ",nosuid,nodev,private";
}

EnrootPatch enroot_patch_for(const Report& report, std::string_view existing_environ,
                             std::string_view existing_mounts) {
    const auto environ_lines = lines_of(existing_environ);
    const auto mount_lines = lines_of(existing_mounts);
    EnrootPatch patch;
    for (const auto& op : report.patch) {
        if (op.kind == RemediationOp::Kind::set_env) {
            if (auto why = environ_cannot_carry(op)) {
                patch.refused.push_back(*why);
                continue;
            }
            if (!environ_already_sets(environ_lines, op.name, op.value))
                patch.environ_lines.push_back(op.name + "=" + op.value);
        } else if (op.kind == RemediationOp::Kind::mount_file) {
            if (!mounts_already_target(mount_lines, op.container_path))
                patch.mount_lines.push_back(enroot_mount_line(op));
        }
    }
    return patch;
}

}  // namespace launchguard
