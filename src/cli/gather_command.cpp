// `launchguard gather DIR`: the files the node probes read on this node (or
// under --sysfs-root), laid out under DIR with the same relative paths, and
// the hwloc topology as DIR/hwloc.xml, so that
// `launchguard check --sysfs-root DIR --hwloc-xml DIR/hwloc.xml` replays the
// node elsewhere: for test fixtures, and for bug reports.
//
// What is gathered is what the probes read, recorded while they read it
// (probe/sysfs_probe.h, RecordSysfsReads), not a list kept here: a probe that
// reads a new file is gathered with it. Nothing else is: not the
// environment, not processes, not other files (docs/cli.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "probe/context_builder.h"
#include "probe/hwloc_probe.h"
#include "probe/sysfs_probe.h"
#include "report/fix_script.h"
#include "util/file_descriptor.h"
#include "util/input_file.h"

namespace launchguard::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTopologyFile = "hwloc.xml";
constexpr std::string_view kManifestFile = "GATHERED.txt";
constexpr std::string_view kKeepFile = ".keep";

struct GatherArgs {
    std::string dir;
    std::string sysfs_root = "/";
    std::string hwloc_xml;
    bool force = false;
};

std::vector<std::string> components(std::string_view relative) {
    std::vector<std::string> parts;
    while (!relative.empty()) {
        auto slash = relative.find('/');
        parts.emplace_back(relative.substr(0, slash));
        relative = slash == std::string_view::npos ? std::string_view() : relative.substr(slash + 1);
    }
    return parts;
}

// Writes a tree under one directory, one path component at a time, creating
// directories on the way and never following a symbolic link: whatever DIR
// already holds (with --force) cannot send a write outside it.
class TreeWriter {
public:
    TreeWriter(UniqueFd root, std::string root_name) : root_(std::move(root)), root_name_(std::move(root_name)) {}

    Status make_directory(const std::string& relative) {
        auto opened = open_directory(components(relative));
        if (!opened) return opened.error();
        return Done{};
    }

    Status write_file(const std::string& relative, std::string_view content) {
        auto parts = components(relative);
        if (parts.empty()) return refuse(relative, "empty path");
        const std::string name = parts.back();
        parts.pop_back();
        auto parent = open_directory(parts);
        if (!parent) return parent.error();
        if (auto removed = remove_file(parent->get(), name, relative); !removed) return removed;
        UniqueFd fd(::openat(parent->get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
        if (fd.get() < 0) return refuse(relative, std::string("cannot create: ") + std::strerror(errno));
        if (!write_all(fd.get(), content))
            return refuse(relative, std::string("cannot write: ") + std::strerror(errno));
        return Done{};
    }

    // A relative link at `relative` to `target`, both relative to the root.
    Status make_link(const std::string& relative, const std::string& target) {
        auto parts = components(relative);
        if (parts.empty()) return refuse(relative, "empty path");
        const std::string name = parts.back();
        parts.pop_back();
        std::string up;
        for (std::size_t i = 0; i < parts.size(); ++i) up += "../";
        auto parent = open_directory(parts);
        if (!parent) return parent.error();
        if (auto removed = remove_file(parent->get(), name, relative); !removed) return removed;
        if (::symlinkat((up + target).c_str(), parent->get(), name.c_str()) != 0) {
            return refuse(relative, std::string("cannot create the link: ") + std::strerror(errno));
        }
        return Done{};
    }

private:
    Error refuse(const std::string& relative, const std::string& why) const {
        return make_file_error(root_name_ + "/" + relative, 0, why);
    }

    Result<UniqueFd> open_directory(const std::vector<std::string>& parts) {
        UniqueFd current(::dup(root_.get()));
        if (current.get() < 0) return make_file_error(root_name_, 0, std::strerror(errno));
        std::string walked;
        for (const std::string& part : parts) {
            walked += (walked.empty() ? "" : "/") + part;
            // Names come from a directory listing or a probe's path; these
            // three would leave the place they name.
            if (part.empty() || part == "." || part == "..") return refuse(walked, "not a plain name: refused");
            if (::mkdirat(current.get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
                return refuse(walked, std::string("cannot create the directory: ") + std::strerror(errno));
            }
            UniqueFd next(::openat(current.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (next.get() < 0) {
                return refuse(walked, errno == ELOOP || errno == ENOTDIR
                                          ? std::string("a symbolic link or not a directory: refused")
                                          : std::string("cannot open: ") + std::strerror(errno));
            }
            current = std::move(next);
        }
        return current;
    }

    // With --force a file of the same name is replaced; a directory is not.
    Status remove_file(int parent, const std::string& name, const std::string& relative) const {
        if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) {
            return refuse(relative, std::string("cannot replace what is there: ") + std::strerror(errno));
        }
        return Done{};
    }

    UniqueFd root_;
    std::string root_name_;
};

// Where a recorded path goes in the tree: a path through a link the probes
// resolved is written at the link's target, and the link added after, so no
// write passes through a link.
std::string placed(const std::string& path, const SysfsRecording& recording) {
    for (const auto& [link, target] : recording.links) {
        if (path.size() > link.size() && path.compare(0, link.size(), link) == 0 && path[link.size()] == '/') {
            return target + path.substr(link.size());
        }
    }
    return path;
}

Status write_recording(TreeWriter& writer, const SysfsRecording& recording) {
    for (const auto& dir : recording.directories) {
        if (auto made = writer.make_directory(placed(dir, recording)); !made) return made;
    }
    for (const auto& [link, target] : recording.links) {
        if (auto made = writer.make_directory(target); !made) return made;
    }
    for (const auto& [path, content] : recording.files) {
        if (auto written = writer.write_file(placed(path, recording), content); !written) return written;
    }
    // Only the name was read: an empty file keeps it in its listing.
    for (const auto& path : recording.other_entries) {
        if (recording.files.count(path) > 0 || recording.links.count(path) > 0) continue;
        if (auto written = writer.write_file(placed(path, recording), ""); !written) return written;
    }
    for (const auto& [link, target] : recording.links) {
        if (auto made = writer.make_link(link, target); !made) return made;
    }
    // git keeps no empty directory, and an empty one is a fact (no IOMMU
    // group, no cpufreq): a tree committed as a fixture must keep it. The
    // probes skip hidden names, as sysfs has none.
    std::set<std::string> parents;
    auto add_parents = [&](std::string path) {
        for (auto slash = path.rfind('/'); slash != std::string::npos; slash = path.rfind('/')) {
            path.resize(slash);
            if (!parents.insert(path).second) break;
        }
    };
    for (const auto& dir : recording.directories) add_parents(placed(dir, recording));
    for (const auto& [path, content] : recording.files) add_parents(placed(path, recording));
    for (const auto& path : recording.other_entries) add_parents(placed(path, recording));
    for (const auto& [link, target] : recording.links) {
        add_parents(link);
        add_parents(target);
    }
    std::set<std::string> created;
    for (const auto& dir : recording.directories) created.insert(placed(dir, recording));
    for (const auto& [link, target] : recording.links) created.insert(target);
    for (const auto& where : created) {
        if (parents.count(where) > 0) continue;
        if (auto kept = writer.write_file(where + "/" + std::string(kKeepFile), ""); !kept) return kept;
    }
    return Done{};
}

std::string utc_now() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    char text[32] = "unknown";
    if (::gmtime_r(&now, &tm) != nullptr) std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
    return name;
}

std::string replay_command(const std::string& dir) {
    return "launchguard check --sysfs-root " + shell_quote(dir) + " --hwloc-xml " +
           shell_quote(dir + "/" + std::string(kTopologyFile));
}

template <typename T>
std::string fact_text(const Fact<T>& fact) {
    if (!fact.is_known()) return "unknown";
    if constexpr (std::is_same_v<T, std::string>)
        return fact.value();
    else
        return std::to_string(fact.value());
}

std::string manifest(const GatherArgs& args, const std::string& topology_source, const NodeSnapshot& snapshot,
                     const SysfsRecording& recording) {
    std::string text;
    text += "launchguard gather\n";
    text += "launchguard: " LAUNCHGUARD_VERSION "\n";
    text += "time: " + utc_now() + "\n";
    text += "hostname: " + host_name() + "\n";
    text += "node facts read under: " + args.sysfs_root + "\n";
    text += "topology: " + topology_source + "\n";
    text += "gathered: " + std::to_string(recording.files.size()) + " files, " +
            std::to_string(recording.directories.size()) + " directories, " + std::to_string(recording.links.size()) +
            " links\n";
    // Not files: a replay leaves them unknown, so they are written down here.
    text += "page size: " + fact_text(snapshot.node.page_size) + " (not replayed)\n";
    text += "architecture: " + fact_text(snapshot.node.arch) + " (not replayed)\n";
    text += "\nReplay:\n  " + replay_command(args.dir) + "\n";
    text +=
        "\nOnly the files launchguard's node probes read under sys/ and proc/ and the hwloc topology are\n"
        "here: not the environment, processes, or any other file.\n";
    return text;
}

bool is_empty_directory(const std::string& dir, std::error_code& ec) {
    fs::directory_iterator it(dir, ec);
    return !ec && it == fs::directory_iterator();
}

// DIR's topology: the given XML, checked as `check` would load it, or this
// machine's, discovered as `check` would discover it.
Result<std::string> topology_xml(const GatherArgs& args, std::string& source) {
    if (args.hwloc_xml.empty()) {
        source = "hwloc live discovery";
        return export_live_topology_xml();
    }
    source = "hwloc XML " + args.hwloc_xml;
    if (auto loaded = load_topology_from_xml(args.hwloc_xml); !loaded) return loaded.error();
    return read_text_file(args.hwloc_xml);
}

int gather_into(const GatherArgs& args, const std::string& target, TreeWriter& writer) {
    std::string topology_source;
    auto xml = topology_xml(args, topology_source);
    if (!xml) return bad_input((args.hwloc_xml.empty() ? "" : "--hwloc-xml: ") + xml.error().to_string());
    if (auto written = writer.write_file(std::string(kTopologyFile), *xml); !written) {
        return bad_input(written.error().to_string());
    }

    // The node's part of `check` and `node-check`, read from the XML just
    // written, as a replay will read it.
    ProbeOptions probe;
    probe.root = args.sysfs_root;
    probe.sysfs_root = args.sysfs_root;
    probe.hwloc_xml = target + "/" + std::string(kTopologyFile);
    probe.use_current_process_env = false;
    probe.environment = Environment{};
    SysfsRecording recording;
    Result<NodeSnapshot> snapshot = [&] {
        RecordSysfsReads record(recording, args.sysfs_root);
        return probe_node_snapshot(probe);
    }();
    if (!snapshot) return bad_input(snapshot.error().to_string());

    if (auto written = write_recording(writer, recording); !written) return bad_input(written.error().to_string());
    if (auto written =
            writer.write_file(std::string(kManifestFile), manifest(args, topology_source, *snapshot, recording));
        !written) {
        return bad_input(written.error().to_string());
    }
    return kExitAllow;
}

Result<TreeWriter> open_tree(const std::string& dir) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) return make_file_error(dir, 0, std::string("cannot open: ") + std::strerror(errno));
    return TreeWriter(std::move(fd), dir);
}

int run_gather(GatherArgs args) {
    while (args.dir.size() > 1 && args.dir.back() == '/') args.dir.pop_back();
    std::error_code ec;
    const bool exists = fs::exists(fs::symlink_status(args.dir, ec));
    if (exists && !fs::is_directory(args.dir, ec)) return bad_input(args.dir + ": exists and is not a directory");
    if (exists && fs::equivalent(args.dir, args.sysfs_root, ec)) {
        return bad_input(args.dir + ": is the root the node facts are read from");
    }

    int code = kExitAllow;
    if (exists && !is_empty_directory(args.dir, ec)) {
        if (ec) return bad_input(args.dir + ": " + ec.message());
        if (!args.force) {
            return bad_input(args.dir +
                             ": not empty (gather into a new or empty directory, or pass --force to write "
                             "into it, replacing files of the same names)");
        }
        auto writer = open_tree(args.dir);
        if (!writer) return bad_input(writer.error().to_string());
        code = gather_into(args, args.dir, *writer);
    } else {
        // A new or empty DIR appears whole or not at all: the tree is built
        // beside it and renamed into place (rename replaces an empty directory).
        const fs::path destination(args.dir);
        fs::path parent = destination.parent_path();
        if (parent.empty()) parent = ".";
        std::string staging = (parent / (destination.filename().string() + ".gather-XXXXXX")).string();
        if (::mkdtemp(staging.data()) == nullptr) {
            return bad_input(parent.string() + ": cannot create a directory to gather into: " + std::strerror(errno));
        }
        auto writer = open_tree(staging);
        code = writer ? gather_into(args, staging, *writer) : bad_input(writer.error().to_string());
        if (code == kExitAllow &&
            (::chmod(staging.c_str(), 0755) != 0 || ::rename(staging.c_str(), args.dir.c_str()) != 0)) {
            code = bad_input(args.dir + ": cannot move the gathered tree into place: " + std::strerror(errno));
        }
        if (code != kExitAllow) fs::remove_all(staging, ec);
    }
    if (code != kExitAllow) return code;
    std::cout << "gathered the node facts under " << args.sysfs_root << " into " << args.dir << "\n"
              << "replay: " << replay_command(args.dir) << "\n";
    return kExitAllow;
}

}  // namespace

void add_gather_command(CLI::App& app, CommandRunner& runner) {
    auto args = std::make_shared<GatherArgs>();
    CLI::App* cmd = app.add_subcommand(
        "gather",
        "Record the files the node checks read (and the hwloc topology) into DIR, for "
        "`check --sysfs-root DIR --hwloc-xml DIR/hwloc.xml` elsewhere: a test fixture or a bug report");
    cmd->add_option("dir", args->dir, "Directory to write: new or empty (or see --force)")->required();
    cmd->add_option("--sysfs-root", args->sysfs_root, "Read node facts (sys/, proc/) under this directory instead of /")
        ->check(CLI::ExistingDirectory)
        ->capture_default_str();
    cmd->add_option("--hwloc-xml", args->hwloc_xml, "Node topology from this hwloc XML file instead of live discovery");
    cmd->add_flag(
        "--force", args->force,
        "Write into a non-empty DIR, replacing files of the same names (others stay, and a replay reads them)");
    cmd->callback([&runner, args] { runner = [args] { return run_gather(*args); }; });
}

}  // namespace launchguard::cli
