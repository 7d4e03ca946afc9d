#include "kubernetes/json_patch.h"

#include <optional>
#include <vector>

#include <boost/json/error.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include "kubernetes/spec_fields.h"
#include "kubernetes/workload_spec.h"

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

inline constexpr std::string_view kShmPath = "/dev/shm";
inline constexpr std::string_view kShmVolumeStem = "launchguard-dshm";

// The last reference token of a JSON Pointer, unescaped (RFC 6901 4: "~1"
// then "~0"). Boost.JSON finds the parent (value::find_pointer); the last
// token names what add creates, which no lookup can find. False for a
// '~' that is not "~0" or "~1".
bool unescape_token(std::string_view raw, std::string& token) {
    token.clear();
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '~') {
            token += raw[i];
        } else if (i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
            token += raw[++i] == '0' ? '~' : '/';
        } else {
            return false;
        }
    }
    return true;
}

bool malformed_pointer(const boost::system::error_code& ec) {
    return ec == json::error::missing_slash || ec == json::error::invalid_escape;
}

Status apply_one(json::value& document, std::string_view op, std::string_view path, const json::value* value) {
    auto fail = [&](const std::string& why) {
        Error e = make_error(std::string(op) + " " + std::string(path) + ": " + why);
        e.field = "patch";
        return Status(e);
    };
    if (path.empty()) {
        if (op == "remove") return fail("cannot remove the whole document");
        if (value == nullptr) return fail("no value");
        document = *value;
        return Done{};
    }
    const std::size_t slash = path.rfind('/');
    std::string last;
    if (slash == std::string_view::npos || !unescape_token(path.substr(slash + 1), last)) {
        return fail("not a JSON Pointer");
    }
    boost::system::error_code ec;
    json::value* parent = slash == 0 ? &document : document.find_pointer(path.substr(0, slash), ec);
    if (parent == nullptr) return fail(malformed_pointer(ec) ? "not a JSON Pointer" : "the parent does not exist");
    if (parent->is_object()) {
        json::object& object = parent->get_object();
        bool exists = object.contains(last);
        if (op == "add") {
            object[last] = *value;
        } else if (op == "replace") {
            if (!exists) return fail("no member to replace");
            object[last] = *value;
        } else if (op == "remove") {
            if (!exists) return fail("no member to remove");
            object.erase(last);
        } else {
            return fail("unsupported operation");
        }
        return Done{};
    }
    if (parent->is_array()) {
        json::array& array = parent->get_array();
        auto index = json_pointer_index(last, array.size(), op == "add");
        if (!index) return fail("no such array element");
        if (op == "add") {
            array.insert(array.begin() + static_cast<std::ptrdiff_t>(*index), *value);
        } else if (op == "replace") {
            array[*index] = *value;
        } else if (op == "remove") {
            array.erase(array.begin() + static_cast<std::ptrdiff_t>(*index));
        } else {
            return fail("unsupported operation");
        }
        return Done{};
    }
    return fail("the parent is neither an object nor an array");
}

// A DNS-1123 label piece from a file name: "ndv5-topo.xml" -> "ndv5-topo-xml".
std::string label_piece(std::string_view text) {
    std::string out;
    for (char c : text) {
        char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        bool ok = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
        if (ok)
            out += lower;
        else if (!out.empty() && out.back() != '-')
            out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out.substr(0, 40);
}

std::string string_member(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    return value != nullptr && value->is_string() ? std::string(value->get_string()) : std::string();
}

}  // namespace

std::optional<std::size_t> json_pointer_index(const std::string& token, std::size_t size, bool allow_end) {
    if (token == "-") return allow_end ? std::optional<std::size_t>(size) : std::nullopt;
    if (token.empty() || (token.size() > 1 && token[0] == '0')) return std::nullopt;
    std::size_t index = 0;
    for (char c : token) {
        if (c < '0' || c > '9') return std::nullopt;
        index = index * 10 + static_cast<std::size_t>(c - '0');
        if (index > size + 1) return std::nullopt;
    }
    if (index > size || (!allow_end && index == size)) return std::nullopt;
    return index;
}

std::optional<std::vector<std::string>> json_pointer_tokens(std::string_view pointer) {
    std::vector<std::string> tokens;
    if (pointer.empty()) return tokens;
    if (pointer.front() != '/') return std::nullopt;
    for (std::size_t start = 1;;) {
        std::size_t slash = pointer.find('/', start);
        std::string token;
        if (!unescape_token(pointer.substr(start, slash == std::string_view::npos ? slash : slash - start), token)) {
            return std::nullopt;
        }
        tokens.push_back(std::move(token));
        if (slash == std::string_view::npos) return tokens;
        start = slash + 1;
    }
}

Result<json::value> apply_json_patch(json::value document, const json::array& patch) {
    for (std::size_t i = 0; i < patch.size(); ++i) {
        const json::value& entry = patch[i];
        std::string where = "patch[" + std::to_string(i) + "]";
        if (!entry.is_object()) return Error{"", 0, where, "expected an operation object"};
        const json::object& op = entry.get_object();
        const json::value* name = op.if_contains("op");
        const json::value* path = op.if_contains("path");
        if (name == nullptr || !name->is_string() || path == nullptr || !path->is_string()) {
            return Error{"", 0, where, "expected string members op and path"};
        }
        const json::value* value = op.if_contains("value");
        if (*name != "remove" && value == nullptr) return Error{"", 0, where, "missing value"};
        auto applied = apply_one(document, name->get_string(), path->get_string(), value);
        if (!applied) {
            Error e = applied.error();
            e.field = where;
            return e;
        }
    }
    return document;
}

std::string quantity_for_bytes(std::uint64_t bytes) {
    constexpr std::uint64_t kGi = 1ULL << 30, kMi = 1ULL << 20, kKi = 1ULL << 10;
    if (bytes != 0 && bytes % kGi == 0) return std::to_string(bytes / kGi) + "Gi";
    if (bytes != 0 && bytes % kMi == 0) return std::to_string(bytes / kMi) + "Mi";
    if (bytes != 0 && bytes % kKi == 0) return std::to_string(bytes / kKi) + "Ki";
    return std::to_string(bytes);
}

json::value* PodPatchBuilder::find(const std::string& pointer) {
    boost::system::error_code ec;
    return document_.find_pointer(pointer, ec);
}

void PodPatchBuilder::emit(std::string_view op, const std::string& path, const json::value* value) {
    json::object entry;
    entry["op"] = op;
    entry["path"] = path;
    if (value != nullptr) entry["value"] = *value;
    // The builder only emits operations computed from the working copy, so
    // they apply; keeping the copy in step makes the next one right too.
    (void)apply_one(document_, op, path, value);
    patch_.push_back(std::move(entry));
}

void PodPatchBuilder::insert(const std::string& parent, std::string_view key, json::value element,
                             std::string_view index) {
    std::string path = parent + "/" + escape_pointer_token(key);
    if (array_of(find(path)) != nullptr) {
        emit("add", path + "/" + std::string(index), &element);
    } else {
        json::value whole = json::array{std::move(element)};
        emit("add", path, &whole);
    }
}

void PodPatchBuilder::append(const std::string& parent, std::string_view key, json::value element) {
    insert(parent, key, std::move(element), "-");
}

const json::value* PodPatchBuilder::at(const std::string& pointer) { return find(pointer); }

void PodPatchBuilder::add(const std::string& path, json::value value) { emit("add", path, &value); }

void PodPatchBuilder::replace(const std::string& path, json::value value) { emit("replace", path, &value); }

void PodPatchBuilder::prepend(const std::string& parent, std::string_view key, json::value element) {
    insert(parent, key, std::move(element), "0");
}

std::string PodPatchBuilder::ensure_object(const std::string& parent, std::string_view key) {
    std::string path = parent + "/" + escape_pointer_token(key);
    if (object_of(find(path)) == nullptr) {
        json::value empty = json::object{};
        emit("add", path, &empty);
    }
    return path;
}

void PodPatchBuilder::set_env(const std::string& container, const std::string& name, const std::string& value) {
    json::value entry = json::object{{"name", name}, {"value", value}};
    if (json::array* env = array_of(find(container + "/env"))) {
        // The last entry of a name is the one the container gets.
        for (std::size_t i = env->size(); i-- > 0;) {
            json::object* item = object_of(&(*env)[i]);
            if (item == nullptr || string_member(*item, "name") != name) continue;
            std::string at = container + "/env/" + std::to_string(i);
            if (item->contains("valueFrom")) {
                emit("replace", at, &entry);
            } else if (const json::value* current = item->if_contains("value");
                       current == nullptr || !current->is_string() || current->get_string() != value) {
                json::value text = json::string(value);
                emit(current == nullptr ? "add" : "replace", at + "/value", &text);
            }
            return;
        }
    }
    append(container, "env", std::move(entry));
}

void PodPatchBuilder::unset_env(const std::string& container, const std::string& name) {
    json::array* env = array_of(find(container + "/env"));
    if (env == nullptr) return;
    for (std::size_t i = env->size(); i-- > 0;) {
        json::object* item = object_of(&(*env)[i]);
        if (item != nullptr && string_member(*item, "name") == name) {
            emit("remove", container + "/env/" + std::to_string(i), nullptr);
            env = array_of(find(container + "/env"));
            if (env == nullptr) return;
        }
    }
}

std::string PodPatchBuilder::volume_name_for(const std::string& pod, const std::string& stem) {
    std::string base = "launchguard-" + (stem.empty() ? std::string("volume") : stem);
    std::string name = base;
    json::array* volumes = array_of(find(pod + "/volumes"));
    for (int suffix = 2; volumes != nullptr; ++suffix) {
        bool taken = false;
        for (auto& volume : *volumes) {
            if (json::object* v = object_of(&volume); v != nullptr && string_member(*v, "name") == name) taken = true;
        }
        if (!taken) break;
        name = base + "-" + std::to_string(suffix);
    }
    return name;
}

void PodPatchBuilder::mount_host_file(const std::string& pod, const std::string& container,
                                      const std::string& host_path, const std::string& container_path) {
    // Reuse a volume that already brings this node file in.
    std::string volume_name;
    if (json::array* volumes = array_of(find(pod + "/volumes"))) {
        for (auto& volume : *volumes) {
            json::object* v = object_of(&volume);
            if (v == nullptr) continue;
            json::object* host = object_of(v->if_contains("hostPath"));
            if (host != nullptr && string_member(*host, "path") == host_path) volume_name = string_member(*v, "name");
        }
    }
    if (volume_name.empty()) {
        std::size_t slash = host_path.rfind('/');
        volume_name =
            volume_name_for(pod, label_piece(slash == std::string::npos ? host_path : host_path.substr(slash + 1)));
        append(pod, "volumes",
               json::object{{"name", volume_name}, {"hostPath", json::object{{"path", host_path}, {"type", "File"}}}});
    }
    if (json::array* mounts = array_of(find(container + "/volumeMounts"))) {
        for (auto& mount : *mounts) {
            json::object* m = object_of(&mount);
            if (m != nullptr && string_member(*m, "mountPath") == container_path) return;  // already mounted
        }
    }
    append(container, "volumeMounts",
           json::object{{"name", volume_name}, {"mountPath", container_path}, {"readOnly", true}});
}

void PodPatchBuilder::memory_shm(const std::string& pod, const std::string& container, std::uint64_t bytes) {
    json::value size = json::string(quantity_for_bytes(bytes));
    // A memory emptyDir already at /dev/shm only needs a larger sizeLimit.
    std::string mounted_volume;
    if (json::array* mounts = array_of(find(container + "/volumeMounts"))) {
        for (auto& mount : *mounts) {
            json::object* m = object_of(&mount);
            if (m != nullptr && string_member(*m, "mountPath") == kShmPath) mounted_volume = string_member(*m, "name");
        }
    }
    if (!mounted_volume.empty()) {
        json::array* volumes = array_of(find(pod + "/volumes"));
        for (std::size_t i = 0; volumes != nullptr && i < volumes->size(); ++i) {
            json::object* v = object_of(&(*volumes)[i]);
            if (v == nullptr || string_member(*v, "name") != mounted_volume) continue;
            if (object_of(v->if_contains("emptyDir")) == nullptr) return;  // not one launchguard can resize
            std::string dir = pod + "/volumes/" + std::to_string(i) + "/emptyDir";
            json::value medium = json::string("Memory");
            json::object* empty_dir = object_of(find(dir));
            if (string_member(*empty_dir, "medium") != "Memory") {
                emit(empty_dir->contains("medium") ? "replace" : "add", dir + "/medium", &medium);
            }
            empty_dir = object_of(find(dir));
            emit(empty_dir->contains("sizeLimit") ? "replace" : "add", dir + "/sizeLimit", &size);
            return;
        }
        return;
    }
    // Another container of the pod may already have been given one.
    std::string volume_name;
    if (json::array* volumes = array_of(find(pod + "/volumes"))) {
        for (auto& volume : *volumes) {
            json::object* v = object_of(&volume);
            json::object* empty_dir = v != nullptr ? object_of(v->if_contains("emptyDir")) : nullptr;
            if (empty_dir != nullptr && string_member(*v, "name").starts_with(kShmVolumeStem) &&
                string_member(*empty_dir, "medium") == "Memory" &&
                string_member(*empty_dir, "sizeLimit") == size.get_string()) {
                volume_name = string_member(*v, "name");
            }
        }
    }
    if (volume_name.empty()) {
        volume_name = volume_name_for(pod, "dshm");
        append(
            pod, "volumes",
            json::object{{"name", volume_name}, {"emptyDir", json::object{{"medium", "Memory"}, {"sizeLimit", size}}}});
    }
    append(container, "volumeMounts", json::object{{"name", volume_name}, {"mountPath", kShmPath}});
}

void PodPatchBuilder::add_capability(const std::string& container, const std::string& capability) {
    std::string name = capability.starts_with("CAP_") ? capability.substr(4) : capability;
    std::string security = ensure_object(container, "securityContext");
    std::string capabilities = ensure_object(security, "capabilities");
    if (json::array* added = array_of(find(capabilities + "/add"))) {
        for (auto& item : *added) {
            if (item.is_string() && (item.get_string() == name || item.get_string() == "CAP_" + name)) return;
        }
    }
    append(capabilities, "add", json::string(name));
}

}  // namespace launchguard::kubernetes
