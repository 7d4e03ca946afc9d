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
#include "review_parser.h"
#include "util/text_escape.h"

namespace launchguard::webhook {
namespace json = boost::json;
namespace {

constexpr std::size_t kMaxWarningTotal = 3500;  // the API server truncates past 4096 runes in all
constexpr std::size_t kMaxDenyMessage = 4000;

Answer bad_request(Metrics& metrics, const std::string& reason) {
    metrics.error("bad_request");
    return Answer{
        400, "launchguard: bad AdmissionReview: " + reason + "\n", "text/plain; charset=utf-8", {{"error", reason}}};
}

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

// Reviews the object under the chosen profile and mode: the response
// fields, log fields and counters that do not depend on the request.
Verdict judge(Endpoint endpoint, const json::value& object, const Choice& choice) {
    Verdict verdict;
    json::object response;
    response["allowed"] = true;
    kubernetes::ReviewOptions review_options;
    review_options.mode = choice.mode;
    review_options.fix_blocking = endpoint == Endpoint::mutate;
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
        return with_members(std::move(verdict), std::move(response));
    }
    const kubernetes::WorkloadReview& result = *reviewed;
    if (!result.supported || !result.requests_gpus) {
        verdict.decision = "allow";
        verdict.log = {{"decision", "allow"}, {"note", result.supported ? "requests no GPU" : result.note}};
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
        decision = result.patch.empty() ? "allow" : "patch";  // /validate denies what is left
    }
    audit["decision"] = decision;
    json::array warnings = warnings_for(report);
    if (!warnings.empty()) response["warnings"] = std::move(warnings);
    response["auditAnnotations"] = std::move(audit);
    verdict.decision = decision;
    for (const auto& f : report.findings) verdict.findings.emplace_back(f.rule, std::string(to_string(f.action)));
    verdict.log = {{"decision", decision}, {"blocked", blocked}, {"patched", patched}, {"warned", warned}};
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

Answer admit_review(Endpoint endpoint, std::string_view body, const WebhookConfig& config, Metrics& metrics,
                    ReviewCache* cache) {
    const std::string_view endpoint_name = endpoint == Endpoint::mutate ? "/mutate" : "/validate";
    json::parse_options options;
    options.max_depth = 256;  // deep CRDs; Boost.JSON's default of 32 is too tight
    std::error_code ec;
    // One arena per request: the review is freed at once at the end, not
    // node by node (malloc and free were the largest cost under load).
    // The first 64 KiB come from the stack: a 10 KB review parses without malloc.
    alignas(std::max_align_t) unsigned char first_block[64 * 1024];
    json::monotonic_resource arena(first_block, sizeof first_block);
    json::value review = parse_admission_review(body, ec, &arena, options);
    if (ec) return bad_request(metrics, "not JSON (" + ec.message() + ")");
    if (!review.is_object()) return bad_request(metrics, "expected a JSON object");
    const json::object& top = review.as_object();
    const json::value* api_version = top.if_contains("apiVersion");
    const json::value* kind = top.if_contains("kind");
    if (api_version == nullptr || !api_version->is_string() || api_version->as_string() != "admission.k8s.io/v1") {
        return bad_request(metrics, "apiVersion must be admission.k8s.io/v1");
    }
    if (kind == nullptr || !kind->is_string() || kind->as_string() != "AdmissionReview") {
        return bad_request(metrics, "kind must be AdmissionReview");
    }
    const json::value* request = top.if_contains("request");
    if (request == nullptr || !request->is_object()) return bad_request(metrics, "request is missing");
    const json::value* uid = request->as_object().if_contains("uid");
    if (uid == nullptr || !uid->is_string() || uid->as_string().empty())
        return bad_request(metrics, "request.uid is missing");

    LogRecord log{{"uid", std::string(uid->as_string())}};
    if (const json::value* ns = request->as_object().if_contains("namespace"); ns && ns->is_string()) {
        log.set("namespace", std::string(ns->as_string()));
    }
    if (const json::value* rkind = request->as_object().if_contains("kind"); rkind && rkind->is_object()) {
        if (const json::value* k = rkind->as_object().if_contains("kind"); k && k->is_string()) {
            log.set("kind", std::string(k->as_string()));
        }
    }
    auto answer = [&log](std::string review_json) {
        return Answer{200, std::move(review_json), "application/json", std::move(log)};
    };
    const json::value* object = request->as_object().if_contains("object");
    if (object == nullptr || object->is_null()) {  // DELETE and CONNECT carry no object
        metrics.decision(endpoint_name, "allow");
        log.set("decision", "allow");
        return answer(review_json(uid->as_string(), R"(,"allowed":true)"));
    }
    const json::value* dry_run = request->as_object().if_contains("dryRun");
    const bool is_dry_run = dry_run != nullptr && dry_run->is_bool() && dry_run->as_bool();

    std::map<std::string, std::string> annotations;
    if (object->is_object()) {
        if (const json::value* metadata = object->as_object().if_contains("metadata");
            metadata && metadata->is_object()) {
            annotations = string_map(metadata->as_object().if_contains("annotations"));
        }
    }
    // Reading the node labels walks every pod template: only when a selection rule could use them.
    const Choice choice = choose(
        config,
        config.selection.empty() ? std::map<std::string, std::string>{} : kubernetes::requested_node_labels(*object),
        annotations);
    log.set("profile", choice.profile->name);
    log.set("mode", std::string(to_string(choice.mode)));
    if (is_dry_run) log.set("dry_run", "true");
    if (!choice.refusal.empty()) {
        json::object audit;
        audit["profile"] = choice.profile->name;
        audit["mode"] = std::string(to_string(choice.mode));
        if (is_dry_run) audit["dryRun"] = "true";
        audit["decision"] = endpoint == Endpoint::validate ? "block" : "allow";
        json::object response;
        response["allowed"] = true;
        response["auditAnnotations"] = std::move(audit);
        if (endpoint == Endpoint::validate) {
            response["allowed"] = false;
            response["status"] = {
                {"code", 403}, {"reason", "Forbidden"}, {"message", "launchguard: " + choice.refusal}};
        } else {
            response["warnings"] = json::array{fit_warning("launchguard: " + choice.refusal)};
        }
        metrics.decision(endpoint_name, endpoint == Endpoint::validate ? "block" : "allow");
        log.set("decision", endpoint == Endpoint::validate ? "block" : "allow");
        log.set("refusal", choice.refusal);
        return answer(review_json(uid->as_string(), serialized_members(response)));
    }

    std::shared_ptr<const Verdict> verdict;
    std::optional<ReviewProbe> probe;
    std::optional<bool> cache_hit;
    if (cache != nullptr) {
        probe = review_probe(endpoint, choice.profile, choice.mode, *object);
        verdict = cache->find(*probe);
        cache_hit = verdict != nullptr;
    }
    if (!verdict) {
        verdict = std::make_shared<const Verdict>(judge(endpoint, *object, choice));
        if (cache != nullptr) cache->insert(*probe, verdict, body.size());
    }

    log.set("name", object_name(*object));
    for (const auto& [field, value] : verdict->log) log.set(field, value);
    metrics.admission(endpoint_name, cache_hit, verdict->error, verdict->decision, verdict->findings);
    return answer(review_json(uid->as_string(), is_dry_run ? verdict->members_dry_run : verdict->members));
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

Answer admit(Endpoint endpoint, std::string_view body, const WebhookConfig& config, Metrics& metrics,
             ReviewCache* cache) {
    try {
        return admit_review(endpoint, body, config, metrics, cache);
    } catch (const std::exception& e) {
        metrics.error("internal");
        return Answer{500,
                      std::string("launchguard: internal error: ") + e.what() + "\n",
                      "text/plain; charset=utf-8",
                      {{"error", e.what()}}};
    } catch (...) {
        metrics.error("internal");
        return Answer{500, "launchguard: internal error\n", "text/plain; charset=utf-8", {{"error", "unknown"}}};
    }
}

}  // namespace launchguard::webhook
