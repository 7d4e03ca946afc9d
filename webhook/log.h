// launchguard-webhook's log, through spdlog: one line per admission and per
// event, as key=value text or one JSON object per line (what log
// collectors parse), fields in key order.
//
//   text: 2026-11-30T14:09:19.260 info admission decision=allow uid=...
//   json: {"time":"2026-11-30T14:09:19Z","level":"info","msg":"admission","decision":"allow",...}
//
// spdlog writes the time stamp (local time for text, UTC for JSON) and,
// in text, the level; every JSON string and every quoted text value is
// escaped by Boost.JSON's serializer. The server logs to stderr through
// spdlog's stderr sink, which writes each line out at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/common.h>

namespace spdlog {
class logger;
}

namespace launchguard::webhook {

struct LogField {
    std::string_view key;
    std::string_view value;
};

// The fields of one line, borrowed for the call: a braced list or an array.
// Only ever a parameter: a braced list's array lives until the call returns.
class LogFields {
public:
    LogFields() = default;
    LogFields(std::initializer_list<LogField> fields) {
        data_ = std::data(fields);
        size_ = fields.size();
    }
    LogFields(const LogField* data, std::size_t size) : data_(data), size_(size) {}
    [[nodiscard]] const LogField* begin() const { return data_; }
    [[nodiscard]] const LogField* end() const { return data_ + size_; }
    [[nodiscard]] std::size_t size() const { return size_; }

private:
    const LogField* data_ = nullptr;
    std::size_t size_ = 0;
};

// What one admission logs besides the server's own fields. Keys are string
// literals (they are kept as views); setting a key again replaces its value.
class LogRecord {
public:
    LogRecord() = default;
    LogRecord(std::initializer_list<std::pair<std::string_view, std::string>> fields);
    void set(std::string_view key, std::string value);
    [[nodiscard]] const std::string* find(std::string_view key) const;
    [[nodiscard]] const std::vector<std::pair<std::string_view, std::string>>& fields() const { return fields_; }

private:
    std::vector<std::pair<std::string_view, std::string>> fields_;
};

enum class LogFormat { text, json };

// One line as Log writes it, '\n' included, at `now`. level: "info", "warn"
// or "error" (text says "warning", spdlog's word). A text value is quoted
// (JSON string syntax) when it is empty or holds a space, a quote, '=' or
// a control character.
std::string format_log_line(LogFormat format, std::string_view level, std::string_view message, LogFields fields,
                            std::chrono::system_clock::time_point now);

// Thread-safe. `sink`: where the lines go (the server: spdlog's stderr
// sink; the tests: a stream).
class Log {
public:
    Log(LogFormat format, spdlog::sink_ptr sink);
    ~Log();
    Log(const Log&) = delete;
    Log& operator=(const Log&) = delete;

    void write(std::string_view level, std::string_view message, LogFields fields);
    void flush();

private:
    LogFormat format_;
    std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace launchguard::webhook
