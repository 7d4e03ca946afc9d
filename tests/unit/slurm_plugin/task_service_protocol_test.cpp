#include "task_service_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <thread>

#include "service_client.h"

namespace launchguard::slurm {
namespace {

using namespace std::string_literals;

TaskRequest full_request() {
    TaskRequest request;
    request.plugin_args = {"profile=default", "mode=enforce", "service=/run/launchguard/task.sock"};
    request.mode = Mode::patch;
    request.env = {{"NCCL_IB_HCA", "=mlx5_0,mlx5_1"}, {"EMPTY", ""}, {"WITH_EQUALS", "a=b=c"}};
    request.host_env = PackedEnvironment(Environment{{"NCCL_TOPO_FILE", "/opt/topo.xml"}, {"PATH", "/usr/bin"}});
    request.forked_namespace = MountNamespace{4, 4026531841};
    request.job_id = 17;
    request.step_id = 0xfffffffb;
    request.job_nodes = 2;
    request.first_task = true;
    return request;
}

TEST(TaskServiceProtocol, ARequestSurvivesTheRoundTrip) {
    const TaskRequest sent = full_request();
    auto got = decode_task_request(encode_task_request(sent));
    ASSERT_TRUE(got) << got.error().to_string();
    EXPECT_EQ(got->plugin_args, sent.plugin_args);
    EXPECT_EQ(got->mode, Mode::patch);
    EXPECT_EQ(got->env, sent.env);
    EXPECT_EQ(got->host_env, sent.host_env);
    ASSERT_TRUE(got->host_env);
    EXPECT_EQ(got->host_env->unpack(), (Environment{{"NCCL_TOPO_FILE", "/opt/topo.xml"}, {"PATH", "/usr/bin"}}));
    EXPECT_EQ(got->forked_namespace, sent.forked_namespace);
    EXPECT_EQ(got->job_id, 17U);
    EXPECT_EQ(got->step_id, 0xfffffffbU);
    EXPECT_EQ(got->job_nodes, 2U);
    EXPECT_TRUE(got->first_task);
}

TEST(TaskServiceProtocol, AnEmptyHostEnvironmentIsKeptApartFromNone) {
    TaskRequest sent;
    sent.host_env = PackedEnvironment();
    auto got = decode_task_request(encode_task_request(sent));
    ASSERT_TRUE(got);
    ASSERT_TRUE(got->host_env);
    EXPECT_TRUE(got->host_env->empty());
    EXPECT_TRUE(got->host_env->unpack().empty());
    sent.host_env.reset();
    got = decode_task_request(encode_task_request(sent));
    ASSERT_TRUE(got);
    EXPECT_FALSE(got->host_env);
    EXPECT_FALSE(got->forked_namespace);
    EXPECT_FALSE(got->job_id);
}

TEST(TaskServiceProtocol, AHostEnvironmentUnpacksAsSetenvWould) {
    PackedEnvironment packed;
    packed.add("A=1");
    packed.add("WITH_EQUALS=a=b");
    packed.add("EMPTY=");
    packed.add("A=2");           // a later entry replaces an earlier one
    packed.add("B=x\0hidden"s);  // a NUL ends the entry
    EXPECT_EQ(packed.unpack(), (Environment{{"A", "2"}, {"WITH_EQUALS", "a=b"}, {"EMPTY", ""}, {"B", "x"}}));
    // Entries arrive through the protocol as they were added, in order.
    TaskRequest sent;
    sent.host_env = packed;
    auto got = decode_task_request(encode_task_request(sent));
    ASSERT_TRUE(got) << got.error().to_string();
    ASSERT_TRUE(got->host_env);
    EXPECT_EQ(*got->host_env, packed);
    EXPECT_EQ(got->host_env->unpack(), packed.unpack());
}

TEST(TaskServiceProtocol, AnAnswerSurvivesTheRoundTrip) {
    TaskAnswer sent;
    sent.block = true;
    sent.log_info = {"launchguard: decision hook=task_init"};
    sent.log_error = {"placement warning"};
    sent.tell_user = {"launchguard: BLOCK topo.file-missing: ...\nlaunchguard: profile x: launch blocked"};
    sent.env_patch = {{"NCCL_IB_QPS_PER_CONNECTION", "4"}, {"NCCL_DEBUG", std::nullopt}, {"EMPTY", ""}};
    auto got = decode_task_answer(encode_task_answer(sent));
    ASSERT_TRUE(got) << got.error().to_string();
    EXPECT_TRUE(got->block);
    EXPECT_EQ(got->log_info, sent.log_info);
    EXPECT_EQ(got->log_error, sent.log_error);
    EXPECT_EQ(got->tell_user, sent.tell_user);
    EXPECT_EQ(got->env_patch, sent.env_patch);
}

TEST(TaskServiceProtocol, ANulInsideAValueEndsIt) {
    TaskRequest sent;
    sent.env = {{"A", "before\0after"s}};
    auto got = decode_task_request(encode_task_request(sent));
    ASSERT_TRUE(got) << got.error().to_string();
    EXPECT_EQ(got->env.at("A"), "before");
}

// Each malformed request is refused as a whole, with the field at fault.
void expect_refused(const std::string& bytes, const std::string& field, const std::string& words) {
    auto got = decode_task_request(bytes);
    ASSERT_FALSE(got) << "accepted: " << bytes;
    EXPECT_EQ(got.error().field, field) << got.error().to_string();
    EXPECT_NE(got.error().message.find(words), std::string::npos) << got.error().to_string();
}

TEST(TaskServiceProtocol, MalformedRequestsAreRefusedWithTheReason) {
    const std::string header = "launchguard-task/1\0"s;
    const std::string mode = "mode\0enforce\0"s;
    const std::string end = "end\0\0"s;
    expect_refused("", "request", "does not start with");
    expect_refused("launchguard-answer/1\0end\0\0"s, "request", "does not start with");
    expect_refused(header + mode, "request", "cut short");
    expect_refused(header + mode + "end\0"s, "request", "has no value");
    expect_refused(header + mode + "end"s, "request", "not ended by a NUL");
    expect_refused(header + end + mode + end, "request", "after its \"end\"");
    expect_refused(header + mode + "colour\0red\0"s + end, "colour", "not a field");
    expect_refused(header + "mode\0loud\0"s + end, "mode", "not a mode");
    expect_refused(header + end, "mode", "missing");
    expect_refused(header + mode + "job\0-1\0"s + end, "job", "not a number");
    expect_refused(header + mode + "nodes\0 2\0"s + end, "nodes", "not a number");
    expect_refused(header + mode + "step\0"s + "99999999999\0"s + end, "step", "not a number");
    expect_refused(header + mode + "forked-ns\0"s + "12\0"s + end, "forked-ns", "DEVICE:INODE");
    expect_refused(header + mode + "env\0NOEQUALS\0"s + end, "env", "NAME=VALUE");
    expect_refused(header + mode + "env\0=value\0"s + end, "env", "NAME=VALUE");
    // The host's entries are checked on arrival too, though unpacked later.
    expect_refused(header + mode + "host-env\0NOEQUALS\0"s + end, "host-env", "NAME=VALUE");
    expect_refused(header + mode + "host-env\0=value\0"s + end, "host-env", "NAME=VALUE");
    expect_refused(header + mode + "first-task\0yes\0"s + end, "first-task", "neither");
    expect_refused(header + mode + std::string(kMaxTaskRequestBytes, 'x'), "request", "larger");
}

// Fed as a socket would deliver it: `bytes` in pieces of `step`.
std::size_t where_the_end_is_reached(const std::string& bytes, std::size_t step) {
    MessageEnd end;
    for (std::size_t received = 0; received < bytes.size();) {
        received = std::min(bytes.size(), received + step);
        if (end.reached(std::string_view(bytes).substr(0, received))) return received;
    }
    return std::string::npos;
}

TEST(TaskServiceProtocol, TheEndOfAMessageIsSeenWhereverTheBytesAreCut) {
    TaskRequest request = full_request();
    // "end" as an argument and as a variable's value: values, not the end.
    request.plugin_args.push_back("end");
    request.env["end"] = "end";
    const std::string bytes = encode_task_request(request);
    for (std::size_t step : {1UL, 2UL, 3UL, 7UL, 64UL, bytes.size()})
        EXPECT_EQ(where_the_end_is_reached(bytes, step), bytes.size()) << "pieces of " << step;
    TaskAnswer answer;
    answer.log_info = {"end", ""};
    const std::string answer_bytes = encode_task_answer(answer);
    EXPECT_EQ(where_the_end_is_reached(answer_bytes, 1), answer_bytes.size());
}

TEST(TaskServiceProtocol, AMessageCutShortHasNoEnd) {
    const std::string bytes = encode_task_request(full_request());
    EXPECT_EQ(where_the_end_is_reached(bytes.substr(0, bytes.size() - 1), 5), std::string::npos);
    // An "end" key whose value has not ended yet.
    EXPECT_EQ(where_the_end_is_reached("launchguard-task/1\0mode\0enforce\0end\0"s, 1), std::string::npos);
    // "end" as the header's text is not a key.
    EXPECT_EQ(where_the_end_is_reached("end\0\0"s, 1), std::string::npos);
    EXPECT_EQ(where_the_end_is_reached("h\0end\0\0"s, 1), 7U);
}

// A request far larger than the receiving buffer, written in pieces of every
// size: the message is read whole, to its "end" record and no further, and
// a bound is kept.
TEST(TaskServiceProtocol, AMessageIsReadWholeThroughASmallBuffer) {
    TaskRequest request = full_request();
    for (int i = 0; i < 400; ++i) request.env["VARIABLE_" + std::to_string(i)] = std::string(40, 'a' + i % 26);
    const std::string bytes = encode_task_request(request);
    ASSERT_GT(bytes.size(), 16000U);
    for (const std::size_t piece : {1UL, 100UL, 4096UL, bytes.size()}) {
        int ends[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
        std::thread writer([&] {
            // What comes after the end record is not read as the message.
            const std::string sent = bytes + "after the end";
            for (std::size_t at = 0; at < sent.size(); at += piece)
                (void)::send(ends[0], sent.data() + at, std::min(piece, sent.size() - at), MSG_NOSIGNAL);
        });
        char scratch[512];
        const ReceivedMessage received = receive_message(ends[1], kMaxTaskRequestBytes, scratch);
        writer.join();
        ::close(ends[0]);
        ::close(ends[1]);
        EXPECT_EQ(received.error, 0) << "pieces of " << piece;
        EXPECT_FALSE(received.too_large);
        // The end is seen where it arrives: a receive may carry bytes past
        // it, which are not the message's; none is left waiting for more.
        ASSERT_GE(received.bytes.size(), bytes.size()) << "pieces of " << piece;
        EXPECT_EQ(received.bytes.substr(0, bytes.size()), bytes) << "pieces of " << piece;
        auto decoded = decode_task_request(std::string_view(received.bytes).substr(0, bytes.size()));
        ASSERT_TRUE(decoded) << decoded.error().to_string();
        EXPECT_EQ(decoded->env, request.env);
    }

    // More than the bound: reading stops there.
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
    // The reader closes its end early: no SIGPIPE for the writer.
    std::thread writer([&] { (void)::send(ends[0], bytes.data(), bytes.size(), MSG_NOSIGNAL); });
    char scratch[512];
    const ReceivedMessage cut = receive_message(ends[1], 1000, scratch);
    ::close(ends[1]);
    writer.join();
    ::close(ends[0]);
    EXPECT_TRUE(cut.too_large);
    EXPECT_LE(cut.bytes.size(), 1000U + sizeof scratch);

    // The other side closes before the end: what came is returned, no error.
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
    ASSERT_EQ(::write(ends[0], bytes.data(), 100), 100);
    ::close(ends[0]);
    const ReceivedMessage closed = receive_message(ends[1], kMaxTaskRequestBytes, scratch);
    ::close(ends[1]);
    EXPECT_EQ(closed.error, 0);
    EXPECT_FALSE(closed.too_large);
    EXPECT_EQ(closed.bytes, bytes.substr(0, 100));
}

TEST(TaskServiceProtocol, MalformedAnswersAreRefused) {
    const std::string header = "launchguard-answer/1\0"s;
    const std::string end = "end\0\0"s;
    EXPECT_FALSE(decode_task_answer(header + end));  // no decision
    EXPECT_FALSE(decode_task_answer(header + "decision\0maybe\0"s + end));
    EXPECT_FALSE(decode_task_answer(header + "decision\0allow\0setenv\0NOVALUE\0"s + end));
    EXPECT_FALSE(decode_task_answer(header + "decision\0allow\0unsetenv\0\0"s + end));
    EXPECT_FALSE(decode_task_answer(header + "decision\0allow\0"s));  // cut short
    EXPECT_TRUE(decode_task_answer(header + "decision\0allow\0"s + end));
}

}  // namespace
}  // namespace launchguard::slurm
