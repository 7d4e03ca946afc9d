// Patched manifests written back as YAML: documents nothing patches byte for
// byte, key order and unchanged scalars kept, strings YAML 1.1 would read as
// something else quoted, aliases and merge keys edited where the object is,
// and nothing at all when an operation does not apply. Also the reader's
// notes on duplicate keys and its JSON streams.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <string>

#include "kubernetes/json_patch.h"
#include "kubernetes/manifest_documents.h"
#include "kubernetes/manifest_writer.h"

namespace launchguard::kubernetes {
namespace {

namespace json = boost::json;

json::array ops(const char* text) { return json::parse(text).as_array(); }

// The file documents of a text, as the reader gives them.
std::vector<json::value> documents_of(const std::string& text) {
    auto file = read_manifest_file(text, "t.yaml");
    EXPECT_TRUE(file) << file.error().to_string() << "\n" << text;
    return file ? file->file_documents : std::vector<json::value>{};
}

// Writes `text` with `patches`, and checks that what is written reads back
// as the documents with the patches applied by apply_json_patch.
std::string write_and_check(const std::string& text, const std::map<std::size_t, json::array>& patches) {
    auto written = write_patched_yaml(text, "t.yaml", patches);
    EXPECT_TRUE(written) << written.error().to_string();
    if (!written) return "";
    std::vector<json::value> expected = documents_of(text);
    for (const auto& [document, operations] : patches) {
        auto patched = apply_json_patch(expected[document - 1], operations);
        EXPECT_TRUE(patched);
        if (patched) expected[document - 1] = *patched;
    }
    std::vector<json::value> without_nulls;
    for (auto& value : expected) {
        if (!value.is_null()) without_nulls.push_back(value);
    }
    std::vector<json::value> read;
    for (auto& value : documents_of(*written)) {
        if (!value.is_null()) read.push_back(value);
    }
    EXPECT_EQ(read, without_nulls) << *written;
    return *written;
}

constexpr const char* kThreeDocuments = R"(# The service first.
apiVersion: v1
kind: Service   # a comment on a line
metadata:
  name: s
---
# The pod: launchguard adds an env entry.
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: "true"}}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: i
    command:
    - bash
    - -c
    - |
      echo one
        indented two
    resources: {limits: {nvidia.com/gpu: 8}}
---
apiVersion: v1
kind: ConfigMap   # kept
metadata: {name: m}
data: {a: 'yes'}
)";

TEST(WritePatchedYaml, KeepsOtherDocumentsByteForByteAndTheKeyOrderOfThePatchedOne) {
    std::string out = write_and_check(
        kThreeDocuments,
        {{2,
          ops(R"([{"op":"add","path":"/spec/containers/0/env","value":[{"name":"NCCL_TOPO_FILE","value":"/t.xml"}]}])")}});
    const std::string text = kThreeDocuments;
    // The first and the third document as they were, comments included.
    EXPECT_EQ(out.substr(0, text.find("---")), text.substr(0, text.find("---")));
    EXPECT_NE(out.find("apiVersion: v1\nkind: ConfigMap   # kept\nmetadata: {name: m}\ndata: {a: 'yes'}\n"),
              std::string::npos)
        << out;
    // The second: its leading comment, its keys in their order, its flow
    // mappings flow, its literal block a literal block, the quoted "true" quoted.
    EXPECT_NE(out.find("---\n# The pod: launchguard adds an env entry.\napiVersion: v1\nkind: Pod\n"),
              std::string::npos)
        << out;
    EXPECT_LT(out.find("restartPolicy"), out.find("containers")) << out;
    EXPECT_LT(out.find("resources"), out.find("env:")) << out;
    EXPECT_NE(out.find("{name: p, labels: {app: 'true'}}"), std::string::npos) << out;
    EXPECT_NE(out.find("|\n"), std::string::npos) << out;
    EXPECT_NE(out.find("NCCL_TOPO_FILE"), std::string::npos) << out;
}

TEST(WritePatchedYaml, NothingPatchedIsTheFileAsItWas) {
    auto out = write_patched_yaml(kThreeDocuments, "t.yaml", {{2, json::array{}}});
    ASSERT_TRUE(out);
    EXPECT_EQ(*out, kThreeDocuments);
}

// Every string that a plain scalar would turn into a boolean, a number or
// null stays a string: those the file quoted, and those the patch brings.
TEST(WritePatchedYaml, StringsYamlWouldRetypeStayStrings) {
    const std::vector<std::string> tricky = {
        "true",  "false",  "True",  "FALSE",      "yes",  "no",   "Yes",  "NO",    "on",   "off",   "On",
        "OFF",   "y",      "n",     "Y",          "N",    "null", "Null", "NULL",  "~",    "",      "1",
        "-1",    "+1",     "1.0",   "1e3",        ".5",   "0755", "007",  "0x1F",  "0o17", "1_000", "=",
        "<<",    "- a",    "a: b",  "#c",         "@x",   "*a",   "&a",   "!t",    "%p",   "'q'",   "\"dq\"",
        " lead", "trail ", "12:30", "2001-01-01", ".inf", ".NaN", "8Gi",  "Memory"};
    std::string text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\ndata:\n";
    json::array add;
    for (std::size_t i = 0; i < tricky.size(); ++i) {
        const std::string quoted = json::serialize(json::value(tricky[i]));
        text += "  k" + std::to_string(i) + ": " + quoted + "\n";
        add.push_back(json::object{{"op", "add"}, {"path", "/data/new" + std::to_string(i)}, {"value", tricky[i]}});
        add.push_back(json::object{
            {"op", "add"}, {"path", "/data/key" + std::to_string(i)}, {"value", json::object{{tricky[i], tricky[i]}}}});
    }
    std::string out = write_and_check(text, {{1, add}});
    auto read = documents_of(out);
    ASSERT_EQ(read.size(), 1U);
    for (std::size_t i = 0; i < tricky.size(); ++i) {
        const json::object& data = read[0].at("data").as_object();
        EXPECT_EQ(data.at("k" + std::to_string(i)), json::value(tricky[i])) << tricky[i] << "\n" << out;
        EXPECT_EQ(data.at("new" + std::to_string(i)), json::value(tricky[i])) << tricky[i] << "\n" << out;
        EXPECT_EQ(data.at("key" + std::to_string(i)).as_object().at(tricky[i]), json::value(tricky[i])) << out;
    }
}

TEST(WritePatchedYaml, UnchangedPlainScalarsKeepTheirText) {
    const std::string text =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostIPC: yes\n"
        "  priority: 0x10\n  x: 1.50\n  y: ~\n  containers: [{name: c, image: i}]\n";
    std::string out = write_and_check(
        text, {{1, ops(R"([{"op":"add","path":"/spec/containers/0/env","value":[{"name":"A","value":"1"}]}])")}});
    EXPECT_NE(out.find("hostIPC: yes\n"), std::string::npos) << out;
    EXPECT_NE(out.find("priority: 0x10\n"), std::string::npos) << out;
    EXPECT_NE(out.find("x: 1.50\n"), std::string::npos) << out;
    EXPECT_NE(out.find("value: '1'"), std::string::npos) << out;
}

TEST(WritePatchedYaml, MultiLineStringsOfEveryShapeRoundTrip) {
    const std::string text =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata:\n"
        "  a: |\n    one\n\n    three\n"
        "  b: |-\n    no newline at the end\n"
        "  c: |+\n    two at the end\n\n"
        "  d: \"  leading spaces\\nsecond\\n\"\n"
        "  e: \"tab\\tand\\r\\ncarriage\\n\"\n"
        "  f: >\n    folded\n    text\n";
    write_and_check(text, {{1, ops(R"([{"op":"add","path":"/data/g","value":"line\nline\n"}])")}});
}

// An alias is its own copy once patched: the mapping it names is unchanged,
// and a member only a merge key brings is written into the mapping edited.
TEST(WritePatchedYaml, AliasesAndMergeKeysAreEditedWhereTheObjectIs) {
    const std::string text = R"(apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec: &spec
    containers:
    - &container
      name: c
      image: i
      env: [{name: X, value: "1"}]
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec:
    <<: *spec
    hostIPC: true
)";
    std::string out = write_and_check(
        text, {{1, ops(R"([{"op":"add","path":"/items/1/spec/containers/0/env/-","value":{"name":"Y","value":"2"}},
                           {"op":"replace","path":"/items/0/spec/containers/0/image","value":"j"}])")}});
    auto read = documents_of(out);
    ASSERT_EQ(read.size(), 1U);
    EXPECT_EQ(read[0].at("items").at(0).at("spec").at("containers").at(0).at("env").as_array().size(), 1U) << out;
    EXPECT_EQ(read[0].at("items").at(1).at("spec").at("containers").at(0).at("image"), json::value("i")) << out;
}

TEST(WritePatchedYaml, AnOperationThatDoesNotApplyWritesNothingAndSaysWhere) {
    auto out = write_patched_yaml(kThreeDocuments, "t.yaml",
                                  {{2, ops(R"([{"op":"add","path":"/spec/containers/0/env","value":[]},
                                               {"op":"replace","path":"/spec/nothing/here","value":1}])")}});
    ASSERT_FALSE(out);
    const std::string message = out.error().to_string();
    EXPECT_NE(message.find("t.yaml"), std::string::npos) << message;
    EXPECT_NE(message.find("document 2"), std::string::npos) << message;
    EXPECT_NE(message.find("/spec/nothing/here"), std::string::npos) << message;
    EXPECT_NE(message.find("nothing written"), std::string::npos) << message;
}

TEST(WritePatchedYaml, DirectivesDocumentEndsAndEmptyDocumentsStayReadable) {
    const std::string text =
        "%YAML 1.1\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n...\n---\n"
        "---\n--- # a comment\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n";
    write_and_check(text, {{1, ops(R"([{"op":"add","path":"/spec/hostIPC","value":true}])")}});
    const auto documents = documents_of(text);
    std::size_t service = 0;
    for (std::size_t i = 0; i < documents.size(); ++i) {
        if (documents[i].is_object() && documents[i].at("kind") == "Service") service = i + 1;
    }
    ASSERT_NE(service, 0U);
    write_and_check(text, {{service, ops(R"([{"op":"add","path":"/spec","value":{"ports":[{"port":80}]}}])")}});
}

TEST(ReadManifestFile, NamesDuplicateKeysWithTheirLines) {
    auto yaml =
        read_manifest_file("apiVersion: v1\nkind: Pod\nspec:\n  a: 1\n  b: 2\n  a: 3\n---\nx: 1\nx: 2\n", "d.yaml");
    ASSERT_TRUE(yaml);
    ASSERT_EQ(yaml->duplicate_keys.size(), 2U);
    EXPECT_EQ(yaml->duplicate_keys[0].document, 1U);
    EXPECT_EQ(yaml->duplicate_keys[0].line, 6);
    EXPECT_EQ(yaml->duplicate_keys[0].key, "a");
    EXPECT_EQ(yaml->duplicate_keys[1].document, 2U);
    EXPECT_EQ(yaml->duplicate_keys[1].line, 9);
    EXPECT_EQ(yaml->file_documents[0].at("spec").at("a"), json::value(3));  // the last one, as kubectl reads it
    const std::string note = describe_duplicate_key("d.yaml", yaml->duplicate_keys[0]);
    EXPECT_EQ(note.rfind("d.yaml:6: document 1: duplicate key \"a\"", 0), 0U) << note;

    auto stream = read_manifest_file(
        "{\"kind\": \"Pod\",\n \"spec\": {\"a\": 1,\n \"a\": 2}}\n{\"b\": 1, \"c\": {\"b\": 2}}\n", "d.json");
    ASSERT_TRUE(stream);
    EXPECT_EQ(stream->format, ManifestFormat::json);
    ASSERT_EQ(stream->file_documents.size(), 2U);
    ASSERT_EQ(stream->duplicate_keys.size(), 1U);
    EXPECT_EQ(stream->duplicate_keys[0].line, 3);
    EXPECT_EQ(stream->duplicate_keys[0].document, 1U);

    auto array = read_manifest_file("[{\"a\": 1},\n {\"a\": 1, \"a\": 2}]", "a.json");
    ASSERT_TRUE(array);
    ASSERT_EQ(array->duplicate_keys.size(), 1U);
    EXPECT_EQ(array->duplicate_keys[0].document, 2U);
    EXPECT_EQ(array->duplicate_keys[0].line, 2);
}

TEST(ReadManifestFile, ReadsAJsonStreamAsKubectlDoes) {
    auto stream = read_manifest_file(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"a"}}
{"apiVersion":"v1","kind":"Service","metadata":{"name":"b"}})",
                                     "s.json");
    ASSERT_TRUE(stream) << stream.error().to_string();
    ASSERT_EQ(stream->documents.size(), 2U);
    EXPECT_EQ(stream->documents[1].where, "document 2");
    EXPECT_FALSE(read_manifest_file("{\"a\": 1} {", "bad.json"));
}

}  // namespace
}  // namespace launchguard::kubernetes
