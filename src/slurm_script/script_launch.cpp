#include "slurm_script/script_launch.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include "context/comm_backend.h"
#include "util/text.h"

namespace launchguard::slurm_script {
namespace {

bool under(std::string_view path, std::string_view dir) {
    if (dir == "/") return true;
    return path == dir || (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

// The filesystem a step's tasks will see, as far as the script tells: pyxis
// mounts, enroot's tmpfs over /var/run, and the profile's claim about where
// the node keeps its topology file. Everything else may be in the image (or
// on the node, for a bare step), so it is unknown, never missing.
class ScriptFileView final : public FileView {
public:
    ScriptFileView(Runtime runtime, std::vector<ContainerMount> mounts, std::string image, const Profile& profile,
                   std::string where)
        : runtime_(runtime),
          mounts_(std::move(mounts)),
          image_(std::move(image)),
          host_topology_(profile.topology.host_path),
          container_topology_(profile.topology.container_path.empty() ? profile.topology.host_path
                                                                      : profile.topology.container_path),
          profile_name_(profile.name),
          where_(std::move(where)) {}

    [[nodiscard]] FileInfo stat(std::string_view path) const override {
        FileInfo info;
        info.resolved_path = std::string(path);
        if (runtime_ != Runtime::pyxis) {
            if (!host_topology_.empty() && path == host_topology_) return profile_topology(path);
            info.detail = "on the compute node, which a batch script does not show";
            return info;
        }
        const ContainerMount* mount = mount_for(path);
        if (mount != nullptr) {
            if (!mount->source_known) {
                info.detail = "mounted by the --container-mounts entry " + mount->written +
                              ", whose source is computed at run time";
                return info;
            }
            std::string host_path =
                mount->source + std::string(path.substr(mount->target == "/" ? 0 : mount->target.size()));
            if (!host_topology_.empty() && host_path == host_topology_) return profile_topology(host_path);
            info.detail = "mounted from the compute node's " + host_path + " (" + mount->written +
                          "), which a batch script does not show";
            return info;
        }
        // An entry whose destination is computed at run time may mount any
        // path that starts with its literal text, and no other.
        for (const auto& entry : mounts_) {
            if (entry.target_known || !path.starts_with(entry.target)) continue;
            info.detail = "the --container-mounts entry " + entry.written +
                          " is computed at run time and may mount it; no literal entry provides it";
            return info;
        }
        if (under(path, "/var/run") || under(path, "/run")) {
            info.kind = FileKind::missing;
            info.detail = "enroot mounts an empty tmpfs over /var/run and no --container-mounts entry provides it";
            return info;
        }
        if (!host_topology_.empty() && path == container_topology_) {
            info.kind = FileKind::missing;
            info.detail = "profile " + profile_name_ + " keeps the node's topology file on the host at " +
                          host_topology_ + " and no --container-mounts entry brings it into the container";
            return info;
        }
        info.detail = "no --container-mounts entry provides it; the image " +
                      (image_.empty() ? std::string("(unknown)") : image_) + " may carry it";
        return info;
    }

    [[nodiscard]] Result<std::string> read(std::string_view path, std::size_t /*max_bytes*/) const override {
        return make_error(std::string(path) + ": its content is not known from the batch script");
    }
    [[nodiscard]] std::vector<std::string> list(std::string_view /*dir*/) const override { return {}; }
    [[nodiscard]] std::string describe() const override { return where_; }

private:
    [[nodiscard]] FileInfo profile_topology(std::string_view host_path) const {
        FileInfo info;
        info.kind = FileKind::regular;
        info.size = 1;  // non-empty by the profile's word; the real size is on the node
        info.resolved_path = std::string(host_path);
        info.detail = "profile " + profile_name_ + " says the node keeps its topology file at " + host_topology_;
        return info;
    }

    [[nodiscard]] const ContainerMount* mount_for(std::string_view path) const {
        const ContainerMount* best = nullptr;
        for (const auto& mount : mounts_) {
            if (mount.target_known && under(path, mount.target) &&
                (best == nullptr || mount.target.size() > best->target.size())) {
                best = &mount;
            }
        }
        return best;
    }

    Runtime runtime_;
    std::vector<ContainerMount> mounts_;
    std::string image_;
    std::string host_topology_;
    std::string container_topology_;
    std::string profile_name_;
    std::string where_;
};

// The last occurrence of an option wins, as in Slurm; step options beat #SBATCH.
const Option* find_option(const std::vector<Option>& options, std::string_view long_name,
                          std::string_view short_name = {}) {
    const Option* found = nullptr;
    for (const auto& option : options) {
        if (option.is(long_name, short_name)) found = &option;
    }
    return found;
}

struct OptionLookup {
    const std::vector<Option>& step;
    const std::vector<Option>& directives;

    [[nodiscard]] const Option* get(std::string_view long_name, std::string_view short_name = {}) const {
        if (const Option* o = find_option(step, long_name, short_name)) return o;
        return find_option(directives, long_name, short_name);
    }
};

std::optional<int> parse_count(std::string_view text) {
    // "8", "h100:8" (type:count); a range "2-4" counts as its minimum.
    if (auto colon = text.rfind(':'); colon != std::string_view::npos) text = text.substr(colon + 1);
    if (auto dash = text.find('-'); dash != std::string_view::npos) text = text.substr(0, dash);
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
}

// GPUs per node from --gres=gpu[:type]:N (other gres ignored).
std::optional<int> gres_gpus(std::string_view gres) {
    for (const auto& entry : split_list(gres, ',')) {
        if (entry == "gpu") return 1;
        if (entry.starts_with("gpu:")) return parse_count(entry);
    }
    return std::nullopt;
}

std::string where(const Option& option) {
    return (option.line > 0 ? "line " + std::to_string(option.line) + ": " : "") + option.written;
}

JobShape job_shape(const OptionLookup& options, const Profile& profile) {
    JobShape shape;
    std::optional<int> nodes;
    std::string nodes_source;
    if (const Option* o = options.get("--nodes", "-N"); o && o->value_known) {
        nodes = parse_count(o->value);
        nodes_source = where(*o);
    }
    if (nodes) {
        shape.nodes = Fact<int>::known(*nodes, nodes_source);
    } else {
        shape.nodes = Fact<int>::unknown("the script sets no --nodes (Slurm decides from the other requests)");
    }

    if (const Option* o = options.get("--ntasks", "-n"); o && o->value_known && parse_count(o->value)) {
        shape.tasks = Fact<int>::known(*parse_count(o->value), where(*o));
    } else if (const Option* per = options.get("--ntasks-per-node");
               per && per->value_known && nodes && parse_count(per->value)) {
        shape.tasks = Fact<int>::known(*nodes * *parse_count(per->value), nodes_source + " x " + where(*per));
    } else {
        shape.tasks = Fact<int>::unknown("the script sets neither --ntasks nor --nodes with --ntasks-per-node");
    }

    if (const Option* o = options.get("--gpus", "-G"); o && o->value_known && parse_count(o->value)) {
        shape.total_gpus = Fact<int>::known(*parse_count(o->value), where(*o));
        return shape;
    }
    std::optional<int> per_node;
    std::string per_node_source;
    if (const Option* o = options.get("--gpus-per-node"); o && o->value_known) {
        per_node = parse_count(o->value);
        per_node_source = where(*o);
    } else if (const Option* gres = options.get("--gres"); gres && gres->value_known) {
        per_node = gres_gpus(gres->value);
        per_node_source = where(*gres);
    } else if (const Option* exclusive = options.get("--exclusive"); exclusive && profile.node.gpus) {
        per_node = profile.node.gpus;
        per_node_source = where(*exclusive) + " (whole nodes; profile " + profile.name + ": " +
                          std::to_string(*profile.node.gpus) + " GPUs per node)";
    }
    if (nodes && per_node) {
        shape.total_gpus = Fact<int>::known(*nodes * *per_node, nodes_source + " x " + per_node_source);
    } else {
        shape.total_gpus = Fact<int>::unknown(
            "the script requests no GPU count (--gpus, --gpus-per-node, --gres=gpu:N) for a known number of nodes");
    }
    return shape;
}

// What makes a step's variable unknown, as one line: "export on line 30:
// $(uname -m) is computed when the job runs".
std::string unknown_cause(const Variable& variable) {
    std::string cause = variable.origin.empty() ? "line " + std::to_string(variable.line) : variable.origin;
    if (variable.why_unknown.empty()) return cause + ": the value is known only when the job runs";
    if (variable.why_unknown.starts_with("set ") || variable.why_unknown.starts_with("unset ")) {
        return cause + ": " + variable.why_unknown;
    }
    return cause + ": " + variable.why_unknown + " is known only when the job runs";
}

// pyxis starts a container only for --container-image or --container-name;
// its other options are ignored (with an error) without one of them.
bool starts_container(const Option& option) { return option.is("--container-image") || option.is("--container-name"); }

// Variables the job sets that the image's ENV would beat: pyxis keeps an
// image value over the job's unless --container-env names the variable.
std::vector<std::string> overridable_by_image(const Environment& env, const std::vector<Option>& options) {
    std::vector<std::string> kept;
    for (const auto& option : options) {
        if (!option.is("--container-env") || !option.value_known) continue;
        for (auto& name : split_list(option.value, ',')) kept.push_back(std::move(name));
    }
    std::vector<std::string> exposed;
    for (const auto& [name, value] : env) {
        if (name.starts_with("NCCL_") && std::find(kept.begin(), kept.end(), name) == kept.end())
            exposed.push_back(name);
    }
    return exposed;
}

}  // namespace

std::vector<ContainerMount> parse_container_mounts(const std::string& value,
                                                   const std::vector<RuntimePart>& runtime_parts) {
    // A run-time part at position p lies in the field [begin, end] of the
    // literal text that holds p (fields are split at ',' and ':', so no two
    // fields share an end).
    auto has_part = [&](std::size_t begin, std::size_t end) {
        return std::any_of(runtime_parts.begin(), runtime_parts.end(),
                           [&](const RuntimePart& part) { return part.position >= begin && part.position <= end; });
    };
    auto first_part = [&](std::size_t begin, std::size_t end) {
        std::size_t first = end;
        for (const auto& part : runtime_parts) {
            if (part.position >= begin && part.position <= end) first = std::min(first, part.position);
        }
        return first;
    };
    auto as_written = [&](std::size_t begin, std::size_t end) {
        std::string out;
        std::size_t at = begin;
        for (const auto& part : runtime_parts) {
            if (part.position < begin || part.position > end) continue;
            out += value.substr(at, part.position - at) + part.written;
            at = part.position;
        }
        return out + value.substr(at, end - at);
    };

    std::vector<ContainerMount> mounts;
    std::size_t begin = 0;
    while (begin <= value.size()) {
        std::size_t end = std::min(value.find(',', begin), value.size());
        if (end > begin || has_part(begin, end)) {
            ContainerMount mount;
            mount.written = as_written(begin, end);
            std::size_t first = std::min(value.find(':', begin), end);
            mount.source_known = !has_part(begin, first);
            mount.source = value.substr(begin, first_part(begin, first) - begin);
            if (first == end) {
                mount.target = mount.source;
                mount.target_known = mount.source_known;
            } else {
                std::size_t second = std::min(value.find(':', first + 1), end);
                mount.target_known = !has_part(first + 1, second);
                mount.target = value.substr(first + 1, first_part(first + 1, second) - first - 1);
                if (second != end) {
                    // pyxis separates mount flags with '+' ("ro+rprivate"): ',' already separates entries.
                    std::string flags = "+" + value.substr(second + 1, end - second - 1) + "+";
                    mount.readonly = flags.find("+ro+") != std::string::npos;
                }
            }
            if (mount.target_known) {
                while (mount.target.size() > 1 && mount.target.back() == '/') mount.target.pop_back();
            }
            mounts.push_back(std::move(mount));
        }
        begin = end + 1;
    }
    return mounts;
}

namespace {

std::string step_label(const SrunStep& step, bool batch_step) {
    if (batch_step) return "the batch step (the script runs no srun)";
    std::string line = " on line " + std::to_string(step.line);
    if (!step.mpi) return "srun" + line;
    if (!step.srun) return step.mpi->launcher + line;
    return "srun with " + step.mpi->launcher + line;
}

// The shape an MPI launcher's options state over the allocation's: -np
// ranks, ranks per node times the nodes, the hosts it names.
void mpi_shape(JobShape& shape, const shell::MpiLaunch& mpi, const std::string& label) {
    std::string options;
    for (const auto& option : mpi.shape_options) options += (options.empty() ? "" : ", ") + option;
    std::string where = label + ": " + mpi.launcher + " " + options;
    if (mpi.hostfile) {
        shape.nodes = Fact<int>::unknown(where + " (the hosts are in a file or computed when the job runs)");
    } else if (mpi.hosts) {
        shape.nodes = Fact<int>::known(*mpi.hosts, where);
    }
    if (mpi.ranks) {
        shape.tasks = Fact<int>::known(*mpi.ranks, where);
    } else if (mpi.ranks_per_node && shape.nodes) {
        shape.tasks = Fact<int>::known(*mpi.ranks_per_node * shape.nodes.value(), where + " x " + shape.nodes.source());
    }
}

// The step's environment as its tasks see it, with what makes a variable unknown.
void step_environment(StepLaunch& launch, const SrunStep& step, const std::vector<Option>& container_options,
                      const OptionLookup& options, const std::string& script_path) {
    LaunchContext& ctx = launch.context;
    Environment env;
    for (const auto& [name, variable] : step.environment) {
        if (variable.value) {
            env[name] = *variable.value;
        } else {
            // Unknown, not unset: only this name, with what sets it.
            ctx.env_unknown[name] = unknown_cause(variable);
            launch.notes.push_back(name + " (" + variable.origin + ") is not known before the job runs" +
                                   (variable.why_unknown.empty() ? "" : ": " + variable.why_unknown) +
                                   "; only this variable is unknown, and rules that need it say so");
        }
    }
    for (const auto& option : container_options) {
        if (!option.is("--container-env") || !option.value_known) continue;
        for (const auto& name : split_list(option.value, ',')) {
            if (!name.empty() && env.count(name) == 0 && ctx.env_unknown.count(name) == 0) {
                ctx.env_unknown[name] = option.written + " on line " + std::to_string(option.line) + " passes " + name +
                                        " from the submitting shell, which a review does not see";
            }
        }
    }
    ctx.env_unread_sources = step.open_sources;
    for (const auto& source : step.open_sources) {
        launch.notes.push_back(source + ": a variable the script does not set is unknown, not unset");
    }
    if (const Option* bind = options.get("--cpu-bind"); bind && bind->value_known) {
        ctx.requested_cpu_bind = Fact<std::string>::known(bind->value, where(*bind));
    } else {
        ctx.requested_cpu_bind = Fact<std::string>::unknown("the script sets no --cpu-bind");
    }
    if (const Option* gpu_bind = options.get("--gpu-bind"); gpu_bind && gpu_bind->value_known) {
        env["SLURM_GPU_BIND"] = gpu_bind->value;
    }
    if (const Option* per_task = options.get("--gpus-per-task"); per_task && per_task->value_known) {
        env["SLURM_GPUS_PER_TASK"] = per_task->value;
    }
    std::string env_source =
        launch.label + " of " + script_path + " (the submitting shell's environment and the image's ENV are not seen)";
    ctx.comm_backend = comm_backend_from_command(step.command, env, launch.label);
    ctx.env = step.environment_complete ? Fact<Environment>::known(std::move(env), env_source)
                                        : Fact<Environment>::unknown(step.environment_why_unknown);
}

// The pyxis container the step starts (its image, mounts, workdir) and the
// files its tasks will see.
void container_view(StepLaunch& launch, const std::vector<Option>& container_options, bool container,
                    const Profile& profile, const std::string& script_path) {
    LaunchContext& ctx = launch.context;
    std::vector<ContainerMount> mounts;
    std::string image;
    std::string workdir;
    for (const auto& option : container_options) {
        if (option.is("--container-mounts")) {
            // Literal entries count even where others are computed at run time;
            // a list of unknown shape may mount anything.
            std::vector<ContainerMount> entries;
            if (option.value_known || !option.value_runtime_parts.empty()) {
                entries = parse_container_mounts(option.value, option.value_runtime_parts);
            } else {
                ContainerMount anything;
                anything.source_known = anything.target_known = false;
                anything.written = option.written;
                entries.push_back(std::move(anything));
            }
            for (auto& mount : entries) {
                if (!mount.source_known || !mount.target_known) {
                    launch.notes.push_back(
                        "--container-mounts entry " + mount.written + " is computed at run time; " +
                        (mount.target_known ? "what it mounts at " + mount.target + " is unknown"
                         : mount.target.empty()
                             ? "it may mount any path, so none is taken as missing"
                             : "paths it could mount (those that start with " + mount.target + ") are unknown"));
                }
                ctx.container.requested_mounts.push_back(mount.written);
                mounts.push_back(std::move(mount));
            }
            continue;
        }
        if (!option.value_known) {
            launch.notes.push_back(option.written + " is computed at run time; the container view ignores it");
            continue;
        }
        if (option.is("--container-image")) image = option.value;
        if (option.is("--container-mount-home"))
            ctx.container.requested_mounts.emplace_back("$HOME (--container-mount-home)");
        if (option.is("--container-workdir")) workdir = option.value;
    }
    if (!container && !mounts.empty()) {
        launch.notes.emplace_back("pyxis ignores --container-mounts without --container-image or --container-name");
    }
    if (container && ctx.env) {
        std::vector<std::string> exposed = overridable_by_image(ctx.env.value(), container_options);
        std::string names;
        for (const auto& name : exposed) names += (names.empty() ? "" : ", ") + name;
        if (!names.empty()) {
            launch.notes.push_back(
                "the image's ENV beats the job's value under pyxis unless --container-env "
                "names the variable; not named: " +
                names);
        }
    }
    if (container) {
        ctx.container.image = image.empty() ? Fact<std::string>::unknown("no --container-image in the step")
                                            : Fact<std::string>::known(image, launch.label);
        if (!workdir.empty() && workdir.front() != '/') {
            launch.notes.push_back("--container-workdir " + workdir + " is relative");
        }
        ctx.container.shm_bytes = Fact<std::uint64_t>::unknown(
            "enroot bind-mounts the node's /dev/shm, whose size a batch script does not show");
    }
    std::string describe = container ? "pyxis container" + (image.empty() ? std::string() : " of " + image) + " as " +
                                           launch.label + " of " + script_path + " describes it"
                                     : "the compute node, as " + script_path + " describes it";
    if (container) launch.mounts = mounts;
    ctx.files = std::make_shared<ScriptFileView>(ctx.runtime, std::move(mounts), image, profile, describe);
}

// What only the node shows: unknown for every step of a script.
void node_unknowns(LaunchContext& ctx) {
    const std::string from_script = "a batch script does not show the node";
    ctx.cpu_mask = Fact<CpuSet>::unknown("decided by Slurm on the node (" + from_script + ")");
    ctx.gpus = Fact<std::vector<Gpu>>::unknown("assigned by Slurm on the node (" + from_script + ")");
    ctx.topology = Fact<NodeTopology>::unknown(from_script);
    ctx.interfaces = Fact<std::vector<NetInterface>>::unknown(from_script);
    NodeFacts& node = ctx.node;
    node.power = Fact<CpuPower>::unknown(from_script);
    node.numa_balancing = Fact<bool>::unknown(from_script);
    node.kernel_cmdline = Fact<std::string>::unknown(from_script);
    node.virtualization = Fact<std::string>::unknown(from_script);
    node.iommu_groups = Fact<std::vector<IommuGroup>>::unknown(from_script);
    node.page_size = Fact<long>::unknown(from_script);
    node.arch = Fact<std::string>::unknown(from_script);
    node.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::unknown(from_script);
    const std::string limits = "set on the node by Slurm and the container runtime, not in the script";
    ctx.container.memlock = Fact<std::optional<std::uint64_t>>::unknown(limits);
    ctx.container.capabilities = Fact<std::vector<std::string>>::unknown(limits);
    ctx.container.runs_as_root = Fact<bool>::unknown(limits);
}

StepLaunch step_launch(const BatchScript& script, const SrunStep& step, bool batch_step, const Profile& profile) {
    StepLaunch launch;
    launch.line = step.line;
    launch.label = step_label(step, batch_step);
    launch.utility = step.utility;
    OptionLookup options{step.options, script.directives};
    LaunchContext& ctx = launch.context;
    // pyxis applies container options per srun; #SBATCH ones only to the batch
    // step, and to an MPI launcher the batch step runs without srun.
    const auto& container_options = batch_step || !step.srun ? script.directives : step.options;
    bool container = std::any_of(container_options.begin(), container_options.end(), starts_container);
    ctx.runtime = container ? Runtime::pyxis : Runtime::bare;
    step_environment(launch, step, container_options, options, script.path);
    container_view(launch, container_options, container, profile, script.path);
    ctx.job = job_shape(options, profile);
    if (step.mpi) mpi_shape(ctx.job, *step.mpi, launch.label);
    node_unknowns(ctx);
    if (step.conditional) launch.notes.emplace_back("this step runs only when a condition in the script holds");
    return launch;
}

}  // namespace

std::vector<StepLaunch> launches_from_script(const BatchScript& script, const Profile& profile) {
    std::vector<SrunStep> steps = script.steps;
    bool batch_step = steps.empty();
    if (batch_step) {
        SrunStep step;
        step.environment = script.exported;
        step.open_sources = script.open_sources;
        steps.push_back(std::move(step));
    }
    std::vector<StepLaunch> launches;
    for (const auto& step : steps) launches.push_back(step_launch(script, step, batch_step, profile));
    return launches;
}

}  // namespace launchguard::slurm_script
