#include "fleet/fleet_render.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <map>

#include "node/node_record.h"
#include "util/text_escape.h"

namespace launchguard::fleet {
namespace json = boost::json;
namespace {

std::string percent(double share) {
    char text[16];
    std::snprintf(text, sizeof(text), "%.1f%%", share * 100.0);
    return text;
}

std::string plural(std::size_t n, std::string_view word) {
    return thousands(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

// The failures of one layer grouped by rule, in the order first seen.
struct RuleFailures {
    std::string rule;
    std::string fix;
    std::map<std::string, std::size_t> outcomes;  // outcome -> nodes
    std::vector<std::string> nodes;
    std::string example;  // "node-a17: <message>"
};

std::vector<RuleFailures> by_rule(const LayerConformance& layer) {
    std::vector<RuleFailures> groups;
    std::map<std::string, std::size_t> index;
    for (const auto& failure : layer.failures) {
        auto [it, inserted] = index.emplace(failure.rule, groups.size());
        if (inserted) {
            groups.push_back({failure.rule, failure.fix, {}, {}, {}});
            if (!failure.message.empty()) groups.back().example = failure.node + ": " + failure.message;
        }
        RuleFailures& group = groups[it->second];
        ++group.outcomes[failure.outcome];
        group.nodes.push_back(failure.node);
    }
    return groups;
}

std::string outcome_counts(const RuleFailures& group) {
    std::string out;
    for (const auto& [outcome, n] : group.outcomes) {
        if (!out.empty()) out += ", ";
        out += outcome + " " + thousands(n);
    }
    return out;
}

std::string rule_name(const RuleFailures& group) { return group.rule.empty() ? "(node check)" : group.rule; }

// "28.39.1002 on 1,021 nodes; 28.37.1014 on 3: node-a17, …"
std::string drift_text(const Drift& drift) {
    std::string out =
        drift.majority ? *drift.majority + " on " + plural(drift.majority_nodes, "node") : std::string("no majority");
    for (const auto& other : drift.others) {
        out += "; " + other.value + " on " + thousands(other.nodes.size()) + ": " + abbreviate_nodes(other.nodes);
    }
    return out;
}

std::string verdict_line(const FleetReport& report) {
    const std::size_t classes = report.classes.size();
    return "launchguard fleet: " + plural(report.nodes, "node") + " in " + thousands(classes) +
           (classes == 1 ? " class" : " classes") + ", " + thousands(report.conforming) + " conform (" +
           percent(report.share()) + "), threshold " + percent(report.threshold) + ": " +
           (report.passes() ? "PASS" : "FAIL");
}

std::string html_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : valid_utf8(text)) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

// Red (0) through amber to green (1), as an HSL hue.
std::string share_colour(double share) {
    char text[48];
    std::snprintf(text, sizeof(text), "hsl(%d,70%%,%d%%)", static_cast<int>(share * share * 120.0),
                  share >= 0.999 ? 80 : 70);
    return text;
}

constexpr const char* kStyle = R"(
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}h3{font-size:1em}
.pass{color:#176b2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;font-size:.85em;text-align:left}
th.r{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;white-space:nowrap;padding:4px 1px}
td.c{width:14px;min-width:14px;padding:0}
.o-pass{background:#a9dfb4}.o-warn{background:#f7c948}.o-block{background:#e4572e}.o-unknown{background:#bbb}
.o-none{background:repeating-linear-gradient(45deg,#e4572e,#e4572e 3px,#fff 3px,#fff 6px)}.o-{background:#fff}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
details summary{cursor:pointer}.nodes{max-width:60em;font-family:monospace;font-size:.8em}
.muted{color:#666}
)";

std::string utc_text(std::int64_t t) {
    const std::time_t when = static_cast<std::time_t>(t);
    std::tm tm{};
    ::gmtime_r(&when, &tm);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", &tm);
    return text;
}

// RFC 3339, as the node record writes times.
std::string iso_text(std::int64_t t) {
    return utc_timestamp(std::chrono::system_clock::from_time_t(static_cast<std::time_t>(t)));
}

// Line colours for the classes of the over-time plot; they repeat past eight.
constexpr const char* kSeriesColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                          "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

// Share of conforming nodes per class over time: one line each, the
// threshold dashed, the first and last time on the axis.
void html_history_chart(const FleetReport& report, std::string& out) {
    std::int64_t first = 0;
    std::int64_t last = 0;
    bool any = false;
    for (const auto& h : report.history) {
        for (const auto& p : h.points) {
            first = any ? std::min(first, p.time) : p.time;
            last = any ? std::max(last, p.time) : p.time;
            any = true;
        }
    }
    if (!any) return;
    const int left = 48;
    const int top = 10;
    const int width = 640;
    const int height = 200;
    const double span = last > first ? static_cast<double>(last - first) : 1.0;
    auto x = [&](std::int64_t t) { return left + static_cast<double>(t - first) / span * width; };
    auto y = [&](double share) { return top + (1.0 - share) * height; };
    char num[64];
    auto fmt1 = [&](double a) {
        std::snprintf(num, sizeof(num), "%.1f", a);
        return std::string(num);
    };
    auto fmt2 = [&](double a, double b) { return fmt1(a) + "," + fmt1(b); };
    out += "<h2>Conformance over time</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
           std::to_string(left + width + 200) + "\" height=\"" + std::to_string(top + height + 40) +
           "\" role=\"img\" aria-label=\"conformance over time by node class\" class=\"history\">";
    for (int pct = 0; pct <= 100; pct += 25) {
        const double yy = y(pct / 100.0);
        out += "<line x1=\"" + std::to_string(left) + "\" x2=\"" + std::to_string(left + width) + "\" y1=\"" +
               fmt1(yy) + "\" y2=\"" + fmt1(yy) + "\" stroke=\"#ddd\"/><text x=\"0\" y=\"" +
               std::to_string(static_cast<int>(yy) + 4) + "\" font-size=\"11\">" + std::to_string(pct) + "%</text>";
    }
    const std::string ty = fmt1(y(report.threshold));
    out += "<line x1=\"" + std::to_string(left) + "\" x2=\"" + std::to_string(left + width) + "\" y1=\"" + ty +
           "\" y2=\"" + ty + "\" stroke=\"#b00020\" stroke-dasharray=\"4 3\"><title>threshold " +
           percent(report.threshold) + "</title></line>";
    out += "<text x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(top + height + 16) +
           "\" font-size=\"11\">" + utc_text(first) + "</text><text x=\"" + std::to_string(left + width) + "\" y=\"" +
           std::to_string(top + height + 16) + "\" font-size=\"11\" text-anchor=\"end\">" + utc_text(last) + "</text>";
    std::size_t index = 0;
    for (const auto& h : report.history) {
        const char* colour = kSeriesColours[index % std::size(kSeriesColours)];
        std::string points;
        for (const auto& p : h.points) points += fmt2(x(p.time), y(p.share())) + " ";
        out += "<polyline class=\"history-line\" fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(colour) +
               "\" points=\"" + points + "\"><title>" + html_escape(h.name) + "</title></polyline>";
        if (h.points.size() == 1)
            out += "<circle r=\"3\" fill=\"" + std::string(colour) + "\" cx=\"" + fmt1(x(h.points[0].time)) +
                   "\" cy=\"" + fmt1(y(h.points[0].share())) + "\"/>";
        const int ly = top + 14 + static_cast<int>(index) * 16;
        out += "<rect x=\"" + std::to_string(left + width + 12) + "\" y=\"" + std::to_string(ly - 9) +
               "\" width=\"10\" height=\"10\" fill=\"" + colour + "\"/><text x=\"" + std::to_string(left + width + 26) +
               "\" y=\"" + std::to_string(ly) + "\" font-size=\"11\">" + html_escape(h.name) + "</text>";
        ++index;
    }
    out += "</svg>\n";
    // The numbers behind the lines, for whoever cannot read the plot.
    out +=
        "<details><summary>Conformance over time as a table</summary><table><tr><th>class</th><th>time "
        "(UTC)</th><th>nodes</th><th>conform</th><th>share</th></tr>\n";
    for (const auto& h : report.history) {
        for (const auto& p : h.points) {
            out += "<tr><td>" + html_escape(h.name) + "</td><td>" + utc_text(p.time) + "</td><td>" +
                   thousands(p.nodes) + "</td><td>" + thousands(p.conforming) + "</td><td>" + percent(p.share()) +
                   "</td></tr>\n";
        }
    }
    out += "</table></details>\n";
}

void html_summary_chart(const FleetReport& report, std::string& out) {
    // One bar per class with the threshold marked.
    const int width = 480;
    const int row = 22;
    const int label = 180;
    const int height = row * static_cast<int>(report.classes.size()) + 24;
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(label + width + 70) + "\" height=\"" +
           std::to_string(height) + "\" role=\"img\" aria-label=\"conformance by node class\">";
    int y = 4;
    for (const auto& c : report.classes) {
        const int bar = static_cast<int>(c.share() * width);
        out += "<text x=\"0\" y=\"" + std::to_string(y + 14) + "\" font-size=\"12\">" + html_escape(c.name) +
               "</text><rect x=\"" + std::to_string(label) + "\" y=\"" + std::to_string(y) + "\" width=\"" +
               std::to_string(width) + "\" height=\"16\" fill=\"#eee\"/><rect x=\"" + std::to_string(label) +
               "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(bar) + "\" height=\"16\" fill=\"" +
               share_colour(c.share()) + "\"/><text x=\"" + std::to_string(label + width + 6) + "\" y=\"" +
               std::to_string(y + 13) + "\" font-size=\"12\">" + percent(c.share()) + "</text>";
        y += row;
    }
    const int mark = label + static_cast<int>(report.threshold * width);
    out += "<line x1=\"" + std::to_string(mark) + "\" x2=\"" + std::to_string(mark) + "\" y1=\"0\" y2=\"" +
           std::to_string(y) + "\" stroke=\"#222\" stroke-dasharray=\"4 2\"/><text x=\"" + std::to_string(mark) +
           "\" y=\"" + std::to_string(y + 14) + "\" font-size=\"11\" text-anchor=\"middle\">threshold " +
           percent(report.threshold) + "</text></svg>\n";
}

void html_class_layer_table(const FleetReport& report, std::string& out) {
    std::vector<std::string_view> layers;
    for (const auto layer : layer_order()) {
        for (const auto& c : report.classes) {
            const bool has = std::any_of(c.layers.begin(), c.layers.end(),
                                         [&](const LayerConformance& l) { return l.layer == layer; });
            if (has) {
                layers.push_back(layer);
                break;
            }
        }
    }
    out += "<table><tr><th>class</th><th>nodes</th><th>all layers</th>";
    for (const auto layer : layers) out += "<th>" + html_escape(layer) + "</th>";
    out += "</tr>\n";
    for (const auto& c : report.classes) {
        out += "<tr><td><a href=\"#class-" + html_escape(c.name) + "\">" + html_escape(c.name) + "</a></td><td>" +
               thousands(c.nodes) + "</td><td style=\"background:" + share_colour(c.share()) + "\">" +
               percent(c.share()) + "</td>";
        for (const auto layer : layers) {
            auto it = std::find_if(c.layers.begin(), c.layers.end(),
                                   [&](const LayerConformance& l) { return l.layer == layer; });
            if (it == c.layers.end()) {
                out += "<td class=\"muted\">no rules</td>";
            } else {
                out += "<td style=\"background:" + share_colour(it->share()) + "\" title=\"" +
                       thousands(it->conforming) + " of " + thousands(it->nodes) + "\">" + percent(it->share()) +
                       "</td>";
            }
        }
        out += "</tr>\n";
    }
    out += "</table>\n";
}

void html_node_list(const std::vector<std::string>& nodes, std::string& out) {
    if (nodes.size() <= 6) {
        out += html_escape(abbreviate_nodes(nodes));
        return;
    }
    out += "<details><summary>" + plural(nodes.size(), "node") + ": " + html_escape(abbreviate_nodes(nodes, 3)) +
           "</summary><div class=\"nodes\">";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (i > 0) out += ", ";
        out += html_escape(nodes[i]);
    }
    out += "</div></details>";
}

void html_outcomes(const ClassReport& c, std::string& out) {
    out +=
        "<h3>Nodes × rules</h3><p class=\"legend muted\">Nodes with the same outcomes share a row; rows with the "
        "most failing rules and the fewest nodes first.<span class=\"o-pass\"></span>pass<span "
        "class=\"o-warn\"></span>warn<span class=\"o-block\"></span>block<span "
        "class=\"o-unknown\"></span>unknown<span class=\"o-none\"></span>check did not run</p>\n";
    out += "<table><tr><th>nodes</th>";
    for (const auto& rule : c.rules) out += "<th class=\"r\">" + html_escape(rule) + "</th>";
    out += "</tr>\n";
    std::size_t shown = 0;
    for (const auto& row : c.rows) {
        if (shown++ == kHtmlRowsPerClass) break;
        out += "<tr><td>";
        html_node_list(row.nodes, out);
        out += "</td>";
        for (std::size_t i = 0; i < row.outcomes.size(); ++i) {
            out += "<td class=\"c o-" + row.outcomes[i] + "\" title=\"" + html_escape(c.rules[i]) + ": " +
                   (row.outcomes[i].empty() ? std::string("not run") : row.outcomes[i]) + "\"></td>";
        }
        out += "</tr>\n";
    }
    out += "</table>\n";
    if (c.rows.size() > kHtmlRowsPerClass) {
        out += "<p class=\"muted\">" + plural(c.rows.size() - kHtmlRowsPerClass, "more row") +
               " not shown (the JSON output has them all).</p>\n";
    }
}

void html_failures(const ClassReport& c, std::string& out) {
    bool any = false;
    for (const auto& layer : c.layers) {
        if (layer.failures.empty()) continue;
        if (!any)
            out +=
                "<h3>Non-conforming nodes</h3><table><tr><th>layer</th><th>rule</th><th>outcomes</th>"
                "<th>nodes</th><th>example</th><th>fix</th></tr>\n";
        any = true;
        for (const auto& group : by_rule(layer)) {
            out += "<tr><td>" + html_escape(layer.layer) + "</td><td>" + html_escape(rule_name(group)) + "</td><td>" +
                   html_escape(outcome_counts(group)) + "</td><td>";
            html_node_list(group.nodes, out);
            out += "</td><td>" + html_escape(group.example) + "</td><td>" + html_escape(group.fix) + "</td></tr>\n";
        }
    }
    if (any) out += "</table>\n";
}

void html_drift(const ClassReport& c, std::string& out) {
    out += "<h3>Drift</h3>\n";
    if (c.drift.empty()) {
        out += "<p class=\"muted\">Every fact has one value on every node of the class.</p>\n";
        return;
    }
    out += "<table><tr><th>fact</th><th>layer</th><th>majority</th><th>other values</th></tr>\n";
    for (const auto& d : c.drift) {
        out += "<tr><td>" + html_escape(d.fact) + "</td><td>" + html_escape(d.layer) + "</td><td>" +
               (d.majority ? html_escape(*d.majority) + " <span class=\"muted\">(" + plural(d.majority_nodes, "node") +
                                 ")</span>"
                           : std::string("<b>no majority</b>")) +
               "</td><td>";
        for (const auto& other : d.others) {
            out += "<div><b>" + html_escape(other.value) + "</b> on ";
            html_node_list(other.nodes, out);
            out += "</div>";
        }
        out += "</td></tr>\n";
    }
    out += "</table>\n";
}

}  // namespace

std::string thousands(std::size_t n) {
    std::string digits = std::to_string(n);
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
    return digits;
}

std::string abbreviate_nodes(const std::vector<std::string>& nodes, std::size_t limit) {
    std::string out;
    for (std::size_t i = 0; i < nodes.size() && i < limit; ++i) {
        if (i > 0) out += ", ";
        out += nodes[i];
    }
    if (nodes.size() > limit) out += ", … (+" + thousands(nodes.size() - limit) + " more)";
    return out;
}

std::string render_fleet_text(const FleetReport& report) {
    // Every line through printable_text: names, messages and values come
    // from the records, and a terminal must not receive their control bytes.
    std::string out;
    auto line = [&out](const std::string& text) { out += printable_text(text) + "\n"; };
    line(verdict_line(report));
    if (!report.incomplete.empty()) line("  not every record was read (the verdict cannot pass): " + report.incomplete);
    if (report.conflicts > 0)
        line("  " + plural(report.conflicts, "host") + " with conflicting records, counted as not conforming");
    if (report.superseded > 0)
        line("  " + plural(report.superseded, "older record") + " of the same hosts not counted");
    for (const auto& c : report.classes) {
        out += "\n";
        line("class " + c.name + ": " + plural(c.nodes, "node") + ", " + thousands(c.conforming) + " conform (" +
             percent(c.share()) + ")");
        for (const auto& layer : c.layers) {
            char text[160];
            std::snprintf(text, sizeof(text), "  %-18s %s of %s conform (%s)", layer.layer.c_str(),
                          thousands(layer.conforming).c_str(), thousands(layer.nodes).c_str(),
                          percent(layer.share()).c_str());
            line(text);
            for (const auto& group : by_rule(layer)) {
                line("    " + rule_name(group) + " (" + outcome_counts(group) + "): " + abbreviate_nodes(group.nodes));
                if (!group.example.empty()) line("      e.g. " + group.example);
                if (!group.fix.empty()) line("      fix: " + group.fix);
            }
        }
        line(c.drift.empty() ? "  drift: none" : "  drift:");
        for (const auto& d : c.drift) line("    " + d.fact + ": " + drift_text(d));
    }
    if (!report.history.empty()) {
        out += "\n";
        line("conformance over time:");
        for (const auto& h : report.history) {
            if (h.points.empty()) continue;
            const auto low =
                std::min_element(h.points.begin(), h.points.end(),
                                 [](const HistoryPoint& a, const HistoryPoint& b) { return a.share() < b.share(); });
            line("  " + h.name + ": " + percent(h.points.front().share()) + " at " + utc_text(h.points.front().time) +
                 ", " + percent(h.points.back().share()) + " at " + utc_text(h.points.back().time) + ", lowest " +
                 percent(low->share()) + " at " + utc_text(low->time) + " (" + plural(h.points.size(), "point") + ")");
        }
    }
    if (!report.errors.empty()) {
        out += "\n";
        line(plural(report.errors.size() + report.errors_left_out, "record") + " could not be read:");
        for (const auto& e : report.errors) line("  " + e.origin + ": " + e.message);
        if (report.errors_left_out > 0) line("  ... and " + thousands(report.errors_left_out) + " more");
    }
    return out;
}

json::value fleet_to_json(const FleetReport& report) {
    auto names = [](const std::vector<std::string>& nodes) {
        json::array a;
        for (const auto& n : nodes) a.emplace_back(n);
        return a;
    };
    json::array classes;
    for (const auto& c : report.classes) {
        json::array layers;
        for (const auto& layer : c.layers) {
            json::array failures;
            for (const auto& f : layer.failures) {
                failures.push_back(json::object{{"node", f.node},
                                                {"rule", f.rule},
                                                {"outcome", f.outcome},
                                                {"message", f.message},
                                                {"fix", f.fix}});
            }
            layers.push_back(json::object{{"layer", layer.layer},
                                          {"nodes", layer.nodes},
                                          {"conforming", layer.conforming},
                                          {"conformance", layer.share()},
                                          {"failures", std::move(failures)}});
        }
        json::array drift;
        for (const auto& d : c.drift) {
            json::array others;
            for (const auto& o : d.others) {
                others.push_back(
                    json::object{{"value", o.value}, {"count", o.nodes.size()}, {"nodes", names(o.nodes)}});
            }
            json::value majority = nullptr;
            if (d.majority) majority = json::object{{"value", *d.majority}, {"count", d.majority_nodes}};
            drift.push_back(json::object{{"fact", d.fact},
                                         {"layer", d.layer},
                                         {"majority", std::move(majority)},
                                         {"others", std::move(others)}});
        }
        json::array rows;
        for (const auto& row : c.rows) {
            rows.push_back(json::object{
                {"outcomes", names(row.outcomes)}, {"count", row.nodes.size()}, {"nodes", names(row.nodes)}});
        }
        classes.push_back(json::object{{"class", c.name},
                                       {"nodes", c.nodes},
                                       {"conforming", c.conforming},
                                       {"conformance", c.share()},
                                       {"layers", std::move(layers)},
                                       {"drift", std::move(drift)},
                                       {"rules", names(c.rules)},
                                       {"rows", std::move(rows)}});
    }
    json::array errors;
    for (const auto& e : report.errors) errors.push_back(json::object{{"record", e.origin}, {"message", e.message}});
    json::array history;
    for (const auto& h : report.history) {
        json::array points;
        for (const auto& p : h.points) {
            points.push_back(json::object{{"time", iso_text(p.time)},
                                          {"nodes", p.nodes},
                                          {"conforming", p.conforming},
                                          {"conformance", p.share()}});
        }
        history.push_back(json::object{{"class", h.name}, {"points", std::move(points)}});
    }
    return json::object{
        {"schema", "launchguard.fleet-report/v1"},
        {"nodes", report.nodes},
        {"conforming", report.conforming},
        {"conformance", report.share()},
        {"threshold", report.threshold},
        {"verdict", report.passes() ? "pass" : "fail"},
        {"superseded", report.superseded},
        {"conflicts", report.conflicts},
        {"incomplete", report.incomplete.empty() ? json::value(nullptr) : json::value(report.incomplete)},
        {"errors_left_out", report.errors_left_out},
        {"source", report.source},
        {"classes", std::move(classes)},
        {"history", std::move(history)},
        {"errors", std::move(errors)}};
}

std::string render_fleet_html(const FleetReport& report) {
    std::string out =
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>launchguard fleet "
        "conformance</title><style>";
    out += kStyle;
    out += "</style></head><body>\n<h1>Fleet conformance</h1>\n<p>" + plural(report.nodes, "node") + ", " +
           thousands(report.conforming) + " conform (" + percent(report.share()) + "); threshold " +
           percent(report.threshold) + ": <span class=\"" + (report.passes() ? "pass\">PASS" : "fail\">FAIL") +
           "</span></p>\n";
    if (!report.incomplete.empty())
        out +=
            "<p class=\"fail\">Not every record was read (the verdict cannot pass): " + html_escape(report.incomplete) +
            "</p>\n";
    if (report.conflicts > 0)
        out += "<p class=\"fail\">" + plural(report.conflicts, "host") +
               " with conflicting records, counted as not conforming.</p>\n";
    if (report.superseded > 0)
        out +=
            "<p class=\"muted\">" + plural(report.superseded, "older record") + " of the same hosts not counted.</p>\n";
    if (!report.source.empty()) out += "<p class=\"muted\">Source: " + html_escape(report.source) + "</p>\n";
    out += "<h2>Conformance by class and layer</h2>\n";
    html_summary_chart(report, out);
    html_history_chart(report, out);
    html_class_layer_table(report, out);
    for (const auto& c : report.classes) {
        out += "<h2 id=\"class-" + html_escape(c.name) + "\">Class " + html_escape(c.name) + ": " +
               plural(c.nodes, "node") + ", " + percent(c.share()) + " conform</h2>\n";
        html_failures(c, out);
        html_drift(c, out);
        html_outcomes(c, out);
    }
    if (!report.errors.empty()) {
        out += "<h2>Records that could not be read</h2><ul>\n";
        for (const auto& e : report.errors)
            out += "<li><code>" + html_escape(e.origin) + "</code>: " + html_escape(e.message) + "</li>\n";
        if (report.errors_left_out > 0) out += "<li>... and " + thousands(report.errors_left_out) + " more</li>\n";
        out += "</ul>\n";
    }
    out += "</body></html>\n";
    return out;
}

}  // namespace launchguard::fleet
