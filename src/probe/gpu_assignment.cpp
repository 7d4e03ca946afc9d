#include "probe/gpu_assignment.h"

#include <algorithm>
#include <charconv>

#include "probe/text_file.h"

namespace launchguard {
namespace {

bool is_all(std::string_view v) { return v == "all"; }
// "void" and "NoDevFiles" are the NVIDIA container runtime's spellings of
// "no GPU"; CUDA treats an invalid first index such as -1 as "no device".
bool is_none(std::string_view v) { return v.empty() || v == "none" || v == "void" || v == "NoDevFiles" || v == "-1"; }

Result<const Gpu*> resolve_item(std::string_view item, const NodeTopology& topo, std::string_view origin) {
    std::string where = std::string(origin) + ": ";
    if (item.substr(0, 4) == "MIG-") {
        return make_error(where + "MIG device '" + std::string(item) +
                          "' cannot be mapped to a physical GPU from the topology");
    }
    if (item.substr(0, 4) == "GPU-") {
        if (const Gpu* exact = topo.gpu_by_uuid(std::string(item))) return exact;
        const Gpu* found = nullptr;
        bool any_uuid = false;
        for (const auto& g : topo.gpus) {
            any_uuid = any_uuid || !g.uuid.empty();
            if (!g.uuid.empty() && g.uuid.compare(0, item.size(), item) == 0) {
                if (found != nullptr)
                    return make_error(where + "UUID prefix '" + std::string(item) + "' matches more than one GPU");
                found = &g;
            }
        }
        if (found != nullptr) return found;
        if (!any_uuid)
            return make_error(where + "GPU UUID '" + std::string(item) + "' cannot be checked: the topology (" +
                              topo.source + ") records no GPU UUIDs");
        return make_error(where + "no GPU with UUID '" + std::string(item) + "' on this node");
    }
    if (item.find(':') != std::string_view::npos) {
        if (const Gpu* g = topo.gpu_by_busid(std::string(item))) return g;
        return make_error(where + "no GPU with PCI bus id '" + std::string(item) + "' on this node");
    }
    int index = -1;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (ec != std::errc() || ptr != item.data() + item.size() || index < 0) {
        return make_error(where + "'" + std::string(item) + "' is neither a GPU index, a GPU UUID nor a PCI bus id");
    }
    if (const Gpu* g = topo.gpu_by_index(index)) return g;
    return make_error(where + "GPU index " + std::to_string(index) + " does not exist on this node (" +
                      std::to_string(topo.gpus.size()) + " GPUs)");
}

}  // namespace

Result<std::vector<Gpu>> resolve_gpu_list(std::string_view list, const NodeTopology& topo, std::string_view origin) {
    list = trim(list);
    std::vector<Gpu> out;
    if (is_none(list)) return out;
    if (is_all(list)) return topo.gpus;
    std::size_t pos = 0;
    while (pos <= list.size()) {
        std::size_t comma = list.find(',', pos);
        if (comma == std::string_view::npos) comma = list.size();
        std::string_view item = trim(list.substr(pos, comma - pos));
        pos = comma + 1;
        if (item.empty()) continue;
        auto gpu = resolve_item(item, topo, origin);
        if (!gpu) return gpu.error();
        const Gpu* g = *gpu;
        bool seen = std::any_of(out.begin(), out.end(),
                                [&](const Gpu& o) { return o.busid == g->busid && o.index == g->index; });
        if (!seen) out.push_back(*g);
    }
    return out;
}

Fact<std::vector<Gpu>> assigned_gpus(const Environment& env, const std::optional<std::string>& flag,
                                     const Fact<NodeTopology>& topo) {
    struct Source {
        std::string name;  // shown in errors
        std::string value;
        std::string caveat;  // appended to the fact's source
    };
    std::optional<Source> chosen;
    if (flag) {
        chosen = Source{"--gpus", *flag, ""};
    } else {
        for (const char* var : {"SLURM_STEP_GPUS", "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}) {
            auto it = env.find(var);
            if (it == env.end()) continue;
            std::string caveat;
            if (std::string_view(var) == "CUDA_VISIBLE_DEVICES") {
                caveat =
                    " (indices relative to the devices the task can open: under a cgroup device constraint "
                    "they are renumbered from 0 and may not be physical indices)";
            }
            chosen = Source{var, it->second, caveat};
            break;
        }
    }

    if (chosen && is_none(trim(chosen->value))) {
        return Fact<std::vector<Gpu>>::known({}, chosen->name + "=" + chosen->value + ": no GPUs");
    }
    if (!topo.is_known()) {
        return Fact<std::vector<Gpu>>::unknown("cannot resolve the task's GPUs: node topology unknown (" +
                                               topo.reason() + ")");
    }
    if (!chosen) {
        return Fact<std::vector<Gpu>>::known(topo->gpus, "no restriction: every GPU on the node is visible");
    }
    auto gpus = resolve_gpu_list(chosen->value, *topo, chosen->name);
    if (!gpus) return Fact<std::vector<Gpu>>::unknown(gpus.error().to_string());
    return Fact<std::vector<Gpu>>::known(std::move(gpus).value(), chosen->name + "=" + chosen->value + chosen->caveat);
}

}  // namespace launchguard
