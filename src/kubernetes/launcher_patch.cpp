#include "kubernetes/launcher_patch.h"

#include <algorithm>

#include <boost/json/string.hpp>

#include "report/fix_script.h"

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

// The pointer of the argv word at `index` of command followed by args, as
// the working copy holds them; an index one past the end goes to the end of
// args when there are args, else of command.
std::string word_pointer(PodPatchBuilder& builder, const std::string& container, std::size_t index) {
    const json::value* command = builder.at(container + "/command");
    const json::value* args = builder.at(container + "/args");
    std::size_t in_command = command != nullptr && command->is_array() ? command->get_array().size() : 0;
    bool has_args = args != nullptr && args->is_array();
    if (index < in_command || (index == in_command && !has_args)) {
        return container + "/command/" + std::to_string(index);
    }
    return container + "/args/" + std::to_string(index - in_command);
}

}  // namespace

const ContainerLaunch* rank_launcher(const WorkloadSpec& workload, const std::vector<ContainerLaunch>& containers,
                                     const ContainerLaunch& container) {
    if (container.shell.mpi_place) return &container;
    if (!workload.is_mpi_job || container.pod->role != "Worker") return nullptr;
    const ContainerLaunch* found = nullptr;
    for (const auto& c : containers) {
        if (c.pod->role != "Launcher" || !c.shell.runs_mpi) continue;
        if (found != nullptr) return nullptr;  // two launchers: which one starts the ranks is not told
        found = &c;
    }
    return found != nullptr && found->shell.mpi_place ? found : nullptr;
}

bool launcher_can_apply(const ContainerLaunch& launcher, const RemediationOp& op) {
    const MpiOptionsPlace& place = *launcher.shell.mpi_place;
    if (op.kind == RemediationOp::Kind::unset_env) return shell::rank_env_written(place.launch, op.name).empty();
    // A NUL ends an argv word; the kernel cannot pass it.
    return op.kind == RemediationOp::Kind::set_env && op.value.find('\0') == std::string::npos;
}

std::string launcher_removal(const ContainerLaunch& launcher, const RemediationOp& op) {
    if (op.kind != RemediationOp::Kind::unset_env) return "";
    const MpiOptionsPlace& place = *launcher.shell.mpi_place;
    std::string written = shell::rank_env_written(place.launch, op.name);
    if (written.empty()) return "";
    return "remove " + written + " from the " + place.launch.launcher + " in container " +
           (launcher.name.empty() ? launcher.field : launcher.name) + " (" + launcher.field +
           ": it sets the variable for every rank; the patch leaves the launcher's options as written)";
}

void LauncherPatcher::set_env(PodPatchBuilder& builder, const ContainerLaunch& launcher, const std::string& name,
                              const std::string& value) {
    const MpiOptionsPlace& place = *launcher.shell.mpi_place;
    Added& added = added_[&launcher];
    std::string option = shell::rank_env_option(place.launch, name, shell_quote(value));
    if (std::find(added.options.begin(), added.options.end(), option) != added.options.end()) return;
    added.options.push_back(option);
    if (!place.offset) {
        // New argv words after those added before, so they keep their order.
        for (auto& word : shell::rank_env_words(place.launch, name, value)) {
            builder.add(word_pointer(builder, launcher.pointer, place.word + added.shift), json::string(word));
            ++added.shift;
        }
        return;
    }
    const std::string pointer = word_pointer(builder, launcher.pointer, place.word);
    const json::value* script = builder.at(pointer);
    if (script == nullptr || !script->is_string()) return;
    std::string text(script->get_string());
    std::string inserted = " " + option;
    text.insert(std::min(*place.offset + added.shift, text.size()), inserted);
    added.shift += inserted.size();
    builder.replace(pointer, json::string(text));
}

}  // namespace launchguard::kubernetes
