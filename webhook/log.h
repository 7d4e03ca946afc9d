// launchguard-webhook's log: one line per admission and per event, as
// key=value text or one JSON object per line, in key order.
//
// Lines go through a buffer, not one write(2) each: at 20,000 admissions a
// second the per-line write and the JSON tree built for it were ~6 % of the
// server's CPU (docs/performance.md). Nothing is dropped: the buffer is
// written out when it fills, every flush interval, at once for a warning or
// an error, and when the log is destroyed (after the drain at SIGTERM). A
// crash loses at most one flush interval of lines.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

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

// Appends one line, '\n' included. level: "info", "warn" or "error".
// text: "2026-11-30T14:09:19.260 info MESSAGE key=value ..." in local time,
// a value quoted (JSON string syntax) when it is empty or holds a space, a
// quote, '=' or a control character. json: {"time":"...Z","level":...,
// "msg":..., then the fields}. Fields are written in key order.
void format_log_line(std::string& out, LogFormat format, std::string_view level, std::string_view message,
                     LogFields fields, std::chrono::system_clock::time_point now);

// Thread-safe buffered lines to a file descriptor (stderr in the server).
class BufferedLog {
public:
    BufferedLog(int fd, LogFormat format, std::chrono::milliseconds flush_interval = std::chrono::milliseconds(200),
                std::size_t flush_bytes = 64 * 1024);
    ~BufferedLog();  // writes out what is left
    BufferedLog(const BufferedLog&) = delete;
    BufferedLog& operator=(const BufferedLog&) = delete;

    void write(std::string_view level, std::string_view message, LogFields fields);
    // Writes out every line written so far.
    void flush();

private:
    void flush_every_interval();

    int fd_;
    LogFormat format_;
    std::chrono::milliseconds flush_interval_;
    std::size_t flush_bytes_;
    std::mutex buffer_mutex_;  // buffer_
    std::string buffer_;
    std::mutex write_mutex_;  // the order of writes, spare_
    std::string spare_;
    std::mutex stop_mutex_;
    std::condition_variable stop_changed_;
    bool stopping_ = false;
    std::thread flusher_;
};

}  // namespace launchguard::webhook
