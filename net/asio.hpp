// One place for the Asio/Beast namespace aliases used across net/.
// `net` names our own folder, so Boost.Asio is `asio` and Beast is `beast`.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp> // is_upgrade(); the handshake answer is ours

namespace herald::net {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http; // `http` names our net/http folder
namespace websocket = boost::beast::websocket;
using tcp = boost::asio::ip::tcp;
} // namespace herald::net
