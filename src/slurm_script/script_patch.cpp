#include "slurm_script/script_patch.h"

#include <algorithm>
#include <map>

#include "report/fix_script.h"
#include "report/text_report.h"

namespace launchguard::slurm_script {
namespace {

std::string mount_entry(const RemediationOp& op) {
    return op.host_path + ":" + op.container_path + (op.readonly ? ":ro" : "");
}

std::string env_line(const RemediationOp& op) {
    return op.kind == RemediationOp::Kind::set_env ? "export " + op.name + "=" + shell_quote(op.value)
                                                   : "unset " + op.name;
}

std::string leading_blanks(const std::string& line) {
    return line.substr(0, line.find_first_not_of(" \t"));
}

// Where "srun" starts as a word on a line, npos when it does not.
std::size_t srun_word(const std::string& line) {
    for (std::size_t pos = line.find("srun"); pos != std::string::npos; pos = line.find("srun", pos + 1)) {
        bool starts = pos == 0 || line[pos - 1] == ' ' || line[pos - 1] == '\t' || line[pos - 1] == ';' ||
                      line[pos - 1] == '&' || line[pos - 1] == '|' || line[pos - 1] == '(' || line[pos - 1] == '{';
        bool ends = pos + 4 == line.size() || line[pos + 4] == ' ' || line[pos + 4] == '\t' || line[pos + 4] == '\r';
        if (starts && ends) return pos;
    }
    return std::string::npos;
}

}  // namespace

bool script_can_apply(const RemediationOp& op, Runtime runtime) {
    switch (op.kind) {
        case RemediationOp::Kind::set_env:
        case RemediationOp::Kind::unset_env: return true;
        case RemediationOp::Kind::mount_file: return runtime == Runtime::pyxis;
        default: return false;
    }
}

std::string fix_in_script_terms(const RemediationOp& op, const StepFixes& step) {
    std::string where = step.step_line > 0 ? "line " + std::to_string(step.step_line) : "the batch step";
    switch (op.kind) {
        case RemediationOp::Kind::set_env:
            if (step.runtime == Runtime::pyxis) {
                return env_line(op) + "  (before the srun on " + where + ", which gets --container-env=" + op.name +
                       " so the image's ENV cannot override it)";
            }
            return env_line(op) + "  (before the srun on " + where + ")";
        case RemediationOp::Kind::unset_env: return env_line(op) + "  (before the srun on " + where + ")";
        case RemediationOp::Kind::mount_file:
            if (step.runtime == Runtime::pyxis) {
                return "--container-mounts=" + mount_entry(op) + "  (on the srun on " + where + ")";
            }
            return "the step runs without a container: make " + op.host_path + " available at " + op.container_path +
                   " on the node";
        default: return describe_remediation(op);
    }
}

std::string apply_fixes(const BatchScript& script, const std::vector<StepFixes>& fixes) {
    // Line index -> lines to insert before it, and the srun options to add on it.
    std::map<std::size_t, std::vector<std::string>> before;
    std::map<std::size_t, std::vector<std::string>> mounts;
    std::map<std::size_t, std::vector<std::string>> container_env;
    for (const auto& step : fixes) {
        std::size_t index = step.step_line > 0 ? static_cast<std::size_t>(step.step_line - 1)
                                               : static_cast<std::size_t>(std::max(script.last_directive_line,
                                                                                   script.shebang_lines));
        for (const auto& op : step.ops) {
            if (!script_can_apply(op, step.runtime)) continue;
            auto& list = op.kind == RemediationOp::Kind::mount_file ? mounts[index] : before[index];
            std::string text = op.kind == RemediationOp::Kind::mount_file ? mount_entry(op) : env_line(op);
            if (std::find(list.begin(), list.end(), text) == list.end()) list.push_back(text);
            if (op.kind == RemediationOp::Kind::set_env && step.runtime == Runtime::pyxis && step.step_line > 0) {
                auto& names = container_env[index];
                if (std::find(names.begin(), names.end(), op.name) == names.end()) names.push_back(op.name);
            }
        }
    }
    std::string out;
    for (std::size_t i = 0; i <= script.lines.size(); ++i) {
        const std::string line = i < script.lines.size() ? script.lines[i] : std::string();
        const std::string ending = !line.empty() && line.back() == '\r' ? "\r\n" : "\n";
        if (auto it = before.find(i); it != before.end()) {
            for (const auto& added : it->second) out += leading_blanks(line) + added + ending;
        }
        if (i == script.lines.size()) break;
        std::string patched = line;
        std::string options;
        for (const auto& [option, table] : {std::pair{"--container-mounts=", &mounts}, {"--container-env=", &container_env}}) {
            auto it = table->find(i);
            if (it == table->end()) continue;
            std::string joined;
            for (const auto& item : it->second) joined += (joined.empty() ? "" : ",") + item;
            options += " " + std::string(option) + joined;
        }
        if (!options.empty()) {
            std::size_t srun = srun_word(patched);
            if (srun != std::string::npos) {
                patched.insert(srun + 4, options);
            } else {
                out += leading_blanks(line) + "# launchguard: add" + options + " to the srun below" + ending;
            }
        }
        out += patched + ending;
    }
    return out;
}

}  // namespace launchguard::slurm_script
