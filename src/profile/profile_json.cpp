// The compiled form of a profile: the same schema as the YAML (keys, types,
// ranges: profile_schema.h), in JSON, so that a reader needs no YAML library.
// The Slurm task checks read profiles this way (docs/performance.md).
#include <boost/json.hpp>

#include <cmath>
#include <limits>

#include "profile/profile.h"
#include "profile/profile_schema.h"

namespace launchguard {
namespace {

namespace json = boost::json;
using profile_schema::SchemaError;

// profile_schema.h's view of a Boost.JSON value. JSON has no lines: errors
// name the field only. A key is a node of its own, a string scalar.
class JsonNode {
public:
    JsonNode() = default;
    explicit JsonNode(const json::value* value) : value_(value) {}
    explicit JsonNode(std::string key) : key_(std::move(key)), is_key_(true) {}

    explicit operator bool() const { return is_key_ || value_ != nullptr; }
    [[nodiscard]] bool is_null() const { return value_ != nullptr && value_->is_null(); }
    [[nodiscard]] bool is_scalar() const {
        return is_key_ || (value_ != nullptr && value_->is_primitive() && !value_->is_null());
    }
    [[nodiscard]] bool is_map() const { return value_ != nullptr && value_->is_object(); }
    [[nodiscard]] bool is_sequence() const { return value_ != nullptr && value_->is_array(); }
    [[nodiscard]] static int line() { return 0; }

    // The text YAML would have given the same scalar.
    [[nodiscard]] std::string scalar() const {
        if (is_key_) return key_;
        if (value_ == nullptr) return {};
        switch (value_->kind()) {
            case json::kind::string:
                return std::string(value_->get_string());
            case json::kind::bool_:
                return value_->get_bool() ? "true" : "false";
            case json::kind::int64:
                return std::to_string(value_->get_int64());
            case json::kind::uint64:
                return std::to_string(value_->get_uint64());
            case json::kind::double_:
                return json::serialize(*value_);
            default:
                return {};
        }
    }

    [[nodiscard]] std::size_t size() const { return is_sequence() ? value_->get_array().size() : 0; }
    [[nodiscard]] JsonNode item(std::size_t i) const { return JsonNode(&value_->get_array().at(i)); }
    [[nodiscard]] std::vector<std::pair<JsonNode, JsonNode>> entries() const {
        std::vector<std::pair<JsonNode, JsonNode>> out;
        if (!is_map()) return out;
        for (const auto& member : value_->get_object()) {
            out.emplace_back(JsonNode(std::string(member.key())), JsonNode(&member.value()));
        }
        return out;
    }

private:
    const json::value* value_ = nullptr;
    std::string key_;
    bool is_key_ = false;
};

// Whole numbers as integers ("min_link_gbps": 800, not 8E2), so the file reads
// as the YAML it came from.
json::value number_value(double v) {
    if (std::trunc(v) == v && std::fabs(v) < 1e15) return static_cast<std::int64_t>(v);
    return v;
}

json::object node_json(const Profile::Node& node) {
    json::object o;
    if (node.arch) o["arch"] = *node.arch;
    o["virtual_machine"] = node.virtual_machine;
    o["grace"] = node.grace;
    o["mnnvl"] = node.mnnvl;
    o["nvswitch"] = node.nvswitch;
    if (node.gpus) o["gpus"] = *node.gpus;
    if (node.rdma_nics) o["rdma_nics"] = *node.rdma_nics;
    if (node.active_ib_ports) o["active_ib_ports"] = *node.active_ib_ports;
    if (node.ib_rate_gbps) o["ib_rate_gbps"] = number_value(*node.ib_rate_gbps);
    if (node.page_size) o["page_size"] = *node.page_size;
    if (!node.hcas.empty()) {
        json::array hcas;
        for (const auto& hca : node.hcas) hcas.emplace_back(hca);
        o["hcas"] = std::move(hcas);
    }
    o["gpudirect_rdma"] = node.gpudirect_rdma;
    if (node.cpu_manager_policy) o["cpu_manager_policy"] = *node.cpu_manager_policy;
    if (node.runtime_memlock) {
        if (*node.runtime_memlock) {
            o["runtime_memlock"] = **node.runtime_memlock;
        } else {
            o["runtime_memlock"] = "unlimited";
        }
    }
    return o;
}

json::object nccl_json(const Profile::Nccl& nccl) {
    json::object o;
    if (nccl.net) o["net"] = *nccl.net;
    if (nccl.net_plugin) o["net_plugin"] = *nccl.net_plugin;
    if (nccl.ib_hca) o["ib_hca"] = *nccl.ib_hca;
    return o;
}

json::value parameter_json(const ParameterValue& value) {
    return std::visit(
        [](const auto& v) -> json::value {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) {
                return number_value(v);
            } else {
                return json::value(v);
            }
        },
        value);
}

// Each parameter under its section, a group's fields under the group:
// "nccl.qps_per_connection.min" -> {"nccl": {"qps_per_connection": {"min": ...}}}.
void add_parameters(json::object& root, const ParameterValues& parameters) {
    for (const auto& [key, value] : parameters) {
        json::object* object = &root;
        std::string_view rest = key;
        for (auto dot = rest.find('.'); dot != std::string_view::npos; dot = rest.find('.')) {
            json::value& child = (*object)[rest.substr(0, dot)];
            if (!child.is_object()) child = json::object();
            object = &child.get_object();
            rest.remove_prefix(dot + 1);
        }
        (*object)[rest] = parameter_json(value);
    }
}

}  // namespace

std::string profile_to_json(const Profile& profile) {
    json::object o;
    o["name"] = profile.name;
    if (!profile.description.empty()) o["description"] = profile.description;
    o["node"] = node_json(profile.node);
    json::object topology{{"required", profile.topology.required}};
    if (!profile.topology.host_path.empty()) topology["host_path"] = profile.topology.host_path;
    if (!profile.topology.container_path.empty()) topology["container_path"] = profile.topology.container_path;
    o["topology"] = std::move(topology);
    o["nccl"] = nccl_json(profile.nccl);
    add_parameters(o, profile.parameters);
    if (!profile.actions.empty()) {
        json::object rules;
        for (const auto& [id, action] : profile.actions) rules[id] = to_string(action);
        o["rules"] = std::move(rules);
    }
    return json::serialize(o) + "\n";
}

Result<Profile> parse_profile_json_with(std::string_view text, std::string origin, const ProfileRules& rules) {
    json::error_code ec;
    json::value root = json::parse(text, ec);
    if (ec) return make_file_error(origin, 0, "invalid JSON: " + ec.message());
    if (root.is_null()) return make_file_error(origin, 0, "profile is empty");
    try {
        Profile profile = profile_schema::read_profile(JsonNode(&root), rules);
        profile.origin = std::move(origin);
        return profile;
    } catch (const SchemaError& e) {
        return e.in(origin);
    } catch (const std::exception& e) {
        return make_file_error(origin, 0, std::string("cannot read profile: ") + e.what());
    }
}

}  // namespace launchguard
