#include "log.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>

#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>

#include <algorithm>

namespace launchguard::webhook {
namespace {

void append_json_string(std::string& out, std::string_view text) {
    out += boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

bool needs_quotes(std::string_view value) {
    if (value.empty()) return true;
    return std::any_of(value.begin(), value.end(),
                       [](char c) { return c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20; });
}

spdlog::level::level_enum to_level(std::string_view level) {
    if (level == "error") return spdlog::level::err;
    if (level == "warn") return spdlog::level::warn;
    return spdlog::level::info;
}

// spdlog writes the time (and in text the level); the payload is the rest.
std::unique_ptr<spdlog::formatter> make_formatter(LogFormat format) {
    if (format == LogFormat::json) {
        return std::make_unique<spdlog::pattern_formatter>(R"({"time":"%Y-%m-%dT%H:%M:%SZ",%v})",
                                                           spdlog::pattern_time_type::utc);
    }
    return std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %l %v", spdlog::pattern_time_type::local);
}

// What follows spdlog's prefix: the message and the fields in key order.
std::string payload(LogFormat format, std::string_view level, std::string_view message, LogFields fields) {
    std::vector<const LogField*> order;
    order.reserve(fields.size());
    for (const LogField& field : fields) order.push_back(&field);
    std::stable_sort(order.begin(), order.end(), [](const LogField* a, const LogField* b) { return a->key < b->key; });
    std::string out;
    if (format == LogFormat::json) {
        out += R"("level":)";
        append_json_string(out, level);
        out += R"(,"msg":)";
        append_json_string(out, message);
        for (const LogField* field : order) {
            out += ',';
            append_json_string(out, field->key);
            out += ':';
            append_json_string(out, field->value);
        }
        return out;
    }
    out += message;
    for (const LogField* field : order) {
        out += ' ';
        out += field->key;
        out += '=';
        if (needs_quotes(field->value))
            append_json_string(out, field->value);
        else
            out += field->value;
    }
    return out;
}

}  // namespace

LogRecord::LogRecord(std::initializer_list<std::pair<std::string_view, std::string>> fields) {
    fields_.reserve(16);
    for (const auto& [key, value] : fields) set(key, value);
}

void LogRecord::set(std::string_view key, std::string value) {
    for (auto& field : fields_) {
        if (field.first == key) {
            field.second = std::move(value);
            return;
        }
    }
    fields_.emplace_back(key, std::move(value));
}

const std::string* LogRecord::find(std::string_view key) const {
    for (const auto& field : fields_) {
        if (field.first == key) return &field.second;
    }
    return nullptr;
}

std::string format_log_line(LogFormat format, std::string_view level, std::string_view message, LogFields fields,
                            std::chrono::system_clock::time_point now) {
    const std::string text = payload(format, level, message, fields);
    spdlog::details::log_msg msg(spdlog::source_loc{}, "", to_level(level),
                                 spdlog::string_view_t(text.data(), text.size()));
    msg.time = std::chrono::time_point_cast<spdlog::log_clock::duration>(now);
    spdlog::memory_buf_t out;
    make_formatter(format)->format(msg, out);
    return std::string(out.data(), out.size());
}

Log::Log(LogFormat format, spdlog::sink_ptr sink)
    : format_(format), logger_(std::make_shared<spdlog::logger>("launchguard-webhook", std::move(sink))) {
    logger_->set_formatter(make_formatter(format));
    logger_->set_level(spdlog::level::info);
    logger_->flush_on(spdlog::level::info);
}

Log::~Log() { logger_->flush(); }

void Log::write(std::string_view level, std::string_view message, LogFields fields) {
    const std::string text = payload(format_, level, message, fields);
    logger_->log(to_level(level), spdlog::string_view_t(text.data(), text.size()));
}

void Log::flush() { logger_->flush(); }

}  // namespace launchguard::webhook
