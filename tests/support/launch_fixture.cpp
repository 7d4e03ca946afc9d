#include "support/launch_fixture.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "probe/gpu_assignment.h"
#include "probe/hwloc_probe.h"
#include "probe/sysfs_probe.h"
#include "support/memory_file_view.h"
#include "support/shared_fixtures.h"
#include "util/size_parser.h"

namespace launchguard::testing {
namespace {

constexpr const char* kFixtureSource = "test fixture";

Environment read_env(const YAML::Node& node) {
    Environment env;
    for (const auto& kv : node) env[kv.first.as<std::string>()] = kv.second.as<std::string>();
    return env;
}

std::shared_ptr<MemoryFileView> read_files(const YAML::Node& spec, const std::string& description) {
    auto view = std::make_shared<MemoryFileView>(description);
    if (auto files = spec["files"]) {
        for (const auto& kv : files) view->add_file(kv.first.as<std::string>(), kv.second.as<std::string>());
    }
    if (auto dirs = spec["directories"]) {
        for (const auto& d : dirs) view->add_directory(d.as<std::string>());
    }
    if (auto links = spec["symlinks"]) {
        for (const auto& kv : links) view->add_symlink(kv.first.as<std::string>(), kv.second.as<std::string>());
    }
    if (auto unreadable = spec["unreadable"]) {
        for (const auto& u : unreadable) view->add_unreadable(u.as<std::string>());
    }
    if (auto devices = spec["devices"]) {
        for (const auto& d : devices) view->add_other(d.as<std::string>());
    }
    if (auto unknown = spec["unknown_files"]) {
        for (const auto& u : unknown) view->add_unknown(u.as<std::string>());
    }
    return view;
}

std::uint64_t bytes(const YAML::Node& node) {
    auto parsed = parse_byte_size(node.as<std::string>());
    if (!parsed) throw std::runtime_error("launch fixture: " + parsed.error().message);
    return *parsed;
}

Runtime runtime_of(const std::string& name) {
    if (name == "bare") return Runtime::bare;
    if (name == "enroot") return Runtime::enroot;
    if (name == "pyxis") return Runtime::pyxis;
    if (name == "kubernetes") return Runtime::kubernetes;
    throw std::runtime_error("launch fixture: unknown runtime " + name);
}

}  // namespace

std::string fixture_path(const std::string& relative) {
    std::string own = std::string(LAUNCHGUARD_FIXTURES) + "/" + relative;
    return std::filesystem::exists(own) ? own : shared_fixture_path(relative);
}

LaunchContext launch_from_yaml(const std::string& yaml) {
    YAML::Node spec = YAML::Load(yaml);
    LaunchContext ctx;
    ctx.runtime = spec["runtime"] ? runtime_of(spec["runtime"].as<std::string>()) : Runtime::bare;
    ctx.env = Fact<Environment>::known(spec["env"] ? read_env(spec["env"]) : Environment{}, kFixtureSource);
    ctx.files = read_files(spec, "test container view");

    if (auto xml = spec["hwloc_xml"]) {
        auto topo = load_topology_from_xml(fixture_path(xml.as<std::string>()));
        if (!topo) throw std::runtime_error("launch fixture: " + topo.error().to_string());
        if (auto sysfs = spec["sysfs"])
            augment_topology_from_sysfs(topo.value(), fixture_path(sysfs.as<std::string>()));
        ctx.topology = Fact<NodeTopology>::known(std::move(topo.value()), kFixtureSource);
    } else {
        ctx.topology = Fact<NodeTopology>::unknown("no node topology in the test fixture");
    }
    if (auto sysfs = spec["sysfs"]) ctx.node = probe_node_facts(fixture_path(sysfs.as<std::string>()));

    if (auto cpus = spec["cpus"]) {
        auto set = CpuSet::parse_list(cpus.as<std::string>());
        if (!set) throw std::runtime_error("launch fixture: " + set.error().message);
        ctx.cpu_mask = Fact<CpuSet>::known(*set, kFixtureSource);
    } else {
        ctx.cpu_mask = Fact<CpuSet>::unknown("no CPU mask in the test fixture");
    }

    std::optional<std::string> gpu_flag;
    if (auto gpus = spec["gpus"]) {
        std::string list;
        for (const auto& g : gpus) list += (list.empty() ? "" : ",") + g.as<std::string>();
        gpu_flag = list;
    }
    ctx.gpus = assigned_gpus(ctx.env.value(), gpu_flag, ctx.topology);

    if (auto ifs = spec["interfaces"]) {
        std::vector<NetInterface> list;
        for (const auto& i : ifs) list.push_back({i.as<std::string>(), true});
        ctx.interfaces = Fact<std::vector<NetInterface>>::known(std::move(list), kFixtureSource);
    } else if (ctx.topology) {
        ctx.interfaces = Fact<std::vector<NetInterface>>::known(ctx.topology->interfaces, "hwloc fixture");
    } else {
        ctx.interfaces = Fact<std::vector<NetInterface>>::unknown("no interfaces in the test fixture");
    }

    if (auto job = spec["job"]) {
        if (job["nodes"]) ctx.job.nodes = Fact<int>::known(job["nodes"].as<int>(), kFixtureSource);
        if (job["tasks"]) ctx.job.tasks = Fact<int>::known(job["tasks"].as<int>(), kFixtureSource);
        if (job["gpus"]) ctx.job.total_gpus = Fact<int>::known(job["gpus"].as<int>(), kFixtureSource);
    }

    if (auto c = spec["container"]) {
        if (c["shm"]) ctx.container.shm_bytes = Fact<std::uint64_t>::known(bytes(c["shm"]), kFixtureSource);
        if (c["memlock"]) {
            std::optional<std::uint64_t> limit;
            if (c["memlock"].as<std::string>() != "unlimited") limit = bytes(c["memlock"]);
            ctx.container.memlock = Fact<std::optional<std::uint64_t>>::known(limit, kFixtureSource);
        }
        if (c["caps"]) {
            ctx.container.capabilities =
                Fact<std::vector<std::string>>::known(c["caps"].as<std::vector<std::string>>(), kFixtureSource);
        }
        if (c["nofile"]) {
            std::optional<std::uint64_t> limit;
            if (c["nofile"].as<std::string>() != "unlimited") limit = c["nofile"].as<std::uint64_t>();
            ctx.container.open_files = Fact<std::optional<std::uint64_t>>::known(limit, kFixtureSource);
        }
        if (c["root"]) ctx.container.runs_as_root = Fact<bool>::known(c["root"].as<bool>(), kFixtureSource);
    }

    if (auto n = spec["node"]) {
        if (n["arch"]) ctx.node.arch = Fact<std::string>::known(n["arch"].as<std::string>(), kFixtureSource);
        if (n["page_size"])
            ctx.node.page_size = Fact<long>::known(static_cast<long>(bytes(n["page_size"])), kFixtureSource);
        if (n["cmdline"])
            ctx.node.kernel_cmdline = Fact<std::string>::known(n["cmdline"].as<std::string>(), kFixtureSource);
        if (n["virtualization"]) {
            ctx.node.virtualization = Fact<std::string>::known(n["virtualization"].as<std::string>(), kFixtureSource);
        }
        if (n["nvidia_driver"]) {
            GpuDirectRdma gdr;
            gdr.nvidia_driver = n["nvidia_driver"].as<std::string>();
            ctx.node.gpudirect = Fact<GpuDirectRdma>::known(std::move(gdr), kFixtureSource);
        }
        if (n["numa_balancing"])
            ctx.node.numa_balancing = Fact<bool>::known(n["numa_balancing"].as<bool>(), kFixtureSource);
    }

    if (auto h = spec["host"]) {
        HostView host;
        host.env = Fact<Environment>::known(h["env"] ? read_env(h["env"]) : Environment{}, kFixtureSource);
        host.files = read_files(h, "test host view");
        ctx.host = std::move(host);
    }
    return ctx;
}

}  // namespace launchguard::testing
