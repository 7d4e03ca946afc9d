#include "task_service_protocol.h"

#include <charconv>
#include <cstdio>
#include <utility>

namespace launchguard::slurm {
namespace {

constexpr std::string_view kRequestHeader = "launchguard-task/1";
constexpr std::string_view kAnswerHeader = "launchguard-answer/1";

// A NUL inside a value would end it early on the other side; none can come
// from Slurm's C strings, and one that did is cut there.
void append_field(std::string& bytes, std::string_view text) {
    bytes.append(text.substr(0, text.find('\0')));
    bytes.push_back('\0');
}
void append_record(std::string& bytes, std::string_view key, std::string_view value) {
    append_field(bytes, key);
    append_field(bytes, value);
}

Error protocol_error(std::string_view what, std::string message) {
    Error e = make_error(std::move(message));
    e.field = std::string(what);
    return e;
}

// Splits the NUL-ended fields after the header into key/value pairs, up to
// the "end" record, which must be the last thing in the message.
Result<std::vector<std::pair<std::string_view, std::string_view>>> split_records(std::string_view bytes,
                                                                                 std::string_view header,
                                                                                 std::string_view what) {
    std::vector<std::string_view> fields;
    while (!bytes.empty()) {
        const std::size_t end = bytes.find('\0');
        if (end == std::string_view::npos) return protocol_error(what, "the last field is not ended by a NUL byte");
        fields.push_back(bytes.substr(0, end));
        bytes.remove_prefix(end + 1);
    }
    if (fields.empty() || fields.front() != header)
        return protocol_error(what, "does not start with \"" + std::string(header) + "\"");
    if (fields.size() % 2 != 1) return protocol_error(what, "a key has no value");
    std::vector<std::pair<std::string_view, std::string_view>> records;
    for (std::size_t i = 1; i + 1 < fields.size(); i += 2) records.emplace_back(fields[i], fields[i + 1]);
    if (records.empty() || records.back().first != "end")
        return protocol_error(what, "has no \"end\" record: the message was cut short");
    records.pop_back();
    for (const auto& record : records) {
        if (record.first == "end") return protocol_error(what, "has data after its \"end\" record");
    }
    return records;
}

std::optional<Error> check_entry(std::string_view key, std::string_view entry) {
    const std::size_t equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0)
        return protocol_error(key, "\"" + std::string(entry.substr(0, 64)) + "\" is not NAME=VALUE");
    return std::nullopt;
}

void add_checked_entry(Environment& env, std::string_view entry) {
    const std::size_t equals = entry.find('=');
    env.insert_or_assign(std::string(entry.substr(0, equals)), std::string(entry.substr(equals + 1)));
}

std::optional<Error> add_entry(Environment& env, std::string_view key, std::string_view entry) {
    if (auto error = check_entry(key, entry)) return error;
    add_checked_entry(env, entry);
    return std::nullopt;
}

std::optional<Error> add_entry(PackedEnvironment& env, std::string_view key, std::string_view entry) {
    if (auto error = check_entry(key, entry)) return error;
    env.add(entry);
    return std::nullopt;
}

std::optional<Error> read_number(std::optional<std::uint32_t>& out, std::string_view key, std::string_view text) {
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        return protocol_error(key, "\"" + std::string(text.substr(0, 32)) + "\" is not a number");
    out = value;
    return std::nullopt;
}

std::optional<Error> read_namespace(std::optional<MountNamespace>& out, std::string_view key, std::string_view text) {
    const std::size_t colon = text.find(':');
    std::uint64_t parts[2] = {0, 0};
    const std::string_view pieces[2] = {text.substr(0, colon),
                                        colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1)};
    for (int i = 0; i < 2; ++i) {
        const auto [end, ec] = std::from_chars(pieces[i].data(), pieces[i].data() + pieces[i].size(), parts[i]);
        if (ec != std::errc() || end != pieces[i].data() + pieces[i].size() || pieces[i].empty())
            return protocol_error(key, "\"" + std::string(text.substr(0, 48)) + "\" is not DEVICE:INODE");
    }
    out = MountNamespace{parts[0], parts[1]};
    return std::nullopt;
}

}  // namespace

PackedEnvironment::PackedEnvironment(const Environment& env) {
    for (const auto& [name, value] : env) add(name + "=" + value);
}

void PackedEnvironment::add(std::string_view entry) {
    entries_.append(entry.substr(0, entry.find('\0')));
    entries_.push_back('\0');
}

Environment PackedEnvironment::unpack() const {
    Environment env;
    for_each_entry([&](std::string_view entry) {
        if (!check_entry("host-env", entry)) add_checked_entry(env, entry);
    });
    return env;
}

TaskRequestWriter::TaskRequestWriter(std::size_t expected_bytes) {
    bytes_.reserve(expected_bytes + 256);
    field(kRequestHeader);
}

void TaskRequestWriter::field(std::string_view text) { append_field(bytes_, text); }
void TaskRequestWriter::record(std::string_view key, std::string_view value) { append_record(bytes_, key, value); }
void TaskRequestWriter::mode(Mode mode) { record("mode", to_string(mode)); }

void TaskRequestWriter::forked_namespace(const MountNamespace& ns) {
    char text[48];
    const int n = std::snprintf(text, sizeof text, "%llu:%llu", static_cast<unsigned long long>(ns.dev),
                                static_cast<unsigned long long>(ns.ino));
    record("forked-ns", std::string_view(text, n > 0 ? static_cast<std::size_t>(n) : 0));
}

void TaskRequestWriter::number(std::string_view key, std::uint32_t value) {
    char text[16];
    const int n = std::snprintf(text, sizeof text, "%u", value);
    record(key, std::string_view(text, n > 0 ? static_cast<std::size_t>(n) : 0));
}

std::string TaskRequestWriter::finish() && {
    record("end", "");
    return std::move(bytes_);
}

bool MessageEnd::reached(std::string_view received) noexcept {
    while (!reached_ && scanned_ < received.size()) {
        const std::size_t nul = received.find('\0', scanned_);
        if (nul == std::string_view::npos) {
            scanned_ = received.size();
            break;
        }
        const std::string_view field = received.substr(field_start_, nul - field_start_);
        // Fields alternate key, value after the header: the odd ones are keys.
        if (fields_ % 2 == 1) {
            end_key_ = field == "end";
        } else if (fields_ > 0 && end_key_) {
            reached_ = true;
        }
        ++fields_;
        scanned_ = field_start_ = nul + 1;
    }
    return reached_;
}

std::string encode_task_request(const TaskRequest& request) {
    TaskRequestWriter writer;
    for (const auto& arg : request.plugin_args) writer.plugin_arg(arg);
    writer.mode(request.mode);
    for (const auto& [name, value] : request.env) writer.env_entry(name + "=" + value);
    if (request.host_env) {
        writer.host_env_kept();
        request.host_env->for_each_entry([&](std::string_view entry) { writer.host_env_entry(entry); });
    }
    if (request.forked_namespace) writer.forked_namespace(*request.forked_namespace);
    if (request.job_id) writer.number("job", *request.job_id);
    if (request.step_id) writer.number("step", *request.step_id);
    if (request.job_nodes) writer.number("nodes", *request.job_nodes);
    writer.first_task(request.first_task);
    return std::move(writer).finish();
}

Result<TaskRequest> decode_task_request(std::string_view bytes) {
    if (bytes.size() > kMaxTaskRequestBytes) return protocol_error("request", "is larger than the service reads");
    auto records = split_records(bytes, kRequestHeader, "request");
    if (!records) return records.error();
    TaskRequest request;
    bool have_mode = false;
    for (const auto& [key, value] : *records) {
        std::optional<Error> error;
        if (key == "arg") {
            request.plugin_args.emplace_back(value);
        } else if (key == "mode") {
            const auto mode = parse_mode(value);
            if (!mode) return protocol_error(key, "\"" + std::string(value.substr(0, 32)) + "\" is not a mode");
            request.mode = *mode;
            have_mode = true;
        } else if (key == "env") {
            error = add_entry(request.env, key, value);
        } else if (key == "host-env-kept") {
            if (!request.host_env) request.host_env.emplace();
        } else if (key == "host-env") {
            if (!request.host_env) request.host_env.emplace();
            error = add_entry(*request.host_env, key, value);
        } else if (key == "forked-ns") {
            error = read_namespace(request.forked_namespace, key, value);
        } else if (key == "job") {
            error = read_number(request.job_id, key, value);
        } else if (key == "step") {
            error = read_number(request.step_id, key, value);
        } else if (key == "nodes") {
            error = read_number(request.job_nodes, key, value);
        } else if (key == "first-task") {
            if (value != "0" && value != "1") return protocol_error(key, "is neither 0 nor 1");
            request.first_task = value == "1";
        } else {
            return protocol_error(key, "is not a field of a task request");
        }
        if (error) return *error;
    }
    if (!have_mode) return protocol_error("mode", "is missing from the request");
    return request;
}

std::string encode_task_answer(const TaskAnswer& answer) {
    std::string bytes;
    append_field(bytes, kAnswerHeader);
    append_record(bytes, "decision", answer.block ? "block" : "allow");
    for (const auto& line : answer.log_info) append_record(bytes, "log", line);
    for (const auto& line : answer.log_error) append_record(bytes, "error", line);
    for (const auto& line : answer.tell_user) append_record(bytes, "tell", line);
    for (const auto& change : answer.env_patch) {
        if (change.value)
            append_record(bytes, "setenv", change.name + "=" + *change.value);
        else
            append_record(bytes, "unsetenv", change.name);
    }
    append_record(bytes, "end", "");
    return bytes;
}

Result<TaskAnswer> decode_task_answer(std::string_view bytes) {
    if (bytes.size() > kMaxTaskAnswerBytes) return protocol_error("answer", "is larger than a task reads");
    auto records = split_records(bytes, kAnswerHeader, "answer");
    if (!records) return records.error();
    TaskAnswer answer;
    bool have_decision = false;
    for (const auto& [key, value] : *records) {
        if (key == "decision") {
            if (value != "allow" && value != "block") return protocol_error(key, "is neither allow nor block");
            answer.block = value == "block";
            have_decision = true;
        } else if (key == "log") {
            answer.log_info.emplace_back(value);
        } else if (key == "error") {
            answer.log_error.emplace_back(value);
        } else if (key == "tell") {
            answer.tell_user.emplace_back(value);
        } else if (key == "setenv") {
            const std::size_t equals = value.find('=');
            if (equals == std::string_view::npos || equals == 0) return protocol_error(key, "is not NAME=VALUE");
            answer.env_patch.push_back({std::string(value.substr(0, equals)), std::string(value.substr(equals + 1))});
        } else if (key == "unsetenv") {
            if (value.empty()) return protocol_error(key, "names no variable");
            answer.env_patch.push_back({std::string(value), std::nullopt});
        } else {
            return protocol_error(key, "is not a field of a task answer");
        }
    }
    if (!have_decision) return protocol_error("decision", "is missing from the answer");
    return answer;
}

}  // namespace launchguard::slurm
