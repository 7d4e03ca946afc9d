// The serving certificate: TLS 1.2 and 1.3 only, forward-secret AEAD ciphers,
// ALPN http/1.1 (the API server speaks nothing else to webhooks), and reload
// when the files change. cert-manager and the chart's own rotation rewrite
// the mounted Secret; a server that keeps the old certificate fails every
// admission once it expires, the most common webhook outage there is.
#pragma once

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <mutex>
#include <string>

#include "util/error.h"

namespace launchguard::webhook {

namespace ssl = boost::asio::ssl;

// A server context from PEM files; the error names the file and OpenSSL's reason.
Result<std::shared_ptr<ssl::context>> make_server_context(const std::string& cert_file, const std::string& key_file);

// Hands each new connection the current context. check() reloads when either
// file changed (size, mtime or inode: a Secret update swaps a symlink); a pair
// that does not load (half-written, key and certificate of different pairs)
// keeps the old context and is tried again at the next check. Only regular
// files are read (util/input_file.h): a FIFO, a device or a directory in
// place of a file is refused without blocking, and the old pair stays.
class CertificateStore {
public:
    static Result<std::unique_ptr<CertificateStore>> open(std::string cert_file, std::string key_file);

    [[nodiscard]] std::shared_ptr<ssl::context> current() const;
    struct Reload {
        bool changed = false;   // the files differ from what is loaded
        bool loaded = false;    // and the new pair is in use
        std::string error;      // why it is not, when it is not
        bool repeated = false;  // the same files failed the same way at the last check: already reported
    };
    // force: load the files even when they look unchanged (SIGHUP).
    Reload check(bool force = false);

private:
    CertificateStore(std::string cert_file, std::string key_file)
        : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}
    [[nodiscard]] std::string fingerprint() const;

    std::string cert_file_;
    std::string key_file_;
    mutable std::mutex mutex_;
    std::shared_ptr<ssl::context> context_;
    std::string loaded_fingerprint_;
    std::string failed_fingerprint_;  // only check() touches these: one thread
    std::string failed_error_;
};

}  // namespace launchguard::webhook
