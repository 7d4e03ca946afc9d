#include "log.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <ctime>

namespace launchguard::webhook {
namespace {

// As boost::json::serialize writes a string: quotes, backslashes and
// control characters escaped, other bytes as they are.
void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    std::size_t plain = 0;  // start of the run not yet copied
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        out.append(text.data() + plain, i - plain);
        plain = i + 1;
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                out += "\\u00";
                out += kHex[c >> 4];
                out += kHex[c & 0xF];
        }
    }
    out.append(text.data() + plain, text.size() - plain);
    out += '"';
}

bool needs_quotes(std::string_view value) {
    if (value.empty()) return true;
    return std::any_of(value.begin(), value.end(),
                       [](char c) { return c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20; });
}

// The time stamp, formatted once per second and thread.
void append_time(std::string& out, LogFormat format, std::chrono::system_clock::time_point now) {
    struct Cached {
        std::time_t second = -1;
        LogFormat format = LogFormat::text;
        std::array<char, 32> text{};
        std::size_t size = 0;
    };
    thread_local Cached cached;
    const auto since_epoch = now.time_since_epoch();
    const std::time_t second = static_cast<std::time_t>(std::chrono::floor<std::chrono::seconds>(since_epoch).count());
    if (second != cached.second || format != cached.format) {
        std::tm parts{};
        if (format == LogFormat::json)
            gmtime_r(&second, &parts);
        else
            localtime_r(&second, &parts);
        cached.size = std::strftime(cached.text.data(), cached.text.size(),
                                    format == LogFormat::json ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%dT%H:%M:%S", &parts);
        cached.second = second;
        cached.format = format;
    }
    out.append(cached.text.data(), cached.size);
    if (format == LogFormat::text) {
        const auto millis = std::chrono::floor<std::chrono::milliseconds>(since_epoch).count() % 1000;
        char digits[8];
        std::snprintf(digits, sizeof digits, ".%03d", static_cast<int>(millis));
        out.append(digits, 4);
    }
}

void write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return;  // stderr gone: nowhere left to say so
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
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

void format_log_line(std::string& out, LogFormat format, std::string_view level, std::string_view message,
                     LogFields fields, std::chrono::system_clock::time_point now) {
    // Sorted by key without an allocation for the usual dozen fields.
    std::array<const LogField*, 32> inline_order;
    std::vector<const LogField*> large_order;
    const LogField** order = inline_order.data();
    if (fields.size() > inline_order.size()) {
        large_order.resize(fields.size());
        order = large_order.data();
    }
    std::size_t n = 0;
    for (const LogField& field : fields) order[n++] = &field;
    // Insertion sort: a dozen fields, mostly in order already.
    for (std::size_t i = 1; i < n; ++i) {
        const LogField* field = order[i];
        std::size_t j = i;
        for (; j > 0 && field->key < order[j - 1]->key; --j) order[j] = order[j - 1];
        order[j] = field;
    }

    if (format == LogFormat::json) {
        out += R"({"time":")";
        append_time(out, format, now);
        out += R"(","level":)";
        append_json_string(out, level);
        out += R"(,"msg":)";
        append_json_string(out, message);
        for (std::size_t i = 0; i < n; ++i) {
            out += ',';
            append_json_string(out, order[i]->key);
            out += ':';
            append_json_string(out, order[i]->value);
        }
        out += "}\n";
        return;
    }
    append_time(out, format, now);
    out += ' ';
    out += level == "warn" ? std::string_view("warning") : level;  // the words spdlog used
    out += ' ';
    out += message;
    for (std::size_t i = 0; i < n; ++i) {
        out += ' ';
        out += order[i]->key;
        out += '=';
        if (needs_quotes(order[i]->value))
            append_json_string(out, order[i]->value);
        else
            out += order[i]->value;
    }
    out += '\n';
}

BufferedLog::BufferedLog(int fd, LogFormat format, std::chrono::milliseconds flush_interval, std::size_t flush_bytes)
    : fd_(fd), format_(format), flush_interval_(flush_interval), flush_bytes_(flush_bytes) {
    buffer_.reserve(flush_bytes_ + 4096);
    spare_.reserve(flush_bytes_ + 4096);
    flusher_ = std::thread([this] { flush_every_interval(); });
}

BufferedLog::~BufferedLog() {
    {
        std::lock_guard lock(stop_mutex_);
        stopping_ = true;
    }
    stop_changed_.notify_all();
    flusher_.join();
    flush();
}

void BufferedLog::write(std::string_view level, std::string_view message, LogFields fields) {
    const auto now = std::chrono::system_clock::now();
    bool full = false;
    {
        std::lock_guard lock(buffer_mutex_);
        format_log_line(buffer_, format_, level, message, fields, now);
        full = buffer_.size() >= flush_bytes_;
    }
    if (full || level != "info") flush();
}

void BufferedLog::flush() {
    std::lock_guard writing(write_mutex_);
    {
        std::lock_guard lock(buffer_mutex_);
        buffer_.swap(spare_);
    }
    write_all(fd_, spare_);
    spare_.clear();
}

void BufferedLog::flush_every_interval() {
    std::unique_lock lock(stop_mutex_);
    while (!stopping_) {
        stop_changed_.wait_for(lock, flush_interval_, [this] { return stopping_; });
        lock.unlock();
        flush();
        lock.lock();
    }
}

}  // namespace launchguard::webhook
