#include "probe/node_facts_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <boost/json.hpp>
#include <ctime>
#include <map>
#include <stdexcept>

#include "probe/text_file.h"
#include "probe/topology_cache.h"
#include "util/text.h"

namespace launchguard {
namespace json = boost::json;
namespace {

const char* set_name(NodeFactSet set) { return set == NodeFactSet::task ? "task" : "all"; }

// One CPU's settings without the CPU, as a group of the file holds them.
json::object cpu_settings(const CpuPower& power, unsigned cpu) {
    json::object o;
    if (auto it = power.governor.find(cpu); it != power.governor.end()) o["governor"] = it->second;
    if (auto it = power.scaling_max_khz.find(cpu); it != power.scaling_max_khz.end()) o["scaling_max_khz"] = it->second;
    if (auto it = power.cpuinfo_max_khz.find(cpu); it != power.cpuinfo_max_khz.end()) o["cpuinfo_max_khz"] = it->second;
    if (auto it = power.idle_states.find(cpu); it != power.idle_states.end()) {
        json::array states;
        for (const auto& state : it->second)
            states.push_back(json::object{{"name", state.name}, {"disabled", state.disabled}});
        o["idle_states"] = std::move(states);
    }
    return o;
}

json::array cpu_groups(const CpuPower& power) {
    CpuSet all;
    for (const auto& [cpu, _] : power.governor) all.add(cpu);
    for (const auto& [cpu, _] : power.scaling_max_khz) all.add(cpu);
    for (const auto& [cpu, _] : power.cpuinfo_max_khz) all.add(cpu);
    for (const auto& [cpu, _] : power.idle_states) all.add(cpu);
    // Keyed by the settings' serialized form, so equal settings share a group.
    std::map<std::string, std::pair<json::object, CpuSet>> groups;
    for (unsigned cpu : all.cpus()) {
        json::object settings = cpu_settings(power, cpu);
        auto& group = groups[json::serialize(settings)];
        if (group.second.empty()) group.first = std::move(settings);
        group.second.add(cpu);
    }
    json::array out;
    for (auto& [_, group] : groups) {
        group.first["cpus"] = group.second.to_list();
        out.push_back(std::move(group.first));
    }
    return out;
}

// Readers throw on a missing key or a wrong type; node_facts_cache_from_json turns
// that into an Error naming the file.
std::string string_at(const json::object& o, const char* key) { return json::value_to<std::string>(o.at(key)); }

void add_group(CpuPower& power, const json::object& group) {
    auto cpus = CpuSet::parse_list(string_at(group, "cpus"));
    if (!cpus) throw std::runtime_error("cpus: " + cpus.error().message);
    std::optional<std::string> governor;
    if (const auto* v = group.if_contains("governor")) governor = json::value_to<std::string>(*v);
    std::optional<long> scaling_max;
    if (const auto* v = group.if_contains("scaling_max_khz")) scaling_max = json::value_to<long>(*v);
    std::optional<long> cpuinfo_max;
    if (const auto* v = group.if_contains("cpuinfo_max_khz")) cpuinfo_max = json::value_to<long>(*v);
    std::optional<std::vector<CpuPower::IdleState>> states;
    if (const auto* v = group.if_contains("idle_states")) {
        states.emplace();
        for (const auto& item : v->as_array()) {
            const json::object& state = item.as_object();
            states->push_back(CpuPower::IdleState{string_at(state, "name"), state.at("disabled").as_bool()});
        }
    }
    for (unsigned cpu : cpus->cpus()) {
        if (governor) power.governor[cpu] = *governor;
        if (scaling_max) power.scaling_max_khz[cpu] = *scaling_max;
        if (cpuinfo_max) power.cpuinfo_max_khz[cpu] = *cpuinfo_max;
        if (states) power.idle_states[cpu] = *states;
    }
}

json::value link_to_json(const PcieLink& link) { return json::array{link.speed_gts, link.width}; }

PcieLink link_from_json(const json::value& v) {
    const json::array& pair = v.as_array();
    if (pair.size() != 2) throw std::runtime_error("a link is [GT/s, width]");
    return PcieLink{json::value_to<double>(pair[0]), json::value_to<int>(pair[1])};
}

json::object links_to_json(const Fact<std::map<std::string, PcieLinkRecord>>& links,
                           const std::vector<std::string>& busids) {
    json::object o;
    o["known"] = links.is_known();
    if (!links.is_known()) {
        o["reason"] = links.reason();
        return o;
    }
    o["source"] = links.source();
    json::array read_for;
    for (const auto& busid : busids) read_for.emplace_back(busid);
    o["read_for"] = std::move(read_for);
    json::object records;
    for (const auto& [busid, record] : *links) {
        records[busid] = json::object{{"current", link_to_json(record.current)}, {"max", link_to_json(record.max)}};
    }
    o["records"] = std::move(records);
    return o;
}

void links_from_json(const json::object& o, CachedNodeFacts& facts, const std::string& origin) {
    if (!o.at("known").as_bool()) {
        facts.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::unknown(string_at(o, "reason"));
        return;
    }
    facts.link_busids = json::value_to<std::vector<std::string>>(o.at("read_for"));
    std::map<std::string, PcieLinkRecord> records;
    for (const auto& [busid, value] : o.at("records").as_object()) {
        const json::object& record = value.as_object();
        records[busid] =
            PcieLinkRecord{std::string(busid), link_from_json(record.at("current")), link_from_json(record.at("max"))};
    }
    facts.pcie_links = Fact<std::map<std::string, PcieLinkRecord>>::known(
        std::move(records), string_at(o, "source") + ", cached in " + origin);
}

std::optional<bool> optional_bool(const json::object& o, const char* key) {
    const auto* v = o.if_contains(key);
    if (v == nullptr) return std::nullopt;
    return v->as_bool();
}

}  // namespace

bool CachedNodeFacts::links_cover(const std::vector<std::string>& busids) const {
    return std::all_of(busids.begin(), busids.end(), [this](const std::string& busid) {
        return std::find(link_busids.begin(), link_busids.end(), ascii_lower(busid)) != link_busids.end();
    });
}

std::string node_facts_cache_to_json(const CachedNodeFacts& facts, const NodeFactsCacheKey& key,
                                     std::string_view boot_id) {
    json::object o;
    o["version"] = kNodeFactsCacheVersion;
    o["boot_id"] = boot_id;
    o["sysfs_root"] = key.sysfs_root;
    o["set"] = set_name(key.set);
    json::object power;
    power["known"] = facts.power.is_known();
    if (facts.power.is_known()) {
        power["source"] = facts.power.source();
        if (facts.power->intel_no_turbo) power["intel_no_turbo"] = *facts.power->intel_no_turbo;
        if (facts.power->cpufreq_boost) power["cpufreq_boost"] = *facts.power->cpufreq_boost;
        power["groups"] = cpu_groups(*facts.power);
    } else {
        power["reason"] = facts.power.reason();
    }
    o["power"] = std::move(power);
    if (facts.pcie_links) {
        std::vector<std::string> busids;
        for (const auto& busid : facts.link_busids) busids.push_back(ascii_lower(busid));
        o["pcie_links"] = links_to_json(*facts.pcie_links, busids);
    }
    return json::serialize(o);
}

Result<CachedNodeFacts> node_facts_cache_from_json(std::string_view text, const NodeFactsCacheKey& key,
                                                   std::string_view boot_id, const std::string& origin) {
    std::error_code ec;
    json::value parsed = json::parse(text, ec);
    if (ec) return make_file_error(origin, 0, "not a node facts cache (JSON: " + ec.message() + ")");
    try {
        const json::object& o = parsed.as_object();
        if (o.at("version").as_int64() != kNodeFactsCacheVersion) {
            return make_file_error(origin, 0,
                                   "node facts cache version " + json::serialize(o.at("version")) + ", expected " +
                                       std::to_string(kNodeFactsCacheVersion));
        }
        if (boot_id.empty() || string_at(o, "boot_id") != boot_id) {
            return make_file_error(origin, 0, "written in another boot");
        }
        if (string_at(o, "sysfs_root") != key.sysfs_root) {
            return make_file_error(origin, 0, "read under " + string_at(o, "sysfs_root") + ", not " + key.sysfs_root);
        }
        const std::string set = string_at(o, "set");
        if (set != "all" && !(set == "task" && key.set == NodeFactSet::task)) {
            return make_file_error(origin, 0, "holds the '" + set + "' facts, not '" + set_name(key.set) + "'");
        }
        CachedNodeFacts facts;
        const json::object& power = o.at("power").as_object();
        if (power.at("known").as_bool()) {
            CpuPower value;
            value.intel_no_turbo = optional_bool(power, "intel_no_turbo");
            value.cpufreq_boost = optional_bool(power, "cpufreq_boost");
            for (const auto& group : power.at("groups").as_array()) add_group(value, group.as_object());
            facts.power = Fact<CpuPower>::known(std::move(value), string_at(power, "source") + ", cached in " + origin);
        } else {
            facts.power = Fact<CpuPower>::unknown(string_at(power, "reason"));
        }
        if (const auto* links = o.if_contains("pcie_links")) links_from_json(links->as_object(), facts, origin);
        return facts;
    } catch (const std::exception& e) {
        return make_file_error(origin, 0, std::string("damaged node facts cache: ") + e.what());
    }
}

std::string current_boot_id() {
    auto text = read_text_file("/proc/sys/kernel/random/boot_id");
    return text ? std::string(trim(*text)) : std::string();
}

std::optional<CachedNodeFacts> load_fresh_node_facts_cache(const std::string& path, const NodeFactsCacheKey& key,
                                                           long max_age_seconds) {
    if (max_age_seconds <= 0) return std::nullopt;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    const long written = static_cast<long>(st.st_mtime);
    const long now = static_cast<long>(std::time(nullptr));
    // A file dated in the future (the clock was set back) is not trusted.
    if (now - written > max_age_seconds || written > now + 1) return std::nullopt;
    auto text = read_text_file(path);
    if (!text) return std::nullopt;
    auto facts = node_facts_cache_from_json(*text, key, current_boot_id(), path);
    if (!facts) return std::nullopt;
    return std::move(facts).value();
}

Status save_node_facts_cache(const std::string& path, const CachedNodeFacts& facts, const NodeFactsCacheKey& key) {
    const std::string boot_id = current_boot_id();
    if (boot_id.empty()) return make_file_error(path, 0, "no boot id to key the node facts cache on");
    return save_cache_file(path, node_facts_cache_to_json(facts, key, boot_id), "node facts cache");
}

}  // namespace launchguard
