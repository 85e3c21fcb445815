// Test helpers: keys generated with OpenSSL at run time and tokens signed by
// libjwt (jwt_encode_str), so no fixture carries a key nobody knows.
#pragma once

#include <jwt.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

namespace herald::test {

/// A generated key pair as PEM text.
struct pem_pair {
  std::string private_pem;
  std::string public_pem;
};

inline pem_pair make_pair(EVP_PKEY* key) {
  auto dump = [&](bool priv) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio{BIO_new(BIO_s_mem()), &BIO_free};
    int ok = priv ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                  : PEM_write_bio_PUBKEY(bio.get(), key);
    if (ok != 1)
      throw std::runtime_error("PEM write failed");
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
  };
  pem_pair p{dump(true), dump(false)};
  EVP_PKEY_free(key);
  return p;
}

/// A fresh RSA key pair of `bits` bits.
inline pem_pair rsa_pair(unsigned bits = 2048) {
  return make_pair(EVP_RSA_gen(bits));
}

/// A fresh EC key pair on P-256.
inline pem_pair ec_pair() {
  return make_pair(EVP_EC_gen("P-256"));
}

/// Signs `claims` with libjwt: `alg` and the key (secret or private PEM);
/// `headers` adds JOSE header parameters (e.g. `crit`) to the signed header.
inline std::string sign(jwt_alg_t alg, const std::string& key, const nlohmann::json& claims,
                        const nlohmann::json& headers = nlohmann::json::object()) {
  jwt_t* j = nullptr;
  if (jwt_new(&j) != 0)
    throw std::runtime_error("jwt_new");
  std::unique_ptr<jwt_t, decltype(&jwt_free)> guard{j, &jwt_free};
  if (jwt_add_grants_json(j, claims.dump().c_str()) != 0)
    throw std::runtime_error("jwt_add_grants_json");
  if (!headers.empty() && jwt_add_headers_json(j, headers.dump().c_str()) != 0)
    throw std::runtime_error("jwt_add_headers_json");
  auto* k = key.empty() ? nullptr : reinterpret_cast<const unsigned char*>(key.data());
  if (jwt_set_alg(j, alg, k, static_cast<int>(key.size())) != 0)
    throw std::runtime_error("jwt_set_alg");
  char* out = jwt_encode_str(j);
  if (!out)
    throw std::runtime_error("jwt_encode_str");
  std::string s{out};
  std::free(out);
  return s;
}

/// base64url without padding (RFC 7515 §2), for hand-built attack tokens.
inline std::string b64url(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n =
    EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                    reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=')
    out.pop_back();
  for (auto& c : out)
    c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

} // namespace herald::test
