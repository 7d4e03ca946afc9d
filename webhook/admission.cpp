#include "admission.h"

#include <openssl/evp.h>

#include <boost/json.hpp>

#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "kubernetes/workload_review.h"
#include "report/text_report.h"
#include "util/text_escape.h"

namespace launchguard::webhook {
namespace json = boost::json;
namespace {

constexpr std::size_t kMaxWarningTotal = 3500;  // the API server truncates past 4096 runes in all
constexpr std::size_t kMaxDenyMessage = 4000;

std::string base64(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::map<std::string, std::string> string_map(const json::value* node) {
    std::map<std::string, std::string> out;
    if (node == nullptr || !node->is_object()) return out;
    for (const auto& [key, value] : node->as_object()) {
        if (value.is_string()) out.emplace(std::string(key), std::string(value.as_string()));
    }
    return out;
}

// One line per finding that does not block: what kubectl prints as "Warning: ...".
json::array warnings_for(const Report& report) {
    std::vector<std::string> extra;
    json::array out;
    std::size_t total = 0;
    std::size_t left_out = 0;
    for (const auto& f : report.findings) {
        if (f.action == Action::block) continue;
        extra.push_back("launchguard " + action_label(f.action) + " " + f.rule + ": " + f.message);
    }
    for (const auto& text : extra) {
        std::string line = fit_warning(text);
        if (total + line.size() > kMaxWarningTotal) {
            ++left_out;
            continue;
        }
        total += line.size();
        out.emplace_back(line);
    }
    if (left_out > 0) {
        out.emplace_back("launchguard: " + std::to_string(left_out) +
                         " more finding(s); run `launchguard review` on the manifest");
    }
    return out;
}

std::string deny_message(const Report& report, const Choice& choice) {
    std::string message = "launchguard (profile " + choice.profile->name + ", mode " +
                          std::string(to_string(choice.mode)) + ") blocks this workload:";
    bool first = true;
    for (const auto& f : report.findings) {
        if (f.action != Action::block) continue;
        std::string item = std::string(first ? " " : "; ") + f.rule + ": " + f.message;
        const std::string fix = describe_remediations(f.remediation);
        if (!fix.empty()) item += " -> fix: " + fix;
        first = false;
        if (message.size() + item.size() > kMaxDenyMessage) {
            message += "; (more: run `launchguard review` on the manifest)";
            break;
        }
        message += item;
    }
    return message;
}

// The response's members as they follow "uid" in the answer, so that a
// cached verdict is answered by concatenation, without a JSON tree.
std::string serialized_members(const json::object& response) {
    std::string out;
    for (const auto& member : response) {
        out += ',';
        out += json::serialize(json::string_view(member.key()));
        out += ':';
        out += json::serialize(member.value());
    }
    return out;
}

// The one AdmissionReview every 200 answer is: the uid echoed, then the members.
std::string review_json(json::string_view uid, std::string_view members) {
    std::string out = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":)";
    out += json::serialize(uid);
    out += members;
    out += "}}";
    return out;
}

Verdict with_members(Verdict verdict, json::object response) {
    verdict.members = serialized_members(response);
    if (json::value* audit = response.if_contains("auditAnnotations"); audit != nullptr && audit->is_object()) {
        audit->get_object()["dryRun"] = "true";
    }
    verdict.members_dry_run = serialized_members(response);
    return verdict;
}

// The profile and mode a verdict was reached under, for the log line.
void add_choice(Verdict& verdict, const Choice& choice) {
    verdict.log.emplace_back("profile", choice.profile->name);
    verdict.log.emplace_back("mode", std::string(to_string(choice.mode)));
}

// A pod asked by annotation for a mode or profile the site does not allow:
// denied at /validate, warned about at /mutate.
Verdict refusal(Endpoint endpoint, const Choice& choice) {
    const std::string_view decision = endpoint == Endpoint::validate ? "block" : "allow";
    json::object audit;
    audit["profile"] = choice.profile->name;
    audit["mode"] = std::string(to_string(choice.mode));
    audit["decision"] = decision;
    json::object response;
    response["allowed"] = endpoint != Endpoint::validate;
    if (endpoint == Endpoint::validate) {
        response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", "launchguard: " + choice.refusal}};
    } else {
        response["warnings"] = json::array{fit_warning("launchguard: " + choice.refusal)};
    }
    response["auditAnnotations"] = std::move(audit);
    Verdict verdict;
    verdict.decision = decision;
    verdict.log = {{"decision", std::string(decision)}, {"refusal", choice.refusal}};
    add_choice(verdict, choice);
    return with_members(std::move(verdict), std::move(response));
}

// DELETE and CONNECT carry no object: allowed, nothing to judge.
std::shared_ptr<const Verdict> nothing_to_judge() {
    static const auto verdict = [] {
        auto allowed = std::make_shared<Verdict>();
        allowed->members = allowed->members_dry_run = R"(,"allowed":true)";
        allowed->decision = "allow";
        allowed->log = {{"decision", "allow"}};
        return std::shared_ptr<const Verdict>(std::move(allowed));
    }();
    return verdict;
}

// What /mutate does about the launch gate, as the review cache keys it.
unsigned gate_state(Endpoint endpoint, const Choice& choice) {
    if (endpoint != Endpoint::mutate) return 0;
    return (choice.gate ? 1U : 0U) | (choice.gate_opted_out ? 2U : 0U) | (choice.gate_warning.empty() ? 0U : 4U);
}

// Reviews the object under the chosen profile and mode: the response
// fields, log fields and counters that do not depend on the request.
Verdict judge(Endpoint endpoint, const json::value& object, const Choice& choice, const GateConfig& gate) {
    Verdict verdict;
    json::object response;
    response["allowed"] = true;
    kubernetes::ReviewOptions review_options;
    review_options.mode = choice.mode;
    review_options.fix_blocking = endpoint == Endpoint::mutate;
    if (endpoint == Endpoint::mutate && choice.gate)
        review_options.gate = kubernetes::GateOptions{gate.image, gate.on_error};
    // What gets around the gate is judged against the site's gate image
    // (for every pod alike: the review cache's key does not hold the choice).
    if (gate.enabled) review_options.gate_image = gate.image;
    auto reviewed = kubernetes::review_workload(object, *choice.profile, review_options);
    if (!reviewed) {
        // The API server validates the schema only after mutation: a spec we
        // cannot read is denied at /validate with the field, never patched.
        const std::string why = "launchguard cannot read the workload: " + reviewed.error().to_string();
        verdict.error = "unreadable_object";
        if (endpoint == Endpoint::validate) {
            response["allowed"] = false;
            response["status"] = {{"code", 400}, {"reason", "BadRequest"}, {"message", why}};
        } else {
            response["warnings"] = json::array{fit_warning(why)};
        }
        verdict.log = {{"decision", endpoint == Endpoint::validate ? "block" : "allow"},
                       {"error", reviewed.error().to_string()}};
        add_choice(verdict, choice);
        return with_members(std::move(verdict), std::move(response));
    }
    const kubernetes::WorkloadReview& result = *reviewed;
    if (!result.supported || !result.requests_gpus) {
        verdict.decision = "allow";
        verdict.log = {{"decision", "allow"}, {"note", result.supported ? "requests no GPU" : result.note}};
        add_choice(verdict, choice);
        return with_members(std::move(verdict), std::move(response));  // not launchguard's business: untouched, silent
    }

    const Report& report = result.report;
    std::string decision = std::string(to_string(report.decision));
    const std::string blocked = rules_with_action(report, Action::block);
    const std::string patched = rules_with_action(report, Action::patch);
    const std::string warned = rules_with_action(report, Action::warn);
    json::object audit;
    audit["profile"] = choice.profile->name;
    audit["mode"] = std::string(to_string(choice.mode));
    audit["blocked"] = blocked;
    audit["patched"] = patched;
    audit["warned"] = warned;
    if (endpoint == Endpoint::validate) {
        if (report.decision == Decision::block) {
            response["allowed"] = false;
            response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", deny_message(report, choice)}};
        } else if (report.decision == Decision::patch) {
            decision = "allow";  // patching is /mutate's job; here it only warns
        }
    } else {
        if (!result.patch.empty()) {
            response["patchType"] = "JSONPatch";
            response["patch"] = base64(json::serialize(result.patch));
        }
        // /validate denies what is left; the gate alone is no fix.
        decision = result.patch.size() > result.gate_operations ? "patch" : "allow";
        if (choice.gate) {
            audit["gate"] = result.gate_templates > 0 ? "added" : "unchanged";
        } else if (choice.gate_opted_out) {
            audit["gate"] = std::string("opted out (") + kGateAnnotation + "=off)";
        }
    }
    audit["decision"] = decision;
    json::array warnings = warnings_for(report);
    if (endpoint == Endpoint::mutate) {
        // Said first: the cap on the warnings' total leaves out findings, not these.
        json::array gate_lines;
        if (!choice.gate_warning.empty()) gate_lines.emplace_back(fit_warning("launchguard: " + choice.gate_warning));
        constexpr std::size_t kMaxGateNotes = 4;
        for (std::size_t i = 0; i < result.gate_notes.size() && i < kMaxGateNotes; ++i)
            gate_lines.emplace_back(fit_warning("launchguard gate: " + result.gate_notes[i]));
        if (result.gate_notes.size() > kMaxGateNotes) {
            gate_lines.emplace_back("launchguard gate: " + std::to_string(result.gate_notes.size() - kMaxGateNotes) +
                                    " more; run `launchguard review --gate-image IMAGE` on the manifest");
        }
        for (auto& line : warnings) gate_lines.push_back(std::move(line));
        warnings = std::move(gate_lines);
    }
    if (!warnings.empty()) response["warnings"] = std::move(warnings);
    response["auditAnnotations"] = std::move(audit);
    verdict.decision = decision;
    for (const auto& f : report.findings) verdict.findings.emplace_back(f.rule, std::string(to_string(f.action)));
    verdict.log = {{"decision", decision}, {"blocked", blocked}, {"patched", patched}, {"warned", warned}};
    add_choice(verdict, choice);
    return with_members(std::move(verdict), std::move(response));
}

std::string object_name(const json::value& object) {
    if (!object.is_object()) return "";
    const json::value* metadata = object.get_object().if_contains("metadata");
    if (metadata == nullptr || !metadata->is_object()) return "";
    for (std::string_view field : {"name", "generateName"}) {
        const json::value* name = metadata->get_object().if_contains(field);
        if (name != nullptr && name->is_string() && !name->get_string().empty()) return std::string(name->get_string());
    }
    return "";
}

}  // namespace

std::string fit_warning(std::string_view raw, std::size_t max_chars) {
    // kubectl prints warnings to a terminal as they are, and a spec's
    // values (env, paths, names) may hold ESC, CR or newline: every warning
    // passes here, so none carries a control character.
    const std::string escaped = printable_text(raw);
    const std::string_view text = escaped;
    // Count characters, not bytes: a UTF-8 continuation byte is 10xxxxxx.
    std::size_t chars = 0;
    std::size_t cut = text.size();
    std::size_t cut_for_ellipsis = text.size();
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (chars == max_chars - 3) cut_for_ellipsis = i;
        if (chars == max_chars) {
            cut = i;
            break;
        }
        ++chars;
    }
    if (cut == text.size()) return std::string(text);
    return std::string(text.substr(0, cut_for_ellipsis)) + "...";
}

Result<AdmissionRequest> decode_review(const json::value& review) {
    if (!review.is_object()) return make_error("expected a JSON object");
    const json::object& top = review.as_object();
    const json::value* api_version = top.if_contains("apiVersion");
    const json::value* kind = top.if_contains("kind");
    if (api_version == nullptr || !api_version->is_string() || api_version->as_string() != "admission.k8s.io/v1") {
        return make_error("apiVersion must be admission.k8s.io/v1");
    }
    if (kind == nullptr || !kind->is_string() || kind->as_string() != "AdmissionReview") {
        return make_error("kind must be AdmissionReview");
    }
    const json::value* request_value = top.if_contains("request");
    if (request_value == nullptr || !request_value->is_object()) return make_error("request is missing");
    const json::object& request = request_value->as_object();
    const json::value* uid = request.if_contains("uid");
    if (uid == nullptr || !uid->is_string() || uid->as_string().empty()) return make_error("request.uid is missing");

    AdmissionRequest out;
    out.uid = uid->as_string();
    if (const json::value* ns = request.if_contains("namespace"); ns && ns->is_string()) {
        out.namespace_name = ns->as_string();
    }
    if (const json::value* rkind = request.if_contains("kind"); rkind && rkind->is_object()) {
        if (const json::value* k = rkind->as_object().if_contains("kind"); k && k->is_string())
            out.kind = k->as_string();
    }
    if (const json::value* object = request.if_contains("object"); object != nullptr && !object->is_null()) {
        out.object = object;
    }
    const json::value* dry_run = request.if_contains("dryRun");
    out.dry_run = dry_run != nullptr && dry_run->is_bool() && dry_run->as_bool();
    return out;
}

Ruling decide(Endpoint endpoint, const AdmissionRequest& request, const WebhookConfig& config, ReviewCache* cache,
              std::size_t request_bytes) {
    if (request.object == nullptr) return Ruling{nothing_to_judge(), std::nullopt};
    const json::value& object = *request.object;
    std::map<std::string, std::string> annotations;
    if (object.is_object()) {
        if (const json::value* metadata = object.as_object().if_contains("metadata");
            metadata && metadata->is_object()) {
            annotations = string_map(metadata->as_object().if_contains("annotations"));
        }
    }
    // Reading the node labels walks every pod template: only when a selection rule could use them.
    const Choice choice = choose(
        config,
        config.selection.empty() ? std::map<std::string, std::string>{} : kubernetes::requested_node_labels(object),
        annotations);
    if (!choice.refusal.empty())
        return Ruling{std::make_shared<const Verdict>(refusal(endpoint, choice)), std::nullopt};

    if (cache == nullptr)
        return Ruling{std::make_shared<const Verdict>(judge(endpoint, object, choice, config.gate)), std::nullopt};
    const ReviewProbe probe =
        review_probe(endpoint, choice.profile, choice.mode, object, gate_state(endpoint, choice), choice.gate_warning);
    if (auto cached = cache->find(probe)) return Ruling{std::move(cached), true};
    auto verdict = std::make_shared<const Verdict>(judge(endpoint, object, choice, config.gate));
    cache->insert(probe, verdict, request_bytes);
    return Ruling{std::move(verdict), false};
}

Answer encode(const AdmissionRequest& request, const Ruling& ruling) {
    const Verdict& verdict = *ruling.verdict;
    Answer answer;
    answer.body = review_json(request.uid, request.dry_run ? verdict.members_dry_run : verdict.members);
    answer.log.set("uid", std::string(request.uid));
    if (!request.namespace_name.empty()) answer.log.set("namespace", std::string(request.namespace_name));
    if (!request.kind.empty()) answer.log.set("kind", std::string(request.kind));
    if (request.object != nullptr) {
        answer.log.set("name", object_name(*request.object));
        if (request.dry_run) answer.log.set("dry_run", "true");
    }
    for (const auto& [field, value] : verdict.log) answer.log.set(field, value);
    answer.error = verdict.error;
    answer.decision = verdict.decision;
    answer.cache_hit = ruling.cache_hit;
    answer.verdict = ruling.verdict;
    return answer;
}

Answer encode_failure(unsigned status, std::string_view counter, std::string_view reason) {
    Answer answer;
    answer.status = status;
    answer.content_type = "text/plain; charset=utf-8";
    answer.body = std::string(status == 400 ? "launchguard: bad AdmissionReview: " : "launchguard: internal error: ");
    answer.body += reason;
    answer.body += '\n';
    answer.error = counter;
    answer.log.set("error", std::string(reason));
    return answer;
}

Answer handle_admission(Endpoint endpoint, std::string_view body, const WebhookConfig& config, ReviewCache* cache) {
    try {
        json::parse_options options;
        options.max_depth = 256;  // deep CRDs; Boost.JSON's default of 32 is too tight
        std::error_code ec;
        // One arena per request: the review is freed at once at the end, not
        // node by node (malloc and free were the largest cost under load).
        // The first 64 KiB come from the stack: a 10 KB review parses without malloc.
        alignas(std::max_align_t) unsigned char first_block[64 * 1024];
        json::monotonic_resource arena(first_block, sizeof first_block);
        const json::value review = json::parse(body, ec, &arena, options);
        if (ec) return encode_failure(400, "bad_request", "not JSON (" + ec.message() + ")");
        auto request = decode_review(review);
        if (!request) return encode_failure(400, "bad_request", request.error().message);
        return encode(*request, decide(endpoint, *request, config, cache, body.size()));
    } catch (const std::exception& e) {
        return encode_failure(500, "internal", e.what());
    } catch (...) {
        return encode_failure(500, "internal", "unknown");
    }
}

}  // namespace launchguard::webhook
