#include "net/ws/deflate.hpp"

#include <zlib.h>

#include <array>
#include <new>

namespace herald::net::ws {

namespace {

// One stream of each kind per thread, made on first use and reset per message.
struct deflater {
  z_stream z{};
  deflater() {
    if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::bad_alloc{};
  }
  ~deflater() { deflateEnd(&z); }
  deflater(const deflater&) = delete;
  deflater& operator=(const deflater&) = delete;
};

struct inflater {
  z_stream z{};
  inflater() {
    if (inflateInit2(&z, -15) != Z_OK)
      throw std::bad_alloc{};
  }
  ~inflater() { inflateEnd(&z); }
  inflater(const inflater&) = delete;
  inflater& operator=(const inflater&) = delete;
};

constexpr unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};

} // namespace

std::string deflate_message(std::string_view payload) {
  thread_local deflater d;
  z_stream& z = d.z;
  deflateReset(&z);
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(payload.size())) + 16);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(payload.data()));
  z.avail_in = static_cast<uInt>(payload.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  // deflateBound() leaves room for a sync flush's marker too: one call ends it.
  deflate(&z, Z_SYNC_FLUSH);
  out.resize(out.size() - z.avail_out);
  if (out.size() >= 4 && std::string_view(out).substr(out.size() - 4) ==
                           std::string_view(reinterpret_cast<const char*>(tail), 4))
    out.resize(out.size() - 4);
  return out;
}

inflate_status inflate_message(std::string_view compressed, std::size_t max_bytes,
                               std::string& out) {
  thread_local inflater f;
  z_stream& z = f.z;
  inflateReset(&z);
  out.clear();
  std::array<char, 16384> chunk;
  // The message, then the tail the sender removed (section 7.2.2).
  const std::string_view parts[2] = {compressed,
                                     {reinterpret_cast<const char*>(tail), sizeof tail}};
  for (const auto& part : parts) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(part.data()));
    z.avail_in = static_cast<uInt>(part.size());
    // Until this part is used up and inflate has no output left to give
    // (a full chunk may leave some behind).
    do {
      z.next_out = reinterpret_cast<Bytef*>(chunk.data());
      z.avail_out = static_cast<uInt>(chunk.size());
      const int rc = inflate(&z, Z_SYNC_FLUSH);
      const std::size_t made = chunk.size() - z.avail_out;
      if (made > max_bytes - out.size())
        return inflate_status::too_big;
      out.append(chunk.data(), made);
      if (rc == Z_STREAM_END) // a final block: nothing of the message may follow it
        return &part == &parts[0] && z.avail_in > 0 ? inflate_status::corrupt
                                                    : inflate_status::ok;
      if (rc == Z_BUF_ERROR && z.avail_in == 0)
        break; // wants more input: the next part
      if (rc != Z_OK)
        return inflate_status::corrupt; // Z_DATA_ERROR, Z_NEED_DICT, Z_MEM_ERROR, no progress
    } while (z.avail_in > 0 || z.avail_out == 0);
  }
  // Without a final block the stream must end on a block boundary, which the
  // sync-flush tail brings: inflate has consumed it all with output flushed.
  return inflate_status::ok;
}

} // namespace herald::net::ws
