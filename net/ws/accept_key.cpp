#include "net/ws/accept_key.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

namespace herald::net::ws {

std::string accept_key(std::string_view key) {
  static constexpr std::string_view guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  std::string text;
  text.reserve(key.size() + guid.size());
  text.append(key).append(guid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char out[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1]; // 28 characters and the NUL
  const int n = EVP_EncodeBlock(out, digest, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
}

} // namespace herald::net::ws
