// The Kubernetes half of `launchguard review`: every document of every
// input through review_workload, the same path as the admission webhook.
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/serialize.hpp>

#include "cli/command.h"
#include "cli/review.h"
#include "kubernetes/json_patch.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/manifest_writer.h"
#include "kubernetes/workload_review.h"
#include "report/json_report.h"
#include "report/text_report.h"
#include "util/text_escape.h"

namespace launchguard::cli {
namespace {

namespace json = boost::json;
namespace k8s = launchguard::kubernetes;

std::string object_label(const k8s::WorkloadReview& review) {
    std::string name = review.namespace_name.empty() ? review.name : review.namespace_name + "/" + review.name;
    return review.kind + (name.empty() ? "" : " " + name);
}

// A ConfigMap among the inputs: the workloads of its namespace that read it
// (envFrom, a volume) are judged with its data.
void collect_config_map(const json::value& object,
                        std::map<std::string, std::map<std::string, std::map<std::string, std::string>>>& out) {
    if (!object.is_object()) return;
    const json::object& map = object.get_object();
    const json::value* kind = map.if_contains("kind");
    const json::value* metadata = map.if_contains("metadata");
    const json::value* data = map.if_contains("data");
    if (kind == nullptr || *kind != "ConfigMap" || metadata == nullptr || !metadata->is_object()) return;
    const json::value* name = metadata->get_object().if_contains("name");
    if (name == nullptr || !name->is_string()) return;
    const json::value* namespace_name = metadata->get_object().if_contains("namespace");
    std::string in_namespace = namespace_name != nullptr && namespace_name->is_string()
                                   ? std::string(namespace_name->get_string())
                                   : std::string();
    auto& entries = out[in_namespace][std::string(name->get_string())];
    if (data == nullptr || !data->is_object()) return;
    for (const auto& [key, value] : data->get_object()) {
        if (value.is_string()) entries[std::string(key)] = std::string(value.get_string());
    }
}

// The operations of an object's patch addressed in the document that holds
// it: "/spec/..." of the List's item 3 becomes "/items/3/spec/...".
void append_addressed(json::array& line, const json::array& patch, const std::string& pointer) {
    for (const auto& op : patch) {
        json::value addressed = op;
        if (!pointer.empty() && addressed.is_object()) {
            json::object& object = addressed.get_object();
            if (json::value* path = object.if_contains("path"); path != nullptr && path->is_string()) {
                *path = pointer + std::string(path->get_string());
            }
        }
        line.push_back(std::move(addressed));
    }
}

// --patched: one input file with its patches applied, in its own format.
struct PatchedFile {
    bool json = false;
    std::string yaml;                // YAML: the file
    std::vector<std::string> jsons;  // JSON: its documents, one pretty-printed object each
};

Result<PatchedFile> patch_file(const ReviewInput& input, const k8s::ManifestFile& file,
                               const std::map<std::size_t, json::array>& patches, bool more_follow) {
    PatchedFile out;
    if (file.format == k8s::ManifestFormat::yaml) {
        auto yaml = k8s::write_patched_yaml(input.text, input.origin, patches, more_follow);
        if (!yaml) return yaml.error();
        out.yaml = std::move(yaml).value();
        return out;
    }
    out.json = true;
    for (std::size_t index = 0; index < file.file_documents.size(); ++index) {
        const json::value& document = file.file_documents[index];
        if (document.is_null()) continue;
        auto found = patches.find(index + 1);
        if (found == patches.end() || found->second.empty()) {
            out.jsons.push_back(pretty_json(document));
            continue;
        }
        auto patched = k8s::apply_json_patch(document, found->second);
        if (!patched) {
            Error e = patched.error();
            e.file = input.origin + ", document " + std::to_string(index + 1);
            return e;
        }
        out.jsons.push_back(pretty_json(*patched));
    }
    return out;
}

bool starts_document(std::string_view text) {
    return text.starts_with("---") && (text.size() == 3 || text[3] == '\n' || text[3] == ' ' || text[3] == '\r');
}

// All JSON: a JSON stream (kubectl reads a file that starts with `{` as
// one). Else one YAML stream, a JSON document as a flow-style document of
// its own.
std::string join_patched(const std::vector<PatchedFile>& files) {
    bool all_json = true;
    for (const auto& file : files) all_json = all_json && file.json;
    std::string out;
    for (const auto& file : files) {
        if (file.json) {
            for (const auto& document : file.jsons) out += (all_json ? "" : "---\n") + document;
            continue;
        }
        if (file.yaml.find_first_not_of(" \t\r\n") == std::string::npos) continue;
        if (!out.empty() && !starts_document(file.yaml)) out += "---\n";
        out += file.yaml;  // ends in a newline when more follow (write_patched_yaml)
    }
    return out;
}

// Every input read as manifests, with the ConfigMaps among them collected;
// one that cannot be read is reported (exit 2) and left out.
std::vector<std::pair<const ReviewInput*, k8s::ManifestFile>> read_inputs(const std::vector<ReviewInput>& inputs,
                                                                          k8s::ReviewOptions& options, int& code,
                                                                          bool& complete) {
    std::vector<std::pair<const ReviewInput*, k8s::ManifestFile>> parsed;
    for (const auto& input : inputs) {
        auto file = k8s::read_manifest_file(input.text, input.origin);
        if (!file) {
            code = combine_exit_codes(code, bad_input(file.error().to_string()));
            complete = false;
            continue;
        }
        for (const auto& duplicate : file->duplicate_keys) {
            std::cerr << "launchguard: warning: "
                      << printable_text(k8s::describe_duplicate_key(input.origin, duplicate)) << "\n";
        }
        for (const auto& document : file->documents) collect_config_map(document.object, options.config_maps);
        parsed.emplace_back(&input, std::move(file).value());
    }
    return parsed;
}

// One document of `--format json`: what it is, its report and its patch.
json::object document_json(const k8s::WorkloadReview& review, const std::string& where, int document_code,
                           const ReviewSettings& settings) {
    json::object entry;
    entry["source"] = where;
    entry["apiVersion"] = review.api_version;
    entry["kind"] = review.kind;
    entry["name"] = review.name;
    entry["namespace"] = review.namespace_name;
    entry["supported"] = review.supported;
    entry["requests_gpus"] = review.requests_gpus;
    if (!review.note.empty()) entry["note"] = review.note;
    if (settings.gate) {
        json::array notes;
        for (const auto& note : review.gate_notes) notes.emplace_back(note);
        entry["gate"] = {{"templates", review.gate_templates}, {"notes", std::move(notes)}};
    }
    if (review.supported && review.requests_gpus) entry["report"] = report_to_json(review.report);
    entry["patch"] = review.patch;
    entry["exit_code"] = document_code;
    return entry;
}

// One document of the text report: what it is, the gate's notes, then its findings and one line of unknowns.
void print_document(std::ostream& out, const k8s::WorkloadReview& review, const std::string& where,
                    const ReviewSettings& settings, bool color) {
    out << "== " << where << ": " << object_label(review) << "\n";
    if (!review.note.empty()) out << review.note << "\n";
    if (settings.gate && review.gate_templates > 0) {
        out << "launch gate: added to " << review.gate_templates << " pod template(s)\n";
    }
    for (const auto& note : review.gate_notes) out << "launch gate: " << note << "\n";
    if (review.supported && review.requests_gpus) {
        out << render_text(review.report, TextStyle{color},
                           ReportScope{true, settings.verbose, "the launch gate judges them in the container"});
    }
}

}  // namespace

int review_kubernetes(const std::vector<ReviewInput>& inputs, const ReviewSettings& settings) {
    k8s::ReviewOptions options;
    options.mode = settings.mode;
    options.fix_blocking = settings.fix_blocking;
    options.gate = settings.gate;
    const bool report_to_stderr = settings.print_patch || settings.print_patched;
    std::ostream& report_out = report_to_stderr ? std::cerr : std::cout;

    int code = kExitAllow;
    // --patched writes nothing unless every input is read, reviewed and
    // patched: never part of the files.
    bool patched_complete = true;
    auto parsed = read_inputs(inputs, options, code, patched_complete);

    json::array json_documents;
    std::vector<PatchedFile> patched_files;
    for (const auto& parsed_input : parsed) {
        const ReviewInput& input = *parsed_input.first;
        // A named reference, not a structured binding: clang 14 cannot capture
        // a binding in the lambda below.
        const auto& documents = parsed_input.second.documents;
        // --patched: the operations of each document of the file, addressed
        // in it as written (an AdmissionReview's under /request/object).
        std::map<std::size_t, json::array> file_patches;
        // --patch: one line per document of the file, the patches of a List's
        // items addressed under /items/N of that document.
        json::array patch_line;
        auto end_patch_line = [&](std::size_t index) {
            if (!settings.print_patch) return;
            if (index + 1 < documents.size() && documents[index + 1].document == documents[index].document) return;
            std::cout << json::serialize(patch_line) << "\n";
            patch_line.clear();
        };
        for (std::size_t index = 0; index < documents.size(); ++index) {
            const k8s::ManifestDocument& document = documents[index];
            std::string where = input.origin + ", " + document.where;
            auto reviewed = k8s::review_workload(document.object, *settings.profile, options);
            if (!reviewed) {
                Error error = reviewed.error();
                error.file = where;
                code = combine_exit_codes(code, bad_input(error.to_string()));
                patched_complete = false;
                end_patch_line(index);
                continue;
            }
            const k8s::WorkloadReview& review = *reviewed;
            int document_code =
                review.supported && review.requests_gpus ? exit_code_for(review.report.decision) : kExitAllow;
            code = combine_exit_codes(code, document_code);

            if (settings.print_patch) {
                // Skipped kinds included, so that a script can pair the lines
                // with the documents of the file.
                append_addressed(patch_line, review.patch, document.pointer);
                end_patch_line(index);
            } else if (settings.print_patched) {
                append_addressed(file_patches[document.document], review.patch,
                                 document.pointer + (document.admission_review ? "/request/object" : ""));
            }
            if (settings.format == "json") {
                json_documents.push_back(document_json(review, where, document_code, settings));
            } else {
                print_document(report_out, review, where, settings, !report_to_stderr && stdout_is_terminal());
            }
        }
        if (settings.print_patched && patched_complete) {
            auto patched = patch_file(input, parsed_input.second, file_patches, &parsed_input != &parsed.back());
            if (patched) {
                patched_files.push_back(std::move(patched).value());
            } else {
                code = combine_exit_codes(code, bad_input(patched.error().to_string()));
                patched_complete = false;
            }
        }
    }
    if (settings.print_patched) {
        if (patched_complete) {
            std::cout << join_patched(patched_files);
        } else {
            std::cerr << "launchguard: --patched: nothing written, for the errors above\n";
        }
    }
    if (settings.format == "json") {
        json::object all;
        all["documents"] = std::move(json_documents);
        all["exit_code"] = code;
        report_out << pretty_json(all);
    }
    return code;
}

}  // namespace launchguard::cli
