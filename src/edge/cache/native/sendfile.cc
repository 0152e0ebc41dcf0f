// Native sendfile(2) path of the edge cache (loaded by src/edge/cache/sendfile.ts).
//
// Why: a HIT of a large stored body streamed in JavaScript reads the file into a 1 MiB buffer (a copy from the page
// cache) and writes it to the socket (a second copy), with a trip through libuv's thread pool and the event loop per
// MiB; nginx hands the file to the kernel with sendfile(2), which moves the page cache's pages to the socket. Here the
// answer's head is written by Node (sendfile.ts), then this file sends the body from the cache file's descriptor to
// the connection's, and JavaScript ends the answer.
//
// How it stays out of everyone's way:
// - Both descriptors are dup()ed when a transfer starts. Node may close the socket's descriptor at any time (the
//   client went away, a timeout destroyed the connection) and the number could then be given to another socket or
//   file: a transfer that went on using it would write cached bytes into someone else's connection. The duplicates
//   keep the connection and the file (even after a purge or eviction unlinks it: the answer stays the old bytes) until
//   the transfer ends; cancel() shuts the connection down, so a transfer Node gave up on ends at once.
// - The socket is non-blocking (libuv made it so; the duplicate shares that). A work item on libuv's thread pool calls
//   sendfile until the socket's buffer is full (EAGAIN) or it has sent `chunk` bytes, and returns: it never waits for
//   a client, so a slow client never holds a pool thread. Waiting for the socket to become writable again is a
//   uv_poll_t on the event loop (on the duplicate's number, which epoll keeps apart from Node's own registration).
// - At most `max_running` work items of all transfers run at once (the rest wait here, first come first served, and
//   each transfer requeues behind the others after every chunk), so many big downloads never take more than that
//   many of the pool's threads from fs and DNS work, and each item is bounded in bytes.
// - A transfer that cannot send a byte for `idle_ms` (the client stopped reading) ends with ETIMEDOUT.
// The JavaScript callback is called exactly once per transfer, after both descriptors are closed.
#include <node_api.h>
#include <uv.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace {

// The largest count Linux's sendfile moves in one call.
constexpr uint64_t kMaxSendfile = 0x7ffff000;

struct State;

enum class Step { kMore, kWouldBlock, kDone, kError };

struct Transfer {
  State* state;
  uint32_t id;
  int sock = -1;
  int file = -1;
  off_t offset;
  uint64_t remaining;
  uint64_t sent = 0;
  uint64_t idle_ms;
  uv_work_t work;
  uv_poll_t poll;
  uv_timer_t timer;
  bool running = false;
  bool queued = false;
  bool polling = false;
  bool finishing = false;
  int open_handles = 0;
  std::atomic<bool> cancelled{false};
  // The last work item's result (written on the pool thread, read in AfterChunk: uv_queue_work orders them).
  Step step = Step::kMore;
  int step_errno = 0;
  uint64_t step_sent = 0;
  int final_errno = 0;
  napi_ref callback = nullptr;
  napi_async_context async_context = nullptr;
};

struct State {
  napi_env env;
  uv_loop_t* loop;
  std::deque<Transfer*> ready;
  std::unordered_map<uint32_t, Transfer*> transfers;
  uint32_t next_id = 1;
  int running = 0;
  int max_running = 2;
  uint64_t chunk = 8u << 20;
  // Totals for tests and metrics: work items run, and transfers that ended.
  uint64_t work_items = 0;
  uint64_t finished = 0;
};

void Pump(State* s);
void Finish(Transfer* t, int err);

void SendChunk(uv_work_t* w) {
  Transfer* t = static_cast<Transfer*>(w->data);
  uint64_t budget = t->state->chunk;
  t->step_sent = 0;
  for (;;) {
    if (t->cancelled.load(std::memory_order_relaxed)) {
      t->step = Step::kError;
      t->step_errno = ECANCELED;
      return;
    }
    if (t->remaining == 0) {
      t->step = Step::kDone;
      return;
    }
    if (budget == 0) {
      t->step = Step::kMore;
      return;
    }
    const size_t want = static_cast<size_t>(std::min({t->remaining, budget, kMaxSendfile}));
    const ssize_t n = sendfile(t->sock, t->file, &t->offset, want);
    if (n > 0) {
      t->remaining -= static_cast<uint64_t>(n);
      t->sent += static_cast<uint64_t>(n);
      t->step_sent += static_cast<uint64_t>(n);
      budget -= std::min(budget, static_cast<uint64_t>(n));
      continue;
    }
    if (n == 0) {
      // The file ended before the answer did: never pad, the connection is cut (the client sees a short body).
      t->step = Step::kError;
      t->step_errno = ENODATA;
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      t->step = Step::kWouldBlock;
      return;
    }
    t->step = Step::kError;
    t->step_errno = errno;
    return;
  }
}

void OnIdle(uv_timer_t* timer) {
  Transfer* t = static_cast<Transfer*>(timer->data);
  // Only a transfer waiting on its client is idle; one waiting for a pool slot or running is ours.
  if (t->polling) return Finish(t, ETIMEDOUT);
  uv_timer_start(&t->timer, OnIdle, t->idle_ms, 0);
}

void Enqueue(Transfer* t) {
  t->queued = true;
  t->state->ready.push_back(t);
}

void OnWritable(uv_poll_t* poll, int status, int /*events*/) {
  Transfer* t = static_cast<Transfer*>(poll->data);
  uv_poll_stop(&t->poll);
  t->polling = false;
  // An error on the socket (reset, closed): the next sendfile says which; EPIPE when libuv gave no errno.
  if (status < 0) return Finish(t, status == UV_EBADF ? EPIPE : -status);
  Enqueue(t);
  Pump(t->state);
}

void AfterChunk(uv_work_t* w, int /*status*/) {
  Transfer* t = static_cast<Transfer*>(w->data);
  State* s = t->state;
  t->running = false;
  s->running--;
  if (t->step_sent > 0 && !t->finishing) uv_timer_start(&t->timer, OnIdle, t->idle_ms, 0);
  if (t->cancelled.load(std::memory_order_relaxed)) {
    Finish(t, t->final_errno != 0 ? t->final_errno : ECANCELED);
  } else {
    switch (t->step) {
      case Step::kDone:
        Finish(t, 0);
        break;
      case Step::kError:
        Finish(t, t->step_errno);
        break;
      case Step::kMore:
        Enqueue(t);
        break;
      case Step::kWouldBlock: {
        const int r = uv_poll_start(&t->poll, UV_WRITABLE, OnWritable);
        if (r != 0) {
          Finish(t, -r);
        } else {
          t->polling = true;
        }
        break;
      }
    }
  }
  Pump(s);
}

void Pump(State* s) {
  while (s->running < s->max_running && !s->ready.empty()) {
    Transfer* t = s->ready.front();
    s->ready.pop_front();
    t->queued = false;
    t->running = true;
    s->running++;
    s->work_items++;
    t->work.data = t;
    const int r = uv_queue_work(s->loop, &t->work, SendChunk, AfterChunk);
    if (r != 0) {
      t->running = false;
      s->running--;
      Finish(t, -r);
    }
  }
}

void CallBack(Transfer* t) {
  napi_env env = t->state->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value cb, recv, argv[2], result;
  napi_get_reference_value(env, t->callback, &cb);
  // napi_make_callback wants an object as the receiver (undefined is a TypeError): the global, as for a plain call.
  napi_get_global(env, &recv);
  napi_create_int32(env, t->final_errno, &argv[0]);
  napi_create_double(env, static_cast<double>(t->sent), &argv[1]);
  if (napi_make_callback(env, t->async_context, recv, cb, 2, argv, &result) != napi_ok) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
      napi_value err;
      napi_get_and_clear_last_exception(env, &err);
      napi_fatal_exception(env, err);
    }
  }
  napi_close_handle_scope(env, scope);
}

void OnClosed(uv_handle_t* h) {
  Transfer* t = static_cast<Transfer*>(h->data);
  if (--t->open_handles > 0) return;
  close(t->sock);
  close(t->file);
  State* s = t->state;
  s->transfers.erase(t->id);
  s->finished++;
  CallBack(t);
  napi_delete_reference(s->env, t->callback);
  napi_async_destroy(s->env, t->async_context);
  delete t;
}

void Finish(Transfer* t, int err) {
  if (t->finishing) return;
  t->finishing = true;
  t->final_errno = err;
  if (t->queued) {
    auto& q = t->state->ready;
    q.erase(std::remove(q.begin(), q.end(), t), q.end());
    t->queued = false;
  }
  t->polling = false;
  t->open_handles = 2;
  uv_close(reinterpret_cast<uv_handle_t*>(&t->poll), OnClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&t->timer), OnClosed);
}

napi_value Throw(napi_env env, const char* code, const char* message) {
  napi_throw_error(env, code, message);
  return nullptr;
}

bool NumberArg(napi_env env, napi_value v, double* out) {
  napi_valuetype type;
  return napi_typeof(env, v, &type) == napi_ok && type == napi_number && napi_get_value_double(env, v, out) == napi_ok;
}

// start(socketFd, fileFd, offset, length, idleMs, done(errno, sent)): the transfer's id.
napi_value Start(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  State* s;
  napi_get_cb_info(env, info, &argc, argv, nullptr, reinterpret_cast<void**>(&s));
  double sock, file, offset, length, idle;
  napi_valuetype cb_type;
  if (argc < 6 || !NumberArg(env, argv[0], &sock) || !NumberArg(env, argv[1], &file) || !NumberArg(env, argv[2], &offset) ||
      !NumberArg(env, argv[3], &length) || !NumberArg(env, argv[4], &idle) || napi_typeof(env, argv[5], &cb_type) != napi_ok ||
      cb_type != napi_function || sock < 0 || file < 0 || offset < 0 || length < 0 || idle < 1 || offset > 9007199254740991.0 ||
      length > 9007199254740991.0)
    return Throw(env, "ERR_INVALID_ARG_TYPE", "start(socketFd, fileFd, offset, length, idleMs, done)");
  const int sock_dup = fcntl(static_cast<int>(sock), F_DUPFD_CLOEXEC, 0);
  if (sock_dup < 0) return Throw(env, "EBADF", "the socket's descriptor could not be duplicated");
  const int file_dup = fcntl(static_cast<int>(file), F_DUPFD_CLOEXEC, 0);
  if (file_dup < 0) {
    close(sock_dup);
    return Throw(env, "EBADF", "the file's descriptor could not be duplicated");
  }
  auto* t = new Transfer();
  t->state = s;
  t->sock = sock_dup;
  t->file = file_dup;
  t->offset = static_cast<off_t>(offset);
  t->remaining = static_cast<uint64_t>(length);
  t->idle_ms = static_cast<uint64_t>(idle);
  if (uv_poll_init(s->loop, &t->poll, sock_dup) != 0) {
    close(sock_dup);
    close(file_dup);
    delete t;
    return Throw(env, "EINVAL", "the socket cannot be watched for writability");
  }
  uv_timer_init(s->loop, &t->timer);
  t->poll.data = t;
  t->timer.data = t;
  napi_create_reference(env, argv[5], 1, &t->callback);
  napi_value resource_name;
  napi_create_string_utf8(env, "EdgeCacheSendfile", NAPI_AUTO_LENGTH, &resource_name);
  napi_async_init(env, nullptr, resource_name, &t->async_context);
  t->id = s->next_id++;
  if (s->next_id == 0) s->next_id = 1;
  s->transfers[t->id] = t;
  uv_timer_start(&t->timer, OnIdle, t->idle_ms, 0);
  Enqueue(t);
  Pump(s);
  napi_value id;
  napi_create_uint32(env, t->id, &id);
  return id;
}

// cancel(id): ends a transfer (its callback still comes, with ECANCELED) and shuts its connection down.
napi_value Cancel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  State* s;
  napi_get_cb_info(env, info, &argc, argv, nullptr, reinterpret_cast<void**>(&s));
  uint32_t id = 0;
  if (argc < 1 || napi_get_value_uint32(env, argv[0], &id) != napi_ok) return Throw(env, "ERR_INVALID_ARG_TYPE", "cancel(id)");
  auto it = s->transfers.find(id);
  if (it == s->transfers.end()) return nullptr;
  Transfer* t = it->second;
  if (t->finishing) return nullptr;
  t->final_errno = ECANCELED;
  t->cancelled.store(true, std::memory_order_relaxed);
  // Wakes a sendfile in progress at once (EPIPE) and tells the client; Node has given up on this connection.
  shutdown(t->sock, SHUT_RDWR);
  if (!t->running) Finish(t, ECANCELED);
  return nullptr;
}

// configure({maxRunning, chunkBytes}).
napi_value Configure(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  State* s;
  napi_get_cb_info(env, info, &argc, argv, nullptr, reinterpret_cast<void**>(&s));
  double max_running, chunk;
  if (argc < 2 || !NumberArg(env, argv[0], &max_running) || !NumberArg(env, argv[1], &chunk) || max_running < 1 || chunk < 4096)
    return Throw(env, "ERR_INVALID_ARG_TYPE", "configure(maxRunning >= 1, chunkBytes >= 4096)");
  s->max_running = static_cast<int>(max_running);
  s->chunk = static_cast<uint64_t>(chunk);
  Pump(s);
  return nullptr;
}

// stats(): { active, running, queued, workItems, finished }.
napi_value Stats(napi_env env, napi_callback_info info) {
  State* s;
  napi_get_cb_info(env, info, nullptr, nullptr, nullptr, reinterpret_cast<void**>(&s));
  napi_value out, v;
  napi_create_object(env, &out);
  const auto put = [&](const char* name, double value) {
    napi_create_double(env, value, &v);
    napi_set_named_property(env, out, name, v);
  };
  put("active", static_cast<double>(s->transfers.size()));
  put("running", s->running);
  put("queued", static_cast<double>(s->ready.size()));
  put("maxRunning", s->max_running);
  put("workItems", static_cast<double>(s->work_items));
  put("finished", static_cast<double>(s->finished));
  return out;
}

napi_value Init(napi_env env, napi_value exports) {
  auto* s = new State();
  s->env = env;
  napi_get_uv_event_loop(env, &s->loop);
  napi_set_instance_data(
      env, s, [](napi_env, void* data, void*) { delete static_cast<State*>(data); }, nullptr);
  const napi_property_descriptor props[] = {
      {"start", nullptr, Start, nullptr, nullptr, nullptr, napi_default, s},
      {"cancel", nullptr, Cancel, nullptr, nullptr, nullptr, napi_default, s},
      {"configure", nullptr, Configure, nullptr, nullptr, nullptr, napi_default, s},
      {"stats", nullptr, Stats, nullptr, nullptr, nullptr, napi_default, s},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
