// A fact about a launch that may be unknown. Rules must not guess: when a fact
// they need is unknown they report "unknown, because <reason>".
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace launchguard {

template <typename T>
class Fact {
public:
    Fact() : reason_("not probed") {}

    static Fact known(T value, std::string source = {}) {
        Fact f;
        f.value_ = std::move(value);
        f.reason_.clear();
        f.source_ = std::move(source);
        return f;
    }
    static Fact unknown(std::string reason) {
        Fact f;
        f.reason_ = std::move(reason);
        return f;
    }

    [[nodiscard]] bool is_known() const { return value_.has_value(); }
    explicit operator bool() const { return is_known(); }
    [[nodiscard]] const T& value() const { return *value_; }
    T& value() { return *value_; }
    const T* operator->() const { return &*value_; }
    const T& operator*() const { return *value_; }
    // Why the fact is unknown ("no hwloc XML and live discovery failed: ...").
    [[nodiscard]] const std::string& reason() const { return reason_; }
    // Where a known fact came from ("/proc/1234/environ", "hwloc XML dgx2.xml").
    [[nodiscard]] const std::string& source() const { return source_; }

private:
    std::optional<T> value_;
    std::string reason_;
    std::string source_;
};

}  // namespace launchguard
