#include "server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "admission.h"
#include "observe.h"
#include "util/text.h"
#include "util/text_escape.h"

namespace launchguard::webhook {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

using Clock = std::chrono::steady_clock;
// A connection lives on one single-threaded io_context (Server::Impl), so
// its handlers never run concurrently and need no strand; the concrete
// executor type also spares every async step the type-erased executor
// copies of any_io_executor (~8 % of CPU) and a strand's reference counts.
using Executor = net::io_context::executor_type;
using Stream = beast::ssl_stream<beast::basic_stream<tcp, Executor>>;

// The part of a request's handling every session shares.
struct Shared {
    ServerOptions options;
    const WebhookConfig& config;
    CertificateStore& certificates;
    Metrics& metrics;
    Log& log;
    std::atomic<bool> draining{false};
    std::atomic<int> open_sessions{0};
    std::function<void()> on_last_session_closed;  // set by the server before it accepts
    ReviewCache review_cache{options.review_cache_entries, options.review_cache_bytes};
};

using Response = http::response<http::string_body>;

// Every HTTP response the server sends is made here; Beast's serializer
// writes it (http::async_write).
Response make_response(http::status status, std::string body, std::string_view content_type, unsigned version,
                       bool keep_alive) {
    Response response{status, version};
    response.set(http::field::server, "launchguard-webhook");
    response.set(http::field::content_type, content_type);
    response.body() = std::move(body);
    response.keep_alive(keep_alive);  // 1.1: "Connection: close" when not; 1.0: "keep-alive" when so
    response.prepare_payload();
    return response;
}

// A request routed: the response, the metrics label of the endpoint (one
// of the paths served or "other"), and the handler's answer at /mutate and
// /validate, for the wrapper (observe.h).
struct Routed {
    Response response;
    std::string_view endpoint = "other";
    std::optional<Answer> admission;
};

Routed route(const http::request<http::string_body>& request, Shared& shared, bool keep_alive) {
    std::string_view target = request.target();
    target = target.substr(0, target.find('?'));  // the API server appends ?timeout=10s
    Routed routed;
    for (std::string_view served : {"/mutate", "/validate", "/healthz", "/readyz", "/metrics"}) {
        if (target == served) routed.endpoint = served;
    }
    auto respond = [&](http::status status, std::string body, std::string_view content_type) {
        routed.response = make_response(status, std::move(body), content_type, request.version(), keep_alive);
        return std::move(routed);
    };
    const bool is_post = request.method() == http::verb::post;
    const bool is_get = request.method() == http::verb::get;
    if (target == "/mutate" || target == "/validate") {
        if (!is_post) return respond(http::status::method_not_allowed, "use POST\n", "text/plain");
        routed.admission = handle_admission(target == "/mutate" ? Endpoint::mutate : Endpoint::validate, request.body(),
                                            shared.config, &shared.review_cache);
        return respond(static_cast<http::status>(routed.admission->status), std::move(routed.admission->body),
                       routed.admission->content_type);
    }
    if (target == "/healthz" && is_get) return respond(http::status::ok, "ok\n", "text/plain");
    if (target == "/readyz" && is_get) {
        if (shared.draining) return respond(http::status::service_unavailable, "draining\n", "text/plain");
        return respond(http::status::ok, "ready\n", "text/plain");
    }
    if (target == "/metrics" && is_get) {
        return respond(http::status::ok, shared.metrics.render(), "text/plain; version=0.0.4");
    }
    routed.endpoint = "other";  // also a served path asked with the wrong method: /healthz by POST
    return respond(http::status::not_found,
                   "not found: POST /mutate, POST /validate, GET /healthz, /readyz, /metrics\n", "text/plain");
}

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(net::basic_stream_socket<tcp, Executor>&& socket, std::shared_ptr<ssl::context> tls, Shared& shared)
        : tls_(std::move(tls)), stream_(std::move(socket), *tls_), shared_(shared) {
        // Asio sets RELEASE_BUFFERS: OpenSSL then frees and allocates its
        // ~17 KB record buffers around every request of a keep-alive
        // connection (measured with one other change: 70.5 -> 67 us of CPU
        // per cached /mutate, docs/performance.md). The API server keeps a
        // few connections open, so holding them costs little memory.
        SSL_clear_mode(stream_.native_handle(), SSL_MODE_RELEASE_BUFFERS);
        ++shared_.open_sessions;
    }
    ~Session() {
        if (--shared_.open_sessions == 0 && shared_.draining) shared_.on_last_session_closed();
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    void start() {
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->handshake(); });
    }

    // From another thread: close at once when idle, else after the answer.
    void drain() {
        net::post(stream_.get_executor(), [self = shared_from_this()] {
            self->draining_ = true;
            if (!self->in_request()) beast::get_lowest_layer(self->stream_).cancel();
        });
    }

private:
    // Every step runs under the stream's expiry (beast::basic_stream):
    // when it passes, the socket is closed and the step under way fails
    // with beast::error::timeout. An expiry set once covers every read and
    // write until it is set again.
    void expire_after(std::chrono::milliseconds timeout) { beast::get_lowest_layer(stream_).expires_after(timeout); }

    [[nodiscard]] bool in_request() const { return writing_ || request_started_; }

    void handshake() {
        expire_after(shared_.options.handshake_timeout);
        stream_.async_handshake(ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
            if (ec) return;  // scanners, health probes on the TLS port, clients giving up: nothing to answer
            self->read();
        });
    }

    void read() {
        if (draining_) return close();
        parser_.emplace();
        parser_->body_limit(shared_.options.body_limit);
        parser_->header_limit(64 * 1024);
        request_started_ = false;
        // The next request's first bytes came with the last one's.
        if (buffer_.size() > 0) return read_request();
        // Waiting for a request is the idle timeout; the request's own
        // deadline starts with its first byte.
        expire_after(shared_.options.idle_timeout);
        stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                                [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                    self->buffer_.commit(n);
                                    if (ec) return self->on_read_error(ec);
                                    self->read_request();
                                });
    }

    // One deadline from the first byte of a request to the last of its
    // body, however slowly the bytes come: a client trickling its header
    // a byte at a time is cut off with the rest. The expiry is set here
    // once; reading the header and the body does not move it.
    void read_request() {
        request_started_ = true;
        expire_after(shared_.options.request_timeout);
        http::async_read_header(
            stream_, buffer_, *parser_,
            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
    }

    void on_header(beast::error_code ec) {
        if (ec) return on_read_error(ec);
        if (refuse_codings()) return;
        http::async_read(stream_, buffer_, *parser_,
                         [self = shared_from_this()](beast::error_code ec2, std::size_t) { self->on_read(ec2); });
    }

    // The body is read as it comes: chunked framing is the only transfer
    // coding undone (RFC 9112 6.1: 501 for any other) and the content is
    // never decompressed (RFC 9110 15.5.16: 415). Beast reads
    // "Transfer-Encoding: gzip" as a request without a body.
    bool refuse_codings() {
        for (const auto& field : parser_->get()) {
            const std::string_view value = trim(field.value());
            if (field.name() == http::field::transfer_encoding && !beast::iequals(value, "chunked")) {
                send_error(http::status::not_implemented,
                           "Transfer-Encoding '" + printable_text(value) +
                               "' is not supported: send the body as it is or chunked\n",
                           "unsupported_transfer_encoding");
                return true;
            }
            if (field.name() == http::field::content_encoding && !beast::iequals(value, "identity")) {
                send_error(http::status::unsupported_media_type,
                           "Content-Encoding '" + printable_text(value) +
                               "' is not supported: send the AdmissionReview uncompressed\n",
                           "unsupported_content_encoding");
                return true;
            }
        }
        return false;
    }

    void on_read_error(beast::error_code ec) {
        if (ec == http::error::body_limit) {
            return send_error(http::status::payload_too_large,
                              "request body over " + std::to_string(shared_.options.body_limit) + " bytes\n",
                              "body_too_large");
        }
        if (ec == http::error::end_of_stream || ec == net::error::operation_aborted || ec == beast::error::timeout ||
            ec == net::ssl::error::stream_truncated) {
            return close();
        }
        if (parser_ && parser_->got_some()) {
            return send_error(http::status::bad_request, "malformed HTTP request: " + ec.message() + "\n", "bad_http");
        }
        close();
    }

    void on_read(beast::error_code ec) {
        if (ec) return on_read_error(ec);
        started_ = Clock::now();
        const http::request<http::string_body> request = parser_->release();
        Routed routed = route(request, shared_, request.keep_alive() && !draining_ && !shared_.draining);
        response_ = std::move(routed.response);
        endpoint_ = routed.endpoint;
        admission_ = std::move(routed.admission);
        error_ = {};
        write();
    }

    // Answered before the request was read to its end: not kept alive, the
    // rest of the stream cannot be trusted. reason: the errors counter's.
    void send_error(http::status status, std::string text, std::string_view reason) {
        response_ = make_response(status, "launchguard-webhook: " + std::move(text), "text/plain", 11, false);
        started_ = Clock::now();
        endpoint_ = "error";
        admission_.reset();
        error_ = reason;
        discard_after_write_ = true;
        write();
    }

    // After an error answered before the request was read to its end (413,
    // 415, 501, 400): a client still sending its body would get a TCP reset
    // for the unread bytes if the socket closed now, and the reset can
    // destroy the answer before the client reads it. Read and drop what
    // keeps coming, up to a bound of time and bytes, then close.
    void discard_rest() {
        if (!discarding_) {
            discarding_ = true;
            expire_after(kDiscardTime);
        }
        buffer_.clear();
        stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                                [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                    self->discarded_ += n;
                                    if (ec || self->discarded_ >= kDiscardBytes) return self->close();
                                    self->discard_rest();
                                });
    }

    // Writes response_, then counts and logs the request (observe.h).
    void write() {
        writing_ = true;
        expire_after(shared_.options.request_timeout);
        http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            self->writing_ = false;
            observe(self->shared_.metrics, self->shared_.log,
                    Served{self->endpoint_, self->response_.result_int(), Clock::now() - self->started_,
                           self->admission_ ? &*self->admission_ : nullptr, self->error_});
            if (!ec && self->discard_after_write_) return self->discard_rest();
            if (ec || !self->response_.keep_alive()) return self->close();
            self->read();
        });
    }

    void close() {
        if (closing_) return;
        closing_ = true;
        expire_after(std::chrono::seconds(2));
        stream_.async_shutdown([self = shared_from_this()](beast::error_code) {
            beast::error_code ignored;
            beast::get_lowest_layer(self->stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
            beast::get_lowest_layer(self->stream_).close();
        });
    }

    std::shared_ptr<ssl::context> tls_;  // kept alive for this connection across certificate reloads
    Stream stream_;
    Shared& shared_;
    beast::flat_buffer buffer_;
    static constexpr std::size_t kFirstReadBytes = 16 * 1024;  // one TLS record's plaintext
    // What is read and dropped after an early error answer (discard_rest):
    // the largest --max-body-mib, for at most 5 s.
    static constexpr std::size_t kDiscardBytes = 64U << 20;
    static constexpr std::chrono::milliseconds kDiscardTime{5'000};
    std::optional<http::request_parser<http::string_body>> parser_;
    Response response_;
    std::string_view endpoint_;  // a literal (route, send_error)
    std::optional<Answer> admission_;
    std::string_view error_;  // a literal (send_error)
    Clock::time_point started_{};
    bool writing_ = false;
    bool request_started_ = false;  // a byte of the request has come
    bool discard_after_write_ = false;
    bool discarding_ = false;
    std::size_t discarded_ = 0;
    bool draining_ = false;
    bool closing_ = false;
};

}  // namespace

struct Server::Impl {
    Impl(ServerOptions options, const WebhookConfig& config, CertificateStore& certificates, Metrics& metrics, Log& log)
        : shared{std::move(options), config, certificates, metrics, log, {}, {}, {}},
          io(make_contexts(shared.options.threads)),
          control(net::make_strand(*io.front())),
          acceptor(control),
          reload_timer(control),
          drain_timer(control),
          accept_timer(control),
          signals(control, SIGTERM, SIGINT, SIGHUP) {
        shared.on_last_session_closed = [this] { net::post(control, [this] { drain_timer.cancel(); }); };
        for (auto& context : io) keep_running.emplace_back(net::make_work_guard(*context));
    }

    // One io_context per thread, each connection on one of them: every step
    // of a request runs on the thread that read it, with no wake-up of
    // another thread between steps (that hand-off was most of the p50 at
    // 1,000 requests/s on a loaded machine).
    static std::vector<std::unique_ptr<net::io_context>> make_contexts(int threads) {
        std::vector<std::unique_ptr<net::io_context>> contexts;
        for (int i = 0; i < std::max(threads, 1); ++i) contexts.push_back(std::make_unique<net::io_context>(1));
        return contexts;
    }

    Shared shared;
    std::vector<std::unique_ptr<net::io_context>> io;
    // Idle threads wait for connections until the drain begins.
    std::vector<net::executor_work_guard<net::io_context::executor_type>> keep_running;
    std::size_t next_context = 0;
    // The acceptor, the timers and the signals live on one strand: drain()
    // may be called from any thread, and sessions end on theirs.
    net::strand<net::io_context::executor_type> control;
    tcp::acceptor acceptor;
    net::steady_timer reload_timer;
    net::steady_timer drain_timer;
    // accept() failing (no file descriptors left: EMFILE, ENFILE) fails again
    // at once while the connection waits in the backlog: wait this long
    // before the next try, and log the failures once per interval.
    static constexpr std::chrono::milliseconds kAcceptBackoff{100};
    static constexpr std::chrono::seconds kAcceptLogInterval{10};
    net::steady_timer accept_timer;
    Clock::time_point accept_error_logged{};
    std::size_t accept_errors_unlogged = 0;
    net::signal_set signals;
    std::mutex sessions_mutex;
    std::vector<std::weak_ptr<Session>> sessions;

    void accept() {
        net::io_context& context = *io[next_context++ % io.size()];
        acceptor.async_accept(
            context.get_executor(), [this](beast::error_code ec, net::basic_stream_socket<tcp, Executor> socket) {
                if (ec) {
                    if (ec == net::error::operation_aborted || shared.draining) return;
                    return accept_failed(ec);
                } else {
                    // Answers are small and the client waits for each: no Nagle delay.
                    beast::error_code ignored;
                    socket.set_option(tcp::no_delay(true), ignored);
                    auto session = std::make_shared<Session>(std::move(socket), shared.certificates.current(), shared);
                    remember(session);
                    session->start();
                }
                if (!shared.draining) accept();
            });
    }

    void accept_failed(beast::error_code ec) {
        ++accept_errors_unlogged;
        const Clock::time_point now = Clock::now();
        if (accept_error_logged == Clock::time_point{} || now - accept_error_logged >= kAcceptLogInterval) {
            shared.log.write("warn", "accept failed; retrying every 100 ms, logged once per 10 s",
                             {{"error", ec.message()}, {"failures", std::to_string(accept_errors_unlogged)}});
            accept_error_logged = now;
            accept_errors_unlogged = 0;
        }
        accept_timer.expires_after(kAcceptBackoff);
        accept_timer.async_wait([this](beast::error_code timer_ec) {
            if (!timer_ec && !shared.draining) accept();
        });
    }

    void remember(const std::shared_ptr<Session>& session) {
        std::lock_guard lock(sessions_mutex);
        if (sessions.size() > 64 && sessions.size() % 64 == 0) {
            std::erase_if(sessions, [](const std::weak_ptr<Session>& s) { return s.expired(); });
        }
        sessions.push_back(session);
    }

    void watch_certificates() {
        reload_timer.expires_after(shared.options.certificate_check);
        reload_timer.async_wait([this](beast::error_code ec) {
            if (ec || shared.draining) return;
            check_certificates(false);
            watch_certificates();
        });
    }

    // forced: SIGHUP, which loads the files even when they look unchanged
    // and always says what came of it.
    void check_certificates(bool forced) {
        CertificateStore::Reload reload = shared.certificates.check(forced);
        if (reload.loaded) {
            shared.metrics.certificate_reload(true);
            shared.log.write("info", "serving certificate reloaded", {{"trigger", forced ? "SIGHUP" : "file change"}});
        } else if (reload.changed && (forced || !reload.repeated)) {
            shared.metrics.certificate_reload(false);
            shared.log.write("warn", "serving certificate changed but does not load yet; keeping the previous one",
                             {{"error", reload.error}});
        }
    }

    // SIGTERM and SIGINT drain; SIGHUP reloads the certificate pair (the
    // configuration is read only at start: a restart applies it).
    void wait_for_signal() {
        signals.async_wait([this](beast::error_code ec, int signal) {
            if (ec) return;
            if (signal != SIGHUP) return drain();
            shared.log.write("info", "SIGHUP: reloading the serving certificate; --config changes need a restart", {});
            check_certificates(true);
            wait_for_signal();
        });
    }

    void drain() {
        if (shared.draining.exchange(true)) return;
        net::post(control, [this] { begin_drain(); });
    }

    void begin_drain() {
        beast::error_code ignored;
        acceptor.close(ignored);
        reload_timer.cancel();
        accept_timer.cancel();
        signals.cancel();
        std::vector<std::shared_ptr<Session>> open;
        {
            std::lock_guard lock(sessions_mutex);
            for (auto& weak : sessions) {
                if (auto session = weak.lock()) open.push_back(std::move(session));
            }
            sessions.clear();
        }
        for (auto& session : open) session->drain();
        shared.log.write("info", "draining", {{"connections", std::to_string(open.size())}});
        keep_running.clear();  // each thread returns once its connections are closed
        const bool idle = open.empty() && shared.open_sessions == 0;
        open.clear();
        if (idle) return;  // nothing in flight: run() returns now
        drain_timer.expires_after(shared.options.drain_timeout);
        drain_timer.async_wait([this](beast::error_code ec) {
            if (ec) return;  // the last connection closed first
            shared.log.write("warn", "drain timeout: stopping with requests still open", {});
            for (auto& context : io) context->stop();
        });
    }
};

Server::Server(ServerOptions options, const WebhookConfig& config, CertificateStore& certificates, Metrics& metrics,
               Log& log)
    : impl_(std::make_unique<Impl>(std::move(options), config, certificates, metrics, log)) {}

Server::~Server() = default;

Result<unsigned short> Server::listen() {
    beast::error_code ec;
    auto address = net::ip::make_address(impl_->shared.options.address, ec);
    if (ec) return make_error("--listen: '" + impl_->shared.options.address + "' is not an IP address");
    tcp::endpoint endpoint{address, impl_->shared.options.port};
    auto& acceptor = impl_->acceptor;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
        return make_error("--listen " + impl_->shared.options.address + ":" +
                          std::to_string(impl_->shared.options.port) + ": " + ec.message());
    }
    return acceptor.local_endpoint().port();
}

void Server::run() {
    Impl& impl = *impl_;
    impl.wait_for_signal();
    impl.accept();
    impl.watch_certificates();
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < impl.io.size(); ++i) threads.emplace_back([&impl, i] { impl.io[i]->run(); });
    impl.io.front()->run();
    for (auto& t : threads) t.join();
}

void Server::drain() { impl_->drain(); }

}  // namespace launchguard::webhook
