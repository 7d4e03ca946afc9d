// Errors are values at module boundaries: every parser and probe returns a
// Result<T> whose error names where the bad input was (file, line, field) and
// why, in words a cluster operator can act on.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace launchguard {

struct Error {
    std::string file;     // path of the offending input, empty when not file-based
    int line = 0;         // 1-based; 0 when unknown or not applicable
    std::string field;    // key, flag or attribute name, when one is at fault
    std::string message;  // what is wrong, in one sentence

    // "file:line: field: message" with the empty parts left out.
    [[nodiscard]] std::string to_string() const;
};

Error make_error(std::string message);
Error make_file_error(std::string file, int line, std::string message);

// A value or an Error. Deliberately small: no monadic chaining, just the two
// states and accessors that assert which one is held.
template <typename T>
class Result {
public:
    Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
    Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    [[nodiscard]] bool ok() const { return std::holds_alternative<T>(state_); }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<T>(state_); }
    const T& value() const& { return std::get<T>(state_); }
    T&& value() && { return std::get<T>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    [[nodiscard]] const Error& error() const { return std::get<Error>(state_); }

private:
    std::variant<T, Error> state_;
};

// For operations that yield nothing but may fail.
struct Done {};
using Status = Result<Done>;

}  // namespace launchguard
