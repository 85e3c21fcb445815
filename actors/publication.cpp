#include "actors/publication.hpp"

#include "net/obs/metrics.hpp"
#include "net/wire/sse/encoder.hpp"
#include "net/wire/ws/frame_codec.hpp"
#include "net/wire/ws/protocol.hpp"

namespace herald::actors {

publication_ptr make_publication(std::string channel, std::string epoch, std::uint64_t offset,
                                 std::string event, std::string data,
                                 caf::actor_clock::time_point at, std::int64_t accepted_ns,
                                 net::publication_tags tags) {
  auto p = std::make_shared<publication>();
  p->sse = net::make_frame(net::sse::encode_event(event, data));
  p->ws = net::make_frame(net::ws::encode_publication(channel, offset, event, data, tags));
  char header[10];
  p->ws_header.assign(header, net::ws::encode_header(net::ws::opcode::text, p->ws->size(), header));
  p->channel = std::move(channel);
  p->epoch = std::move(epoch);
  p->offset = offset;
  p->event = std::move(event);
  p->data = std::move(data);
  p->tags = std::move(tags);
  p->at = at;
  p->accepted_ns = accepted_ns != 0 ? accepted_ns : net::metrics::now_ns();
  return p;
}

} // namespace herald::actors
