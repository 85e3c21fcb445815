// hiredis_asio: drives a hiredis 0.14 redisAsyncContext from an Asio
// executor. hiredis asks for readiness through its ev.addRead / delRead /
// addWrite / delWrite / cleanup hooks; the adapter answers them with
// async_wait on a posix::stream_descriptor that wraps the hiredis socket.
//
// Created by redis::connection (once per connect attempt) and owned by the
// context it is attached to: it lives until hiredis calls `cleanup` (right
// before hiredis closes the fd and frees the context), and pending waits
// keep it alive a little longer; they then do nothing. The adapter never
// closes the fd: cleanup releases it and hiredis closes it.
//
// Threading: a redisAsyncContext is not thread-safe. attach(), every
// redisAsync* call and every completion run on one executor: a
// single-threaded io_context or one strand. See
// /work/shared/notes/hiredis-asio.md (sections 0 and 2) for the verified facts.
#pragma once

#include "net/asio.hpp"

struct redisAsyncContext;

namespace herald::net::redis {

/// Attaches `ac` to `executor`: from now on readiness of the hiredis socket is
/// awaited on `executor` and handled with redisAsyncHandleRead / Write there.
///
/// Call it right after redisAsyncConnect() succeeded (`ac->err == 0`) and
/// before redisAsyncSetConnectCallback(), which already asks for a write wait.
/// Must run on `executor`.
///
/// @returns false (and changes nothing) when `ac` already has an event
///          library attached or its fd cannot be registered with the
///          reactor; the caller then frees the context with redisAsyncFree.
bool attach_to_asio(const asio::any_io_executor& executor, redisAsyncContext* ac);

} // namespace herald::net::redis
