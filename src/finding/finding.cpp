#include "finding/finding.h"

namespace launchguard {

std::string_view to_string(Action action) {
    switch (action) {
        case Action::block:
            return "block";
        case Action::patch:
            return "patch";
        case Action::warn:
            return "warn";
        case Action::off:
            return "off";
    }
    return "warn";
}

std::optional<Action> parse_action(std::string_view text) {
    if (text == "block") return Action::block;
    if (text == "patch") return Action::patch;
    if (text == "warn") return Action::warn;
    if (text == "off") return Action::off;
    return std::nullopt;
}

std::string_view to_string(Severity severity) {
    switch (severity) {
        case Severity::error:
            return "error";
        case Severity::warning:
            return "warning";
        case Severity::info:
            return "info";
    }
    return "warning";
}

std::string_view to_string(RemediationOp::Kind kind) {
    switch (kind) {
        case RemediationOp::Kind::set_env:
            return "set-env";
        case RemediationOp::Kind::unset_env:
            return "unset-env";
        case RemediationOp::Kind::mount_file:
            return "mount-file";
        case RemediationOp::Kind::shm_size:
            return "shm-size";
        case RemediationOp::Kind::add_capability:
            return "add-capability";
        case RemediationOp::Kind::manual:
            return "manual";
    }
    return "manual";
}

RemediationOp RemediationOp::set_env(std::string name, std::string value) {
    RemediationOp op;
    op.kind = Kind::set_env;
    op.name = std::move(name);
    op.value = std::move(value);
    return op;
}

RemediationOp RemediationOp::unset_env(std::string name) {
    RemediationOp op;
    op.kind = Kind::unset_env;
    op.name = std::move(name);
    return op;
}

RemediationOp RemediationOp::mount_file(std::string host, std::string container) {
    RemediationOp op;
    op.kind = Kind::mount_file;
    op.host_path = std::move(host);
    op.container_path = std::move(container);
    return op;
}

RemediationOp RemediationOp::shm(std::uint64_t bytes) {
    RemediationOp op;
    op.kind = Kind::shm_size;
    op.bytes = bytes;
    return op;
}

RemediationOp RemediationOp::capability(std::string cap) {
    RemediationOp op;
    op.kind = Kind::add_capability;
    op.name = std::move(cap);
    return op;
}

RemediationOp RemediationOp::manual_step(std::string text) {
    RemediationOp op;
    op.kind = Kind::manual;
    op.text = std::move(text);
    return op;
}

}  // namespace launchguard
