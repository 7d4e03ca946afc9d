#include "fleet/prometheus_client.h"

#include <fmt/format.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "fleet/fleet_render.h"
#include "fleet/prometheus_source.h"

namespace launchguard::fleet {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Response {
    unsigned status = 0;
    std::string body;
};

// Runs one asynchronous step until it completes or the deadline passes;
// then `cancel` closes the socket and the step ends with timed_out.
template <typename Start, typename Cancel>
beast::error_code run_step(asio::io_context& ioc, Clock::time_point deadline, Start start, Cancel cancel) {
    bool done = false;
    beast::error_code result;
    start([&](beast::error_code ec, auto&&...) {
        result = ec;
        done = true;
    });
    ioc.restart();
    const auto left = deadline - Clock::now();
    ioc.run_for(left > Clock::duration::zero() ? left : Clock::duration::zero());
    if (!done) {
        cancel();
        ioc.restart();
        ioc.run();
        return asio::error::timed_out;
    }
    return result;
}

template <typename Stream>
std::optional<Response> exchange(asio::io_context& ioc, Stream& stream, tcp::socket& socket, const PrometheusUrl& url,
                                 const std::string& target, Clock::time_point deadline, std::size_t max_bytes,
                                 std::string& error) {
    auto close = [&] {
        beast::error_code ignored;
        socket.close(ignored);
    };
    http::request<http::empty_body> request{http::verb::get, target, 11};
    request.set(http::field::host, url.host + ":" + url.port);
    request.set(http::field::user_agent, "launchguard/" LAUNCHGUARD_VERSION);
    request.set(http::field::accept, "application/json");
    request.set(http::field::connection, "close");
    beast::error_code ec = run_step(
        ioc, deadline, [&](auto handler) { http::async_write(stream, request, handler); }, close);
    if (ec) {
        error = "sending the request: " + ec.message();
        return std::nullopt;
    }
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_bytes);
    parser.header_limit(64 * 1024);
    ec = run_step(
        ioc, deadline, [&](auto handler) { http::async_read(stream, buffer, parser, handler); }, close);
    if (ec == http::error::body_limit) {
        error = fmt::format("the response is larger than {} bytes", max_bytes);
        return std::nullopt;
    }
    if (ec) {
        error = "reading the response: " + ec.message();
        return std::nullopt;
    }
    Response response;
    response.status = parser.get().result_int();
    response.body = std::move(parser.get().body());
    return response;
}

std::optional<Response> http_get(const PrometheusUrl& url, const std::string& target, std::chrono::milliseconds timeout,
                                 std::size_t max_bytes, std::string& error) {
    asio::io_context ioc;
    const auto deadline = Clock::now() + timeout;
    tcp::resolver resolver(ioc);
    tcp::resolver::results_type endpoints;
    beast::error_code ec = run_step(
        ioc, deadline,
        [&](auto handler) {
            resolver.async_resolve(url.host, url.port,
                                   [&, handler](beast::error_code e, tcp::resolver::results_type r) {
                                       endpoints = std::move(r);
                                       handler(e);
                                   });
        },
        [&] { resolver.cancel(); });
    if (ec) {
        error = "resolving " + url.host + ": " + ec.message();
        return std::nullopt;
    }
    tcp::socket socket(ioc);
    auto close = [&] {
        beast::error_code ignored;
        socket.close(ignored);
    };
    ec = run_step(
        ioc, deadline, [&](auto handler) { asio::async_connect(socket, endpoints, handler); }, close);
    if (ec) {
        error = "connecting: " + ec.message();
        return std::nullopt;
    }
    if (!url.tls) return exchange(ioc, socket, socket, url, target, deadline, max_bytes, error);

    asio::ssl::context context(asio::ssl::context::tls_client);
    context.set_default_verify_paths();
    context.set_verify_mode(asio::ssl::verify_peer);
    asio::ssl::stream<tcp::socket&> tls(socket, context);
    tls.set_verify_callback(asio::ssl::host_name_verification(url.host));
    // SSL_set_tlsext_host_name, spelled out: the macro's C cast trips -Wold-style-cast.
    if (SSL_ctrl(tls.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 static_cast<void*>(const_cast<char*>(url.host.c_str()))) != 1) {
        error = "TLS: cannot set the server name " + url.host;
        return std::nullopt;
    }
    ec = run_step(
        ioc, deadline, [&](auto handler) { tls.async_handshake(asio::ssl::stream_base::client, handler); }, close);
    if (ec) {
        error = "TLS handshake: " + ec.message();
        return std::nullopt;
    }
    return exchange(ioc, tls, socket, url, target, deadline, max_bytes, error);
}

std::string printable_excerpt(std::string_view body) {
    std::string out;
    for (char c : body.substr(0, 200)) out += std::isprint(static_cast<unsigned char>(c)) ? c : ' ';
    return out;
}

std::string number(double seconds) { return fmt::format("{:.3f}", seconds); }

// One query: its series, or nullopt with `error` naming the query and what
// Prometheus (or the transport) said.
std::optional<std::vector<Series>> query(const PrometheusRequest& request, const std::string& target,
                                         std::string_view promql, std::string& error) {
    std::string why;
    auto response = http_get(request.url, target, request.timeout, request.max_response_bytes, why);
    if (!response) {
        error = "query " + std::string(promql) + ": " + why;
        return std::nullopt;
    }
    std::size_t skipped = 0;
    auto series = parse_query_response(response->body, why, &skipped);
    if (!series) {
        // Prometheus answers errors (400, 422, 503) with the same JSON.
        error = "query " + std::string(promql) + ": HTTP " + std::to_string(response->status) + ": " + why;
        if (why.starts_with("the response is not JSON"))
            error += " (body begins: " + printable_excerpt(response->body) + ")";
        return std::nullopt;
    }
    if (response->status != 200) {
        error = "query " + std::string(promql) + ": HTTP " + std::to_string(response->status);
        return std::nullopt;
    }
    return series;
}

}  // namespace

std::optional<PrometheusUrl> parse_prometheus_url(std::string_view text, std::string& error) {
    PrometheusUrl url;
    url.text = std::string(text);
    std::string_view rest;
    if (text.starts_with("http://")) {
        rest = text.substr(7);
    } else if (text.starts_with("https://")) {
        url.tls = true;
        rest = text.substr(8);
    } else {
        error = "'" + std::string(text) + "' is not an http:// or https:// URL";
        return std::nullopt;
    }
    const std::size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (authority.find('@') != std::string_view::npos) {
        error = "'" + std::string(text) + "': user names and passwords in the URL are not supported";
        return std::nullopt;
    }
    if (path.find_first_of("?#") != std::string_view::npos) {
        error = "'" + std::string(text) + "': the URL may not have a query or fragment";
        return std::nullopt;
    }
    std::string_view port;
    if (authority.starts_with('[')) {
        const std::size_t close = authority.find(']');
        if (close == std::string_view::npos) {
            error = "'" + std::string(text) + "': unclosed [ in the host";
            return std::nullopt;
        }
        url.host = std::string(authority.substr(1, close - 1));
        std::string_view after = authority.substr(close + 1);
        if (after.starts_with(':'))
            port = after.substr(1);
        else if (!after.empty()) {
            error = "'" + std::string(text) + "': text after the host";
            return std::nullopt;
        }
    } else {
        const std::size_t colon = authority.rfind(':');
        url.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) port = authority.substr(colon + 1);
    }
    if (url.host.empty()) {
        error = "'" + std::string(text) + "': no host";
        return std::nullopt;
    }
    if (!port.empty()) {
        const bool digits = std::all_of(port.begin(), port.end(),
                                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
        if (!digits || port.size() > 5 || std::stoi(std::string(port)) > 65535 || std::stoi(std::string(port)) == 0) {
            error = "'" + std::string(text) + "': port '" + std::string(port) + "' is not a port number";
            return std::nullopt;
        }
        url.port = std::string(port);
    } else {
        url.port = url.tls ? "443" : "9090";
    }
    while (path.ends_with('/')) path.remove_suffix(1);
    url.prefix = std::string(path);
    return url;
}

std::optional<double> parse_duration_seconds(std::string_view text) {
    if (text.empty()) return std::nullopt;
    double total = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t start = pos;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
        if (pos == start || pos - start > 9) return std::nullopt;
        const double amount = std::stod(std::string(text.substr(start, pos - start)));
        double unit = 0;
        if (text.substr(pos).starts_with("ms")) {
            unit = 0.001;
            pos += 2;
        } else if (pos < text.size()) {
            switch (text[pos]) {
                case 's':
                    unit = 1;
                    break;
                case 'm':
                    unit = 60;
                    break;
                case 'h':
                    unit = 3600;
                    break;
                case 'd':
                    unit = 86400;
                    break;
                case 'w':
                    unit = 7 * 86400;
                    break;
                case 'y':
                    unit = 365 * 86400;
                    break;
                default:
                    return std::nullopt;
            }
            ++pos;
        } else {
            return std::nullopt;
        }
        total += amount * unit;
    }
    if (total <= 0) return std::nullopt;
    return total;
}

std::optional<double> parse_time_seconds(std::string_view text) {
    if (auto t = parse_rfc3339(text)) return static_cast<double>(*t);
    if (text.empty() || text.size() > 20 || text.front() == '.' ||
        text.find_first_not_of("0123456789.") != std::string_view::npos)
        return std::nullopt;
    const std::string s(text);
    char* end = nullptr;
    const double value = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(value)) return std::nullopt;
    return value;
}

std::string url_encode(std::string_view text) {
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
            out += static_cast<char>(c);
        else
            out += fmt::format("%{:02X}", c);
    }
    return out;
}

std::optional<FleetInput> read_prometheus(const PrometheusRequest& request, std::string& error) {
    const double at =
        request.at.value_or(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    // The range first, so that a range Prometheus would refuse costs no query.
    const double start = request.since.value_or(0);
    if (request.since && start >= at) {
        error = request.url.text + ": the history range starts (" + number(start) + ") at or after its end (" +
                number(at) + ")";
        return std::nullopt;
    }
    const double step = request.step.value_or(std::max(1.0, std::ceil((at - start) / 120.0)));
    if (request.since && (at - start) / step > 11000) {
        error = request.url.text + ": " + thousands(static_cast<std::size_t>(std::min((at - start) / step, 1e15))) +
                " points per series over this range at this step; Prometheus answers at most 11,000 (raise --step)";
        return std::nullopt;
    }
    // Prometheus stops a query at its own deadline too.
    const std::string timeout = fmt::format("{}s", std::max<long long>(1, request.timeout.count() / 1000));
    // Each answer goes into the records before the next is read, so that
    // fleet holds one answer at a time beside the records.
    SeriesRecords records(request.url.text);
    for (const auto& q : record_queries()) {
        const std::string target = request.url.prefix + "/api/v1/query?query=" + url_encode(q.promql) +
                                   "&time=" + number(at) + "&timeout=" + timeout;
        auto result = query(request, target, q.promql, error);
        if (!result || !records.add(q.metric, *result, error)) {
            error = request.url.text + ": " + (result ? "query " + std::string(q.promql) + ": " : "") + error;
            return std::nullopt;
        }
    }
    FleetInput input = records.finish();
    if (!request.since) return input;
    auto range = [&](std::string_view promql) {
        const std::string target = request.url.prefix + "/api/v1/query_range?query=" + url_encode(promql) +
                                   "&start=" + number(start) + "&end=" + number(at) + "&step=" + number(step) +
                                   "&timeout=" + timeout;
        return query(request, target, promql, error);
    };
    auto nodes = range(history_nodes_query());
    if (!nodes) {
        error = request.url.text + ": " + error;
        return std::nullopt;
    }
    auto conforming = range(history_conforming_query());
    if (!conforming) {
        error = request.url.text + ": " + error;
        return std::nullopt;
    }
    input.history = history_from_series(*nodes, *conforming);
    return input;
}

}  // namespace launchguard::fleet
