#include "observe.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace launchguard::webhook {

void observe(Metrics& metrics, Log& log, const Served& served) {
    metrics.request(served.endpoint, served.status, served.elapsed);
    if (!served.error.empty()) metrics.error(served.error);
    const Answer* answer = served.admission;
    if (answer == nullptr) return;
    const auto findings = answer->verdict != nullptr ? std::span(answer->verdict->findings)
                                                     : std::span<const std::pair<std::string, std::string>>();
    metrics.admission(served.endpoint, answer->cache_hit, answer->error, answer->decision, findings);

    std::vector<LogField> fields;
    fields.reserve(answer->log.fields().size() + 3);
    for (const auto& [key, value] : answer->log.fields()) {
        if (key != "endpoint" && key != "status" && key != "ms") fields.push_back(LogField{key, value});
    }
    const std::string status = std::to_string(served.status);
    const std::string ms = fmt::format("{:.3f}", std::chrono::duration<double, std::milli>(served.elapsed).count());
    fields.push_back(LogField{"endpoint", served.endpoint});
    fields.push_back(LogField{"status", status});
    fields.push_back(LogField{"ms", ms});
    log.write(served.status >= 500 ? "error" : "info", "admission", LogFields(fields.data(), fields.size()));
}

}  // namespace launchguard::webhook
