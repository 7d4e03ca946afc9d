// launchguard-webhook's HTTPS server: Boost.Beast over OpenSSL, HTTP/1.1
// with keep-alive (the only protocol the API server uses for webhooks), one
// single-threaded io_context per thread with each connection on one of them
// (its implicit strand: a connection's handlers never run concurrently),
// beast::basic_stream's expiry on every step, a body limit, and one error
// path. Every request is counted and logged by one wrapper (observe.h). SIGTERM drains: the listener closes, /readyz
// turns 503, idle connections close, requests in flight complete and are answered with `Connection: close`, then the
// process exits. SIGHUP reloads the certificate pair and keeps serving.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "log.h"
#include "metrics.h"
#include "tls.h"
#include "util/error.h"
#include "webhook_config.h"

namespace launchguard::webhook {

struct ServerOptions {
    std::string address = "0.0.0.0";
    unsigned short port = 8443;
    int threads = 2;
    std::size_t body_limit = 8U << 20;  // 413 past it
    // --handshake-timeout, --request-timeout, --idle-timeout, --drain-timeout (seconds)
    std::chrono::milliseconds handshake_timeout{10'000};
    std::chrono::milliseconds request_timeout{10'000};   // from the first byte of a request to the last of its body
    std::chrono::milliseconds idle_timeout{90'000};      // keep-alive between requests
    std::chrono::milliseconds drain_timeout{20'000};     // in-flight work after SIGTERM
    std::chrono::milliseconds certificate_check{1'000};  // how often the files are looked at
    // Verdicts kept for objects seen again (review_cache.h); 0 entries: none.
    std::size_t review_cache_entries = 1024;
    std::size_t review_cache_bytes = 16U << 20;
};

class Server {
public:
    Server(ServerOptions options, const WebhookConfig& config, CertificateStore& certificates, Metrics& metrics,
           Log& log);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds and listens; the port actually bound (for port 0).
    Result<unsigned short> listen();
    // Serves on options.threads threads until drained; returns when every
    // connection is closed (or the drain timeout passed).
    void run();
    // Thread-safe; what SIGTERM and SIGINT do (SIGHUP reloads the certificate).
    void drain();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace launchguard::webhook
