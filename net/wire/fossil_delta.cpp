#include "net/wire/fossil_delta.hpp"

#include "net/wire/enum_names.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <vector>

namespace herald::net::fossil {

namespace {

// -- integers ----------------------------------------------------------------

constexpr std::string_view digit_chars =
  "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~";
static_assert(digit_chars.size() == 64);

// The value of each byte as a base-64 digit, -1 for a byte that is none.
struct digit_table {
  std::int8_t value[256];
  constexpr digit_table()
    : value{} {
    for (auto& v : value)
      v = -1;
    for (std::size_t i = 0; i < digit_chars.size(); ++i)
      value[static_cast<unsigned char>(digit_chars[i])] = static_cast<std::int8_t>(i);
  }
};
constexpr digit_table digits_of{};

// Digits `v` takes: the format writes zero as "0".
std::size_t digit_count(std::uint32_t v) noexcept {
  std::size_t n = 1;
  while (v >>= 6)
    ++n;
  return n;
}

void put_int(std::string& out, std::uint32_t v) {
  char buf[6]; // 32 bits are at most 6 digits
  std::size_t n = 0;
  do {
    buf[n++] = digit_chars[v & 63];
    v >>= 6;
  } while (v != 0);
  while (n > 0)
    out.push_back(buf[--n]);
}

// -- the encoder's tables ----------------------------------------------------

// Bytes per source block and per rolling window (the reference's NHASH): a
// copy shorter than this is found only by extending a longer match.
constexpr std::size_t block_bytes = 16;

// Source blocks tried per target position: bounds the work on sources that
// repeat one block many times, where every block shares one chain.
constexpr std::size_t max_candidates = 64;

constexpr std::uint32_t no_block = 0xffffffffu;

// Adler-like rolling hash of a `block_bytes` window (the format's reference
// encoder uses this shape): `sum` is the sum of the bytes, `weighted` the sum
// of each byte times its distance from the window's end. Unsigned arithmetic
// wraps modulo 2^32, which keeps both exact modulo 2^16.
struct rolling_hash {
  std::uint32_t sum = 0;
  std::uint32_t weighted = 0;

  void init(const unsigned char* window) noexcept {
    sum = 0;
    weighted = 0;
    for (std::size_t i = 0; i < block_bytes; ++i) {
      sum += window[i];
      weighted += static_cast<std::uint32_t>(block_bytes - i) * window[i];
    }
  }

  // The window moves one byte on: `out` leaves it at the front, `in` enters at the back.
  void slide(unsigned char out, unsigned char in) noexcept {
    sum += static_cast<std::uint32_t>(in) - out;
    weighted += sum - static_cast<std::uint32_t>(block_bytes) * out;
  }

  std::uint32_t value() const noexcept { return (sum & 0xffffu) | (weighted << 16); }
};

// Source blocks by window hash: chained buckets, a power of two of them,
// indexed by the hash's high bits after a multiplicative mix (the low bits
// alone are only the byte sum, which text keeps in a narrow range). Each
// chain lists its blocks in source order, so where a block repeats the
// earliest comes first: it has the longest match ahead of it.
class block_index {
public:
  block_index(const unsigned char* source, std::size_t blocks)
    : next_(blocks) {
    while ((std::size_t{1} << bits_) < blocks)
      ++bits_;
    head_.assign(std::size_t{1} << bits_, no_block);
    rolling_hash h;
    for (std::size_t b = blocks; b-- > 0;) {
      h.init(source + b * block_bytes);
      auto& slot = head_[bucket(h.value())];
      next_[b] = slot;
      slot = static_cast<std::uint32_t>(b);
    }
  }

  std::uint32_t first(std::uint32_t hash) const noexcept { return head_[bucket(hash)]; }
  std::uint32_t next(std::uint32_t block) const noexcept { return next_[block]; }

private:
  std::size_t bucket(std::uint32_t hash) const noexcept {
    return static_cast<std::uint32_t>(hash * 0x9E3779B1u) >> (32 - bits_);
  }

  unsigned bits_ = 1;
  std::vector<std::uint32_t> head_;
  std::vector<std::uint32_t> next_;
};

// How many bytes `a` and `b` share from their start, at most `max`: eight
// bytes per comparison while they agree (the forward extension of a copy is
// most of the encoder's time).
std::size_t shared_prefix(const unsigned char* a, const unsigned char* b,
                          std::size_t max) noexcept {
  std::size_t n = 0;
  for (; n + 8 <= max; n += 8) {
    std::uint64_t x = 0;
    std::uint64_t y = 0;
    std::memcpy(&x, a + n, 8);
    std::memcpy(&y, b + n, 8);
    if (x != y)
      break;
  }
  while (n < max && a[n] == b[n])
    ++n;
  return n;
}

bool is_continuation(unsigned char c) noexcept {
  return (c & 0xC0) == 0x80;
}

struct copy_span {
  std::size_t target_at = 0;
  std::size_t source_at = 0;
  std::size_t bytes = 0;
};

// Keeps inserts whole UTF-8 sequences: moves each end of the copy off a
// continuation byte of the target (the copy's bytes equal the target's, so
// this is where a character of the target begins).
void align_to_characters(copy_span& c, std::string_view target) noexcept {
  const auto* t = reinterpret_cast<const unsigned char*>(target.data());
  while (c.bytes > 0 && is_continuation(t[c.target_at])) {
    ++c.target_at;
    ++c.source_at;
    --c.bytes;
  }
  while (c.bytes > 0 && c.target_at + c.bytes < target.size() &&
         is_continuation(t[c.target_at + c.bytes]))
    --c.bytes;
}

// What writing `c` costs, with the insert header of the literal bytes
// between `pending` (the first target byte not yet written) and the copy.
std::size_t command_bytes(const copy_span& c, std::size_t pending) noexcept {
  std::size_t n = digit_count(static_cast<std::uint32_t>(c.bytes)) +
                  digit_count(static_cast<std::uint32_t>(c.source_at)) + 2;
  if (c.target_at > pending)
    n += digit_count(static_cast<std::uint32_t>(c.target_at - pending)) + 1;
  return n;
}

void put_literal(std::string& out, std::string_view target, std::size_t from, std::size_t to) {
  if (from >= to)
    return;
  put_int(out, static_cast<std::uint32_t>(to - from));
  out.push_back(':');
  out.append(target.data() + from, to - from);
}

void put_copy(std::string& out, const copy_span& c) {
  put_int(out, static_cast<std::uint32_t>(c.bytes));
  out.push_back('@');
  put_int(out, static_cast<std::uint32_t>(c.source_at));
  out.push_back(',');
}

void put_end(std::string& out, std::string_view target) {
  put_int(out, checksum(target));
  out.push_back(';');
}

// -- the decoder's reader ----------------------------------------------------

class reader {
public:
  explicit reader(std::string_view delta) noexcept
    : delta_(delta) {}

  std::size_t at() const noexcept { return at_; }
  std::size_t left() const noexcept { return delta_.size() - at_; }
  bool done() const noexcept { return at_ == delta_.size(); }

  // Reads one integer: at least one digit, at most 2^32 - 1.
  bool integer(std::uint32_t& out) noexcept {
    std::uint64_t v = 0;
    std::size_t start = at_;
    while (at_ < delta_.size()) {
      int d = digits_of.value[static_cast<unsigned char>(delta_[at_])];
      if (d < 0)
        break;
      v = (v << 6) | static_cast<std::uint64_t>(d);
      if (v > 0xffffffffu)
        return false;
      ++at_;
    }
    out = static_cast<std::uint32_t>(v);
    return at_ > start;
  }

  // The next byte, or '\0' past the end (never a valid command there: the
  // callers check done() where a NUL byte could be mistaken).
  char peek() const noexcept { return at_ < delta_.size() ? delta_[at_] : '\0'; }
  void skip(std::size_t n) noexcept { at_ += n; }
  std::string_view take(std::size_t n) noexcept {
    auto s = delta_.substr(at_, n);
    at_ += n;
    return s;
  }

private:
  std::string_view delta_;
  std::size_t at_ = 0;
};

apply_result refuse(apply_error e, std::size_t at) {
  apply_result r;
  r.error = e;
  r.error_at = at;
  return r;
}

} // namespace

// -- create ------------------------------------------------------------------

std::string create(std::string_view source, std::string_view target) {
  assert(source.size() <= 0xffffffffu && target.size() <= 0xffffffffu);
  const auto* src = reinterpret_cast<const unsigned char*>(source.data());
  const auto* tgt = reinterpret_cast<const unsigned char*>(target.data());
  const std::size_t src_size = source.size();
  const std::size_t tgt_size = target.size();

  std::string out;
  out.reserve(64);
  put_int(out, static_cast<std::uint32_t>(tgt_size));
  out.push_back('\n');

  std::size_t pending = 0; // first target byte not yet in the delta

  // The start the source and target share, however short (all of an
  // unchanged value): the scan finds a copy only where a whole block
  // matches, and a JSON object's first field often changes within its first
  // 16 bytes.
  copy_span start;
  start.bytes = shared_prefix(src, tgt, std::min(src_size, tgt_size));
  align_to_characters(start, target);
  if (start.bytes > command_bytes(start, pending)) {
    put_literal(out, target, pending, start.target_at); // bytes before a character
    put_copy(out, start);
    pending = start.target_at + start.bytes;
  }

  const std::size_t blocks = src_size / block_bytes;
  if (blocks > 0 && pending + block_bytes <= tgt_size) {
    const block_index index(src, blocks);
    std::size_t window = pending; // start of the hashed target window
    rolling_hash h;
    h.init(tgt + window);
    for (;;) {
      copy_span best;
      std::size_t tried = 0;
      for (std::uint32_t b = index.first(h.value()); b != no_block && tried < max_candidates;
           b = index.next(b), ++tried) {
        const std::size_t s = std::size_t{b} * block_bytes;
        // Forward from the window, then backward, not past `pending`.
        const std::size_t fwd =
          shared_prefix(src + s, tgt + window, std::min(src_size - s, tgt_size - window));
        if (fwd == 0)
          continue; // another block with the same hash
        std::size_t back = 0;
        while (back < s && window - back > pending && src[s - back - 1] == tgt[window - back - 1])
          ++back;
        copy_span c{window - back, s - back, fwd + back};
        align_to_characters(c, target);
        if (c.bytes > best.bytes && c.bytes > command_bytes(c, pending))
          best = c;
        if (window + fwd == tgt_size)
          break; // no copy reaches further
      }

      if (best.bytes > 0) {
        put_literal(out, target, pending, best.target_at);
        put_copy(out, best);
        pending = best.target_at + best.bytes;
        if (pending + block_bytes > tgt_size)
          break;
        window = pending;
        h.init(tgt + window);
        continue;
      }
      if (window + block_bytes >= tgt_size)
        break;
      h.slide(tgt[window], tgt[window + block_bytes]);
      ++window;
    }
  }
  // The scan sees no block in the last bytes after a change near the end
  // (fewer than a block): copy the end the source and target share, which a
  // JSON object always has ("}" and the fields after the last one changed).
  std::size_t shared = 0;
  while (shared < tgt_size - pending && shared < src_size &&
         src[src_size - 1 - shared] == tgt[tgt_size - 1 - shared])
    ++shared;
  copy_span tail{tgt_size - shared, src_size - shared, shared};
  align_to_characters(tail, target);
  if (tail.bytes > command_bytes(tail, pending)) {
    put_literal(out, target, pending, tail.target_at);
    put_copy(out, tail);
    pending = tgt_size;
  }
  put_literal(out, target, pending, tgt_size);
  put_end(out, target);
  return out;
}

// -- apply -------------------------------------------------------------------

apply_result apply(std::string_view source, std::string_view delta, std::size_t max_target_bytes) {
  reader in(delta);
  std::uint32_t announced = 0;
  if (!in.integer(announced))
    return refuse(apply_error::bad_integer, in.at());
  if (in.peek() != '\n' || in.done())
    return refuse(apply_error::missing_newline, in.at());
  if (announced > max_target_bytes)
    return refuse(apply_error::target_too_large, 0);
  in.skip(1);

  std::string out;
  out.reserve(announced);
  while (!in.done()) {
    const std::size_t command_at = in.at();
    std::uint32_t count = 0;
    if (!in.integer(count))
      return refuse(apply_error::bad_integer, in.at());
    if (in.done())
      return refuse(apply_error::unterminated, in.at());
    const char op = in.peek();
    in.skip(1);
    switch (op) {
    case '@': {
      std::uint32_t offset = 0;
      if (!in.integer(offset))
        return refuse(apply_error::bad_integer, in.at());
      if (in.done() || in.peek() != ',')
        return refuse(apply_error::copy_not_terminated, in.at());
      in.skip(1);
      if (count > announced - out.size())
        return refuse(apply_error::output_overflow, command_at);
      if (offset > source.size() || count > source.size() - offset)
        return refuse(apply_error::copy_past_source, command_at);
      out.append(source.data() + offset, count);
      break;
    }
    case ':':
      if (count > announced - out.size())
        return refuse(apply_error::output_overflow, command_at);
      if (count > in.left())
        return refuse(apply_error::literal_past_end, command_at);
      out.append(in.take(count));
      break;
    case ';':
      if (out.size() != announced)
        return refuse(apply_error::size_mismatch, command_at);
      if (count != checksum(out))
        return refuse(apply_error::bad_checksum, command_at);
      if (!in.done())
        return refuse(apply_error::trailing_bytes, in.at());
      {
        apply_result r;
        r.target = std::move(out);
        return r;
      }
    default:
      return refuse(apply_error::unknown_command, in.at() - 1);
    }
  }
  return refuse(apply_error::unterminated, in.at());
}

// -- checksum and descriptions -------------------------------------------------

std::uint32_t checksum(std::string_view bytes) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size();
  // The four byte lanes summed apart and combined once: the same sum modulo
  // 2^32 as adding each big-endian word, with no shift in the loop.
  std::uint32_t lane[4] = {0, 0, 0, 0};
  for (; n >= 4; n -= 4, p += 4) {
    lane[0] += p[0];
    lane[1] += p[1];
    lane[2] += p[2];
    lane[3] += p[3];
  }
  std::uint32_t sum = (lane[0] << 24) + (lane[1] << 16) + (lane[2] << 8) + lane[3];
  for (std::size_t i = 0; i < n; ++i)
    sum += static_cast<std::uint32_t>(p[i]) << (24 - 8 * i);
  return sum;
}

std::string_view describe(apply_error e) noexcept {
  return enum_name<apply_error::none, apply_error::trailing_bytes>(
    e,
    {"no error", "bad integer (no base-64 digit, or above 2^32 - 1)",
     "target length not followed by a newline", "target length above the limit", "unknown command",
     "copy command not terminated by ','", "copy extends past the end of the source",
     "insert extends past the end of the delta", "commands give more bytes than the target length",
     "target shorter than its announced length", "checksum mismatch",
     "delta ends before its checksum", "bytes after the checksum"},
    "unknown error");
}

} // namespace herald::net::fossil
