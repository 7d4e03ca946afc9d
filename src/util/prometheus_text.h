// Prometheus text exposition format (version 0.0.4), written once for every
// producer: the webhook's GET /metrics and node-check's file for
// node_exporter's textfile collector. A family is its # HELP and # TYPE
// lines; a sample is `name{label="value",...} number`.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace launchguard::prometheus {

struct Label {
    std::string_view name;
    std::string_view value;
};

// A label value as the format wants it: backslash, double quote and newline
// escaped (\\, \", \n); every other byte as it is.
std::string escape_label_value(std::string_view value);

// Appends to one string; take() hands it over.
class TextWriter {
public:
    // type: "counter", "gauge" or "histogram". In help, backslash and
    // newline are escaped.
    void family(std::string_view name, std::string_view type, std::string_view help);
    void sample(std::string_view name, std::initializer_list<Label> labels, std::uint64_t value);
    // Fixed-point with six decimals: no exponent, microseconds kept.
    void sample(std::string_view name, std::initializer_list<Label> labels, double value);
    [[nodiscard]] std::string take() { return std::move(out_); }

private:
    void name_and_labels(std::string_view name, std::initializer_list<Label> labels);
    std::string out_;
};

}  // namespace launchguard::prometheus
