// `launchguard fleet`: many node records (node/node_record.h) judged
// together. Per node class and per layer, the share of nodes that conform and
// the nodes that do not, with the rule and its fix; drift, every fact whose
// value differs from the majority of its class, with the nodes that hold each
// value; an overall verdict against a threshold. The renderers are in
// fleet/fleet_render.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace launchguard::fleet {

// One node as its record describes it. Facts are display strings; a fact the
// node could not read is nullopt (its reason stays in the record).
struct NodeRecord {
    std::string origin;  // "records/a17.json", "fleet.jsonl:12"
    std::string hostname;
    std::string node_class;
    std::string checked_at;  // as written, RFC 3339 UTC
    std::string health;      // healthy, warning, degraded, unknown
    std::string problem;     // health unknown: why
    struct Rule {
        std::string id;
        std::string outcome;  // pass, warn, block, unknown
        std::string message;  // the finding's message, when the rule fired
    };
    std::vector<Rule> rules;
    std::map<std::string, std::optional<std::string>> facts;
    // Who wrote it: the file, or the Prometheus scrape target's labels.
    std::string source;
    // The source is the host's own: a file named <hostname>.json, as
    // node-check --record-dir writes it.
    bool own_source = false;
    // A *.json file of a record directory named for another host: a claim
    // that never stands as the named host's record.
    bool misplaced = false;
    // Set by keep_newest when sources disagree about this host: what each
    // claimed. Such a node does not conform.
    std::string conflict;
};

// Bounds on what fleet reads, so that no input makes it hold more than a
// few hundred megabytes. A node record is kilobytes; the memory bound holds
// some 30,000 records of 20 facts and a dozen rules.
inline constexpr std::size_t kMaxRecordBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxRecordMemory = std::size_t{160} << 20;
inline constexpr std::size_t kMaxErrorsKept = 20;
// How far past this host's clock a checked_at may be (clocks of nodes drift).
inline constexpr std::int64_t kClockSkewSeconds = 300;
// The conformance-over-time chart: points per class, and classes.
inline constexpr std::size_t kMaxHistoryPoints = 240;
inline constexpr std::size_t kMaxHistoryClasses = 64;

struct RecordError {
    std::string origin;  // file:line of the record, or the file
    std::string message;
};

// Unix seconds now.
std::int64_t unix_now();

// One record's JSON; errors name the field ("node.hostname: missing").
// checked_at must be an RFC 3339 time not later than now + kClockSkewSeconds.
// Never throws.
std::optional<NodeRecord> parse_node_record(std::string_view text, const std::string& origin, RecordError& error,
                                            std::int64_t now = unix_now());

// Conformance of one node class at one time: of the nodes known then, how
// many conformed (the same definition as analyze_fleet's).
struct HistoryPoint {
    std::int64_t time = 0;  // Unix seconds
    std::size_t nodes = 0;
    std::size_t conforming = 0;
    [[nodiscard]] double share() const { return nodes == 0 ? 1.0 : static_cast<double>(conforming) / nodes; }
};

struct ClassHistory {
    std::string name;
    std::vector<HistoryPoint> points;  // by time
};

struct FleetInput {
    std::vector<NodeRecord> nodes;
    std::vector<RecordError> errors;  // the first kMaxErrorsKept (add_error)
    std::size_t errors_left_out = 0;  // the others, counted
    std::size_t superseded = 0;       // older records of a host that has a newer one
    std::size_t conflicts = 0;        // hosts whose sources disagree (NodeRecord::conflict)
    // Why reading stopped before the end (a bound): nodes may be missing, so
    // the verdict cannot pass. Empty when everything was read.
    std::string incomplete;
    std::size_t memory = 0;         // record_memory of the records read, for kMaxRecordMemory
    std::int64_t now = unix_now();  // a checked_at later than now + kClockSkewSeconds is refused
    // Conformance over time, by class name, where the source has history: a
    // Prometheus range query, or records of one host at several times.
    std::vector<ClassHistory> history;
    std::string source;  // what was read, for the report: "records", "prometheus http://..."
};

// An error kept, or counted once kMaxErrorsKept are.
void add_error(FleetInput& input, RecordError error);
// Roughly what a record holds in memory, for kMaxRecordMemory.
std::size_t record_memory(const NodeRecord& node);
// Drops points outside years 1970..9999, thins each class to at most
// kMaxHistoryPoints (evenly, keeping the first and the last) and keeps the
// first kMaxHistoryClasses classes.
void bound_history(std::vector<ClassHistory>& history);

// Records from files and directories. A directory contributes its *.json and
// *.jsonl files; there a *.json file is a host's own (<hostname>.json) and a
// record in it that names another host is misplaced. A file holds one or
// more records, each starting on a line that begins with '{' (a JSON-lines
// stream, pretty-printed records one after another, or one record), read as
// a stream: a record over kMaxRecordBytes is an error, and reading stops
// (FleetInput::incomplete) once the records kept pass kMaxRecordMemory.
// A record that cannot be read is an error naming file:line; the rest is
// read. Then keep_newest.
FleetInput read_fleet(const std::vector<std::string>& paths);
// The same over text already in memory, `name` standing for its file (the
// records' source); `in_directory`: a file of a record directory.
void read_records_text(std::string_view text, const std::string& name, FleetInput& input, bool in_directory = false);
// One record per host, the others counted as superseded. Of one source (a
// file, a scrape target) the newest by checked_at counts. Where several
// sources claim a host, its own source (its <hostname>.json) counts and a
// newer record from any other is a conflict; without one, sources that
// disagree on whether the node conforms are a conflict; a misplaced record
// always is. A conflict keeps the host, non-conforming, with the claims in
// NodeRecord::conflict: a writer of the records cannot turn a node's failing
// record into a passing one.
void keep_newest(FleetInput& input);

// Conformance over time from records of the same hosts at several check
// times (before keep_newest): at each of at most `max_points` times from
// when 95% of the hosts had their first record to the last check, each host
// counts with its newest record not later than then. Empty when no host has
// more than one record.
std::vector<ClassHistory> history_of_records(const std::vector<NodeRecord>& nodes, std::size_t max_points = 60);

// "2026-05-01T10:00:00Z" (or with fractional seconds or an offset) as Unix
// seconds; nullopt when it is not such a time.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

// Whether a record's node conforms: no conflict, its check ran and no rule
// warned or blocked.
bool conforms(const NodeRecord& node);

// The layers of the launch stack the report is organised by, and which rule
// (by id prefix) and which fact (by name prefix) belongs to which; one table
// each (fleet.cpp). Unlisted ids fall in "other".
std::string_view layer_of_rule(std::string_view rule);
std::string_view layer_of_fact(std::string_view fact);
const std::vector<std::string_view>& layer_order();

struct Failure {
    std::string node;
    std::string rule;
    std::string outcome;  // warn, block, or "check unknown" for a node whose check did not run
    std::string message;
    std::string fix;  // the rule's fix (rule catalog)
};

struct LayerConformance {
    std::string layer;
    std::size_t conforming = 0;
    std::size_t nodes = 0;
    std::vector<Failure> failures;  // sorted by node, then rule
    [[nodiscard]] double share() const { return nodes == 0 ? 1.0 : static_cast<double>(conforming) / nodes; }
};

struct DriftValue {
    std::string value;  // "unknown" for nodes that could not read it
    std::vector<std::string> nodes;
};

struct Drift {
    std::string fact;
    std::string layer;
    // The value most nodes hold; nullopt on a tie for first place (then no
    // value is the class's and every value is listed as drift).
    std::optional<std::string> majority;
    std::size_t majority_nodes = 0;
    std::vector<DriftValue> others;  // the other values, most nodes first, then by value
};

// Nodes whose rule outcomes are the same, as one row of the nodes x rules view.
struct OutcomeRow {
    std::vector<std::string> outcomes;  // per Class::rules column: pass, warn, block, unknown, "" (not run)
    std::vector<std::string> nodes;
    std::size_t failing = 0;  // warn + block cells
};

struct ClassReport {
    std::string name;
    std::size_t nodes = 0;
    std::size_t conforming = 0;
    std::vector<LayerConformance> layers;  // layer_order(), those with rules only
    std::vector<Drift> drift;              // by fact name
    std::vector<std::string> rules;        // columns of the outcome view, catalog order
    std::vector<OutcomeRow> rows;          // outliers (most failing cells, fewest nodes) first
    [[nodiscard]] double share() const { return nodes == 0 ? 1.0 : static_cast<double>(conforming) / nodes; }
};

struct FleetReport {
    std::vector<ClassReport> classes;  // by name
    std::size_t nodes = 0;
    std::size_t conforming = 0;
    double threshold = 0.95;
    std::vector<RecordError> errors;
    std::size_t errors_left_out = 0;
    std::size_t superseded = 0;
    std::size_t conflicts = 0;
    std::string incomplete;
    std::vector<ClassHistory> history;  // empty when the source has none
    std::string source;
    [[nodiscard]] double share() const { return nodes == 0 ? 0.0 : static_cast<double>(conforming) / nodes; }
    // The verdict: at least one node, everything read, and the share of
    // conforming nodes at or above the threshold.
    [[nodiscard]] bool passes() const { return nodes > 0 && incomplete.empty() && share() + 1e-12 >= threshold; }
};

// A node conforms when its check ran and no rule warned or blocked; it
// conforms in a layer when no rule of that layer did. A rule that could not
// decide (unknown) does not make a node non-conforming: it is shown in the
// outcome view, and its cause is usually a fact the drift table lists.
FleetReport analyze_fleet(FleetInput input, double threshold);

// Host names in an order people expect: "node-a2" before "node-a10".
bool natural_less(std::string_view a, std::string_view b);

}  // namespace launchguard::fleet
