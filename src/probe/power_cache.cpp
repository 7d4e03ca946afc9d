#include "probe/power_cache.h"

#include <sys/stat.h>

#include <boost/json.hpp>
#include <ctime>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "probe/text_file.h"
#include "util/atomic_file.h"

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
        for (const auto& state : it->second) states.push_back(json::object{{"name", state.name}, {"disabled", state.disabled}});
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

// Readers throw on a missing key or a wrong type; power_cache_from_json turns
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

std::optional<bool> optional_bool(const json::object& o, const char* key) {
    const auto* v = o.if_contains(key);
    if (v == nullptr) return std::nullopt;
    return v->as_bool();
}

}  // namespace

std::string power_cache_to_json(const Fact<CpuPower>& power, const PowerCacheKey& key, std::string_view boot_id) {
    json::object o;
    o["version"] = kPowerCacheVersion;
    o["boot_id"] = boot_id;
    o["sysfs_root"] = key.sysfs_root;
    o["set"] = set_name(key.set);
    o["known"] = power.is_known();
    if (!power.is_known()) {
        o["reason"] = power.reason();
        return json::serialize(o);
    }
    o["source"] = power.source();
    if (power->intel_no_turbo) o["intel_no_turbo"] = *power->intel_no_turbo;
    if (power->cpufreq_boost) o["cpufreq_boost"] = *power->cpufreq_boost;
    o["groups"] = cpu_groups(*power);
    return json::serialize(o);
}

Result<Fact<CpuPower>> power_cache_from_json(std::string_view text, const PowerCacheKey& key,
                                             std::string_view boot_id, const std::string& origin) {
    std::error_code ec;
    json::value parsed = json::parse(text, ec);
    if (ec) return make_file_error(origin, 0, "not a power cache (JSON: " + ec.message() + ")");
    try {
        const json::object& o = parsed.as_object();
        if (o.at("version").as_int64() != kPowerCacheVersion) {
            return make_file_error(origin, 0, "power cache version " + json::serialize(o.at("version")) +
                                                  ", expected " + std::to_string(kPowerCacheVersion));
        }
        if (boot_id.empty() || string_at(o, "boot_id") != boot_id) {
            return make_file_error(origin, 0, "written in another boot");
        }
        if (string_at(o, "sysfs_root") != key.sysfs_root) {
            return make_file_error(origin, 0, "read under " + string_at(o, "sysfs_root") + ", not " + key.sysfs_root);
        }
        const std::string set = string_at(o, "set");
        if (set != "all" && !(set == "task" && key.set == NodeFactSet::task)) {
            return make_file_error(origin, 0, "holds the '" + set + "' settings, not '" + set_name(key.set) + "'");
        }
        if (!o.at("known").as_bool()) return Fact<CpuPower>::unknown(string_at(o, "reason"));
        CpuPower power;
        power.intel_no_turbo = optional_bool(o, "intel_no_turbo");
        power.cpufreq_boost = optional_bool(o, "cpufreq_boost");
        for (const auto& group : o.at("groups").as_array()) add_group(power, group.as_object());
        return Fact<CpuPower>::known(std::move(power), string_at(o, "source") + ", cached in " + origin);
    } catch (const std::exception& e) {
        return make_file_error(origin, 0, std::string("damaged power cache: ") + e.what());
    }
}

std::string current_boot_id() {
    auto text = read_text_file("/proc/sys/kernel/random/boot_id");
    if (!text) return {};
    std::string id = *text;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id;
}

std::optional<Fact<CpuPower>> load_fresh_power_cache(const std::string& path, const PowerCacheKey& key,
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
    auto power = power_cache_from_json(*text, key, current_boot_id(), path);
    if (!power) return std::nullopt;
    return std::move(power).value();
}

Status save_power_cache(const std::string& path, const Fact<CpuPower>& power, const PowerCacheKey& key) {
    const std::string boot_id = current_boot_id();
    if (boot_id.empty()) return make_file_error(path, 0, "no boot id to key the power cache on");
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec) return make_file_error(path, 0, "cannot create the cache directory: " + ec.message());
    auto written = write_file_atomically(path, power_cache_to_json(power, key, boot_id), 0644);
    if (!written) return make_file_error(path, 0, "cannot write the power cache: " + written.error().message);
    return Done{};
}

}  // namespace launchguard
