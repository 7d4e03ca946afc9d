#include "tls.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <cstring>

#include "util/input_file.h"

namespace launchguard::webhook {
namespace {

// Mozilla's "intermediate" TLS 1.2 suites: ECDHE with AES-GCM or ChaCha20.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

std::string openssl_reason() {
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0) return "unknown OpenSSL error";
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    return buffer;
}

int select_http11(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void* /*arg*/) {
    // The client's list: length-prefixed protocol names.
    for (unsigned int i = 0; i < inlen;) {
        const unsigned int len = in[i];
        if (i + 1 + len > inlen) break;
        if (len == 8 && std::memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + len;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // h2 only: the API server never asks for it
}

std::string stat_key(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return path + ":missing";
    return path + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

// A PEM file is a few KiB; a chain with every intermediate stays far below this.
constexpr std::size_t kMaxPemBytes = 1U << 20;

}  // namespace

Result<std::shared_ptr<ssl::context>> make_server_context(const std::string& cert_file, const std::string& key_file) {
    // Read through the project's file reader, never by OpenSSL's fopen: the
    // reload runs on the thread that accepts connections, and opening a FIFO
    // put in place of a file would wait for a writer forever.
    auto cert_pem = read_text_file(cert_file, kMaxPemBytes);
    if (!cert_pem) return cert_pem.error();
    auto key_pem = read_text_file(key_file, kMaxPemBytes);
    if (!key_pem) return key_pem.error();
    auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
    SSL_CTX* ctx = context->native_handle();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) return make_error("TLS cipher list: " + openssl_reason());
    SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);
    ERR_clear_error();
    boost::system::error_code ec;
    context->use_certificate_chain(boost::asio::buffer(*cert_pem), ec);
    if (ec) return make_file_error(cert_file, 0, "cannot load the TLS certificate: " + ec.message());
    // OpenSSL checks the pair here: a mismatch fails with "key values mismatch".
    context->use_private_key(boost::asio::buffer(*key_pem), ssl::context::pem, ec);
    OPENSSL_cleanse(key_pem->data(), key_pem->size());  // no copy of the key left in freed memory
    if (ec)
        return make_file_error(key_file, 0,
                               "cannot use this key with the certificate " + cert_file + ": " + ec.message());
    if (SSL_CTX_check_private_key(ctx) != 1) {
        return make_file_error(key_file, 0,
                               "the key does not match the certificate " + cert_file + ": " + openssl_reason());
    }
    return context;
}

Result<std::unique_ptr<CertificateStore>> CertificateStore::open(std::string cert_file, std::string key_file) {
    std::unique_ptr<CertificateStore> store(new CertificateStore(std::move(cert_file), std::move(key_file)));
    const std::string before = store->fingerprint();
    auto context = make_server_context(store->cert_file_, store->key_file_);
    if (!context) return context.error();
    store->context_ = std::move(context).value();
    store->loaded_fingerprint_ = before;
    return store;
}

std::string CertificateStore::fingerprint() const { return stat_key(cert_file_) + "|" + stat_key(key_file_); }

std::shared_ptr<ssl::context> CertificateStore::current() const {
    std::lock_guard lock(mutex_);
    return context_;
}

CertificateStore::Reload CertificateStore::check(bool force) {
    Reload reload;
    const std::string now = fingerprint();
    {
        std::lock_guard lock(mutex_);
        if (now == loaded_fingerprint_ && !force) return reload;
    }
    reload.changed = true;
    auto context = make_server_context(cert_file_, key_file_);
    // Files that changed again while they were read are read again next time.
    if (context && fingerprint() != now) context = make_error("the files changed while they were read");
    if (!context) {
        reload.error = context.error().to_string();
        // Tried again at every check, since a fix need not change what stat
        // shows (a permission change), but reported once.
        reload.repeated = now == failed_fingerprint_ && reload.error == failed_error_;
        failed_fingerprint_ = now;
        failed_error_ = reload.error;
        return reload;
    }
    failed_fingerprint_.clear();
    failed_error_.clear();
    std::lock_guard lock(mutex_);
    context_ = std::move(context).value();
    loaded_fingerprint_ = now;
    reload.loaded = true;
    return reload;
}

}  // namespace launchguard::webhook
