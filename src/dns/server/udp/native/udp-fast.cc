// Native fast path of a DNS answering process (loaded by src/dns/server/udp/fast-path.ts).
//
// Why native: Node 20's dgram costs a Buffer, an rinfo object, a JS callback and a 64 KiB malloc per received
// datagram and a send request per reply; on the benchmark that per-packet work, not answering, was most of our
// CPU per query. Here one thread takes queries off the socket in batches (recvmmsg), replays answers the
// process has cached, answers what cannot be a query with FORMERR (or drops it, see ScreenQuery), and sends the
// batch's replies with one sendmmsg. Any other question not cached goes to JavaScript,
// which answers it as before and decides what is cached (JS keeps every caching rule; this file only replays
// bytes under the key JS gave them: the query minus its id, and for plain queries also the question itself, so that
// a query differing only in its id, its name's case (0x20-randomising resolvers), RD/CD or EDNS size is answered
// from the same bytes with those patched in: see PlainQuestion).
//
// Each answering process opens its own socket on the DNS port with SO_REUSEPORT (listen()), as Knot and other fast
// servers do: the kernel picks a socket per datagram by a hash of its addresses and ports, so there is no socket
// shared by all processes, no lock on it and no wake-up of a process that then finds nothing to read. With one
// socket shared through Node's cluster (what this replaced) every batch cost an epoll_wait (EPOLLEXCLUSIVE) and a
// recvmmsg, which could find nothing when a sibling had taken the datagrams. Here the thread blocks in recvmmsg itself
// (MSG_WAITFORONE: sleep until one datagram, then take whatever else is queued, up to a batch): one system call per
// batch received. Measured under load (docs/benchmarks.md, "A socket per answering process"): 0-12% less CPU per
// query with the flat answer table below, the spread set by how the kernel's hash splits the clients. The cost, as with Knot: a process that is stopped (SIGSTOP, a debugger) keeps its share of the
// clients unanswered until it runs again; one that dies leaves the group with its socket and is started again.
// Replies to misses, built in JavaScript, go out through the same socket (send()), so they leave from the DNS port.
//
// Security: the thread only reads its own socket and only replies to the source address of a query; every length
// is checked against the buffer it came in. Linux lets only sockets of the same user join a SO_REUSEPORT group.
#include <node_api.h>

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBatch = 32;
// The largest UDP payload is 65,507 bytes; a buffer this size never truncates a datagram.
constexpr size_t kMaxDatagram = 65536;
constexpr size_t kHeader = 12;
// Same bound as wire-cache.ts, plus one on bytes (answers are at most 64 KiB each, so this is a real limit).
constexpr size_t kMaxEntries = 50000;
constexpr size_t kMaxBytes = 64u << 20;
// Misses waiting for JavaScript beyond this are dropped (the client retries), so a flood cannot grow memory.
constexpr size_t kMaxQueuedMisses = 10000;
// A reply that cannot be written within this long (the socket buffer stays full) is dropped.
constexpr int kSendWaitMs = 50;
// Receive buffer asked for (UDP_RECEIVE_BUFFER in wire-cache.ts: why it is large).
constexpr int kReceiveBuffer = 8 << 20;
// A blocked receive returns after this long even without a datagram, so stop() is never missed (shutdown()
// normally wakes it at once).
constexpr int kReceiveTimeoutMs = 1000;

// The keys are queries, chosen by whoever sends them, and every answer is cached (NXDOMAIN for made-up names too).
// With a hash anyone can compute (std::hash is MurmurHash with a fixed seed) a sender could pick names that all
// land in one run of slots and make every lookup there walk it. So the table hashes with SipHash-1-3 (as Rust's
// HashMap does) under a key drawn at random when the addon loads: each process's slots are unknowable from outside.
uint64_t g_hash_key[2];

uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

void SipRound(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = Rotl(v1, 13);
  v1 ^= v0;
  v0 = Rotl(v0, 32);
  v2 += v3;
  v3 = Rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = Rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = Rotl(v1, 17);
  v1 ^= v2;
  v2 = Rotl(v2, 32);
}

uint64_t KeyedHash(const char* data, size_t n) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data);
  uint64_t v0 = g_hash_key[0] ^ 0x736f6d6570736575ULL, v1 = g_hash_key[1] ^ 0x646f72616e646f6dULL;
  uint64_t v2 = g_hash_key[0] ^ 0x6c7967656e657261ULL, v3 = g_hash_key[1] ^ 0x7465646279746573ULL;
  const size_t whole = n & ~static_cast<size_t>(7);
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m;
    memcpy(&m, p + i, 8);  // x86-64 and arm64 are little-endian, as SipHash reads its words
    v3 ^= m;
    SipRound(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(n) << 56;
  for (size_t i = whole; i < n; i++) last |= static_cast<uint64_t>(p[i]) << (8 * (i - whole));
  v3 ^= last;
  SipRound(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  SipRound(v0, v1, v2, v3);
  SipRound(v0, v1, v2, v3);
  SipRound(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

// Cached answers by key, in a flat open-addressing table: each slot holds the key's hash and a pointer to one block
// with the key and the answer side by side. A lookup touches the slot and that block, where std::unordered_map touched
// a bucket, a node, the key's bytes and the answer's bytes in four places: under dnsperf, its find() was over 40% of
// this thread's user time (perf), on a VM where every cache and TLB miss is dear. Entries are only replaced or all
// cleared, never erased one by one, so probing needs no tombstones.
class AnswerTable {
 public:
  struct Entry {
    uint32_t key_len, answer_len;
    // Queries answered from this entry since hitCounts() last read it (the dnsAnalyticsAdaptiveGroups repeats);
    // changed under Server::mu only, like the table.
    mutable uint64_t hits;
    const char* key() const { return reinterpret_cast<const char*>(this + 1); }
    const char* answer() const { return key() + key_len; }
  };

  // Where the hits of an entry go when it is replaced or cleared before hitCounts() read them (Server::retired).
  explicit AnswerTable(std::function<void(const Entry&)> retire) : retire_(std::move(retire)) {}
  ~AnswerTable() { Clear(); }

  static uint64_t Hash(const char* k, size_t n) {
    const uint64_t h = KeyedHash(k, n);
    return h == 0 ? 1 : h;  // 0 marks an empty slot
  }

  const Entry* Find(const char* k, size_t n, uint64_t h) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& sl = slots_[i];
      if (sl.hash == 0) return nullptr;
      if (sl.hash == h && sl.entry->key_len == n && memcmp(sl.entry->key(), k, n) == 0) return sl.entry;
    }
  }

  // Stores answer under key, replacing what was there; returns the replaced entry's key + answer size (0 if none).
  size_t Put(const std::string& key, const uint8_t* answer, size_t answer_len) {
    if ((count_ + 1) * 2 > slots_.size()) Grow();
    auto* e = static_cast<Entry*>(::operator new(sizeof(Entry) + key.size() + answer_len));
    e->key_len = static_cast<uint32_t>(key.size());
    e->answer_len = static_cast<uint32_t>(answer_len);
    e->hits = 0;
    memcpy(const_cast<char*>(e->key()), key.data(), key.size());
    memcpy(const_cast<char*>(e->answer()), answer, answer_len);
    const uint64_t h = Hash(key.data(), key.size());
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& sl = slots_[i];
      if (sl.hash == 0) {
        sl = {h, e};
        count_++;
        return 0;
      }
      if (sl.hash == h && sl.entry->key_len == key.size() && memcmp(sl.entry->key(), key.data(), key.size()) == 0) {
        const size_t old = sl.entry->key_len + sl.entry->answer_len;
        if (sl.entry->hits != 0) retire_(*sl.entry);
        ::operator delete(sl.entry);
        sl.entry = e;
        return old;
      }
    }
  }

  void Clear() {
    for (Slot& sl : slots_)
      if (sl.hash != 0) {
        if (sl.entry->hits != 0) retire_(*sl.entry);
        ::operator delete(sl.entry);
      }
    slots_.clear();
    count_ = 0;
  }

  size_t size() const { return count_; }

  // Calls f(entry) for every entry with hits, then zeroes them.
  template <typename F>
  void TakeHits(F f) {
    for (Slot& sl : slots_)
      if (sl.hash != 0 && sl.entry->hits != 0) {
        f(*sl.entry);
        sl.entry->hits = 0;
      }
  }

 private:
  struct Slot {
    uint64_t hash;
    Entry* entry;
  };

  void Grow() {
    std::vector<Slot> old(slots_.empty() ? 1024 : slots_.size() * 2, Slot{0, nullptr});
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& sl : old) {
      if (sl.hash == 0) continue;
      size_t i = sl.hash & mask;
      while (slots_[i].hash != 0) i = (i + 1) & mask;
      slots_[i] = sl;
    }
  }

  std::vector<Slot> slots_;
  size_t count_ = 0;
  std::function<void(const Entry&)> retire_;
};

// The header and question of a cached answer (what src/dns/server/query-counts.ts reads a count's name, type and
// rcode from), or empty when its question cannot be read (then its hits cannot be told by question).
std::string QuestionOf(const AnswerTable::Entry& e) {
  const uint8_t* a = reinterpret_cast<const uint8_t*>(e.answer());
  size_t at = kHeader;
  while (at < e.answer_len && a[at] != 0) {
    if (a[at] > 63) return {};
    at += 1 + a[at];
  }
  if (at + 5 > e.answer_len) return {};
  return std::string(e.answer(), at + 5);
}

// Hits of entries replaced or cleared (a zone changed) before they were read, held for hitCounts(); past
// kMaxRetired questions the rest are only counted in `lost` (hitCounts() reports it; they have no question).
constexpr size_t kMaxRetired = 50000;
struct RetiredHits {
  std::vector<std::pair<std::string, uint64_t>> questions;
  uint64_t lost = 0;
  void Add(const AnswerTable::Entry& e) {
    std::string q = QuestionOf(e);
    if (q.empty() || questions.size() >= kMaxRetired)
      lost += e.hits;
    else
      questions.emplace_back(std::move(q), e.hits);
  }
};

// Question types 0..kTypeCells-2 are counted each in a cell of their own, the rest in the last one (TypeCell in
// src/dns/server/wire-stats.ts, which names them).
constexpr size_t kTypeCells = 260;

struct Miss {
  std::vector<uint8_t> query;
  sockaddr_storage from;
};

struct Server {
  int fd = -1;  // this process's own socket on the DNS port (listen())
  std::thread thread;
  napi_threadsafe_function tsfn = nullptr;
  napi_env env = nullptr;
  std::mutex mu;  // guards cache, questions, retired and bytes
  RetiredHits retired;
  AnswerTable cache{[this](const AnswerTable::Entry& e) { retired.Add(e); }};
  // The same answers keyed by the question instead (see PlainQuestion): what a query that differs from a cached one only
  // in its id, the case of its name, its RD/CD bits or its EDNS size and options is answered from.
  AnswerTable questions{[this](const AnswerTable::Entry& e) { retired.Add(e); }};
  size_t bytes = 0;
  std::atomic<uint64_t> hits{0}, misses{0}, dropped{0}, formerrs{0};
  // Answers this thread sent, by question type cell and response code (guarded by mu, like the tables): the
  // platform's metrics (src/dns/metrics.ts) read them through answered().
  uint64_t answered[kTypeCells * 16] = {};
  std::atomic<bool> stopping{false};
};

// One per process; never freed, so a process that exits while the thread runs has nothing destroyed under it.
Server* g_server = nullptr;

void ClearLocked(Server* s) {
  s->cache.Clear();
  s->questions.Clear();
  s->bytes = 0;
}

// The same rules as screenQuery() in src/dns/server/wire-screen.ts (read the reasons there): garbage is answered here
// with a header-only FORMERR (or dropped), never queued for JavaScript and the main process before real questions.
enum class Screen { kAnswer, kFormerr, kDrop };
constexpr uint16_t kQr = 0x8000;
constexpr uint16_t kOpcodeMask = 0xf << 11;
constexpr uint16_t kRd = 1 << 8;
constexpr uint16_t kCd = 1 << 4;
constexpr size_t kRecordFixed = 8;
constexpr size_t kMinRecord = 1 + kRecordFixed;
constexpr size_t kMaxName = 254;

inline uint16_t U16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

// Where the name at offset ends, or -1 where dns-packet's decoder throws (nameEnd in wire-screen.ts).
long NameEnd(const uint8_t* m, size_t len, size_t offset) {
  size_t at = offset, lowest = offset, length = 0;
  long end = -1;
  for (;;) {
    if (at >= len) return -1;
    const uint8_t l = m[at++];
    if (l == 0) break;
    if ((l & 0xc0) == 0) {
      if (at + l > len) return -1;
      length += l + 1u;
      if (length > kMaxName) return -1;
      at += l;
    } else if ((l & 0xc0) == 0xc0) {
      if (at >= len) return -1;
      const size_t target = (static_cast<size_t>(l & 0x3f) << 8) | m[at];
      if (target >= lowest) return -1;
      if (end < 0) end = static_cast<long>(at + 1);
      at = lowest = target;
    } else {
      return -1;
    }
  }
  return end < 0 ? static_cast<long>(at) : end;
}

// The counting cell of a query's question type (the last cell when it cannot be read): see kTypeCells.
size_t TypeCell(const uint8_t* q, size_t len) {
  const long e = NameEnd(q, len, kHeader);
  if (e < 0 || static_cast<size_t>(e) + 2 > len) return kTypeCells - 1;
  const size_t type = U16(q + e);
  return type < kTypeCells - 1 ? type : kTypeCells - 1;
}

Screen ScreenQuery(const uint8_t* m, size_t len) {
  if (len < kHeader) return Screen::kDrop;
  const uint16_t flags = U16(m + 2);
  if (flags & kQr) return Screen::kDrop;
  const size_t questions = U16(m + 4);
  const size_t records = static_cast<size_t>(U16(m + 6)) + U16(m + 8) + U16(m + 10);
  if ((flags & kOpcodeMask) == 0 && questions != 1) return Screen::kFormerr;
  size_t offset = kHeader;
  for (size_t i = 0; i < questions; i++) {
    const long e = NameEnd(m, len, offset);
    if (e < 0 || static_cast<size_t>(e) + 4 > len) return Screen::kFormerr;
    offset = static_cast<size_t>(e) + 4;
  }
  if (records == 0) return Screen::kAnswer;
  const long e = NameEnd(m, len, offset);
  if (e < 0 || static_cast<size_t>(e) + kRecordFixed + (records - 1) * kMinRecord > len) return Screen::kFormerr;
  return Screen::kAnswer;
}

// formerrReply() in wire-screen.ts.
void FormerrReply(const uint8_t* q, std::string& out) {
  out.assign(kHeader, '\0');
  const uint16_t flags = kQr | (U16(q + 2) & (kOpcodeMask | kRd | kCd)) | 1;
  out[0] = static_cast<char>(q[0]);
  out[1] = static_cast<char>(q[1]);
  out[2] = static_cast<char>(flags >> 8);
  out[3] = static_cast<char>(flags & 0xff);
}

// A query the server answers from its question alone (src/dns/server/server.ts, answerQuery): opcode QUERY, one
// question, no answer or authority records, and either nothing else or a single EDNS(0) OPT record (its options are
// ignored by the server, and of its flags only DO and CO are echoed). Such a query's answer depends only on the
// question's name (case-insensitively: the answer engine canonicalises it; only the question section echoes its
// case), type and class, whether EDNS is present with which DO/CO bits, and the size the client accepts, which only
// decides truncation; the id and the RD/CD bits are echoed. TSIG-signed queries, NOTIFY and anything unusual are not
// plain and are answered as before (exact bytes, or JavaScript).
struct Plain {
  size_t name_len;  // wire length of the question name (at offset 12)
  size_t limit;     // largest answer the client accepts over UDP (server.ts: 512 without EDNS, else 512..4096)
};

constexpr uint16_t kTypeOpt = 41;
constexpr uint16_t kDo = 0x8000;
constexpr uint16_t kCo = 0x4000;  // RFC 9824 compact answers OK
constexpr uint8_t kTc = 0x02;     // in byte 2 of the header

// Builds key (the lowercased question, type, class and an EDNS marker) and fills plain; false when q is not plain.
bool PlainQuestion(const uint8_t* q, size_t len, std::string& key, Plain& plain) {
  if (len < kHeader + 5) return false;
  const uint16_t flags = U16(q + 2);
  if ((flags & (kQr | kOpcodeMask)) != 0 || U16(q + 4) != 1 || U16(q + 6) != 0 || U16(q + 8) != 0) return false;
  const uint16_t additionals = U16(q + 10);
  if (additionals > 1) return false;
  key.clear();
  size_t at = kHeader;
  for (;;) {
    if (at >= len) return false;
    const uint8_t l = q[at];
    if (l == 0) break;
    if (l > 63 || at + 1 + l > len) return false;  // compression in a question is legal but rare: not plain
    key.push_back(static_cast<char>(l));
    for (size_t k = at + 1; k <= at + l; k++) {
      const uint8_t c = q[k];
      key.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    }
    at += 1 + l;
  }
  at++;  // the root label
  plain.name_len = at - kHeader;
  if (plain.name_len > kMaxName + 1 || at + 4 > len) return false;
  key.append(reinterpret_cast<const char*>(q) + at, 4);  // type and class
  at += 4;
  if (additionals == 0) {
    if (at != len) return false;
    key.push_back('\0');
    plain.limit = 512;
    return true;
  }
  // OPT: root name, type 41, class = UDP size, TTL = extended rcode, version, flags; then its options.
  if (at + 11 > len || q[at] != 0 || U16(q + at + 1) != kTypeOpt) return false;
  const size_t size = U16(q + at + 3);
  const uint8_t version = q[at + 6];
  const uint16_t eflags = U16(q + at + 7);
  const size_t rdlen = U16(q + at + 9);
  if (version != 0 || at + 11 + rdlen != len) return false;
  key.push_back(static_cast<char>(1 | ((eflags & kDo) ? 2 : 0) | ((eflags & kCo) ? 4 : 0)));
  plain.limit = size < 512 ? 512 : size > 4096 ? 4096 : size;
  return true;
}

// The cached answer made this query's: its id, its RD and CD bits, its question's case (same length: same name).
void PatchAnswer(std::string& o, const uint8_t* q, size_t name_len) {
  o[0] = static_cast<char>(q[0]);
  o[1] = static_cast<char>(q[1]);
  o[2] = static_cast<char>((o[2] & ~(kRd >> 8)) | (q[2] & (kRd >> 8)));
  o[3] = static_cast<char>((o[3] & ~kCd) | (q[3] & kCd));
  memcpy(&o[kHeader], q + kHeader, name_len);
}

void HandMiss(Server* s, const uint8_t* q, size_t len, const sockaddr_storage& from) {
  s->misses++;
  auto* m = new Miss{std::vector<uint8_t>(q, q + len), from};
  if (napi_call_threadsafe_function(s->tsfn, m, napi_tsfn_nonblocking) != napi_ok) {
    s->dropped++;
    delete m;
  }
}

void SendAll(int fd, mmsghdr* msgs, size_t n) {
  size_t sent = 0;
  while (sent < n) {
    int r = sendmmsg(fd, msgs + sent, n - sent, 0);
    if (r > 0) {
      sent += static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd w{fd, POLLOUT, 0};
      if (poll(&w, 1, kSendWaitMs) <= 0) return;
      continue;
    }
    // This reply cannot go out (its peer unreachable, say): skip it, not the rest of the batch.
    sent++;
  }
}

void Run(Server* s) {
  pthread_setname_np(pthread_self(), "dns-udp-fast");  // NATIVE_THREAD_NAME in fast-path.ts; tests look for it
  std::vector<uint8_t> in_buf(kBatch * kMaxDatagram);
  std::vector<std::string> out(kBatch);
  mmsghdr in[kBatch];
  iovec in_iov[kBatch];
  sockaddr_storage from[kBatch];
  mmsghdr outm[kBatch];
  iovec out_iov[kBatch];
  std::string qkey;
  Plain plain;
  size_t miss_idx[kBatch];

  for (;;) {
    if (s->stopping) break;
    for (size_t i = 0; i < kBatch; i++) {
      in_iov[i] = {in_buf.data() + i * kMaxDatagram, kMaxDatagram};
      memset(&in[i], 0, sizeof(in[i]));
      in[i].msg_hdr.msg_name = &from[i];
      in[i].msg_hdr.msg_namelen = sizeof(from[i]);
      in[i].msg_hdr.msg_iov = &in_iov[i];
      in[i].msg_hdr.msg_iovlen = 1;
    }
    // Blocks for the first datagram only, then takes what is already queued (see the top of this file).
    int n = recvmmsg(s->fd, in, kBatch, MSG_WAITFORONE, nullptr);
    if (n <= 0) {
      // 0: stop() shut the socket down. EAGAIN: the receive timeout. ECONNREFUSED and the like: an ICMP error
      // queued on the socket, which says nothing about the next datagram.
      if (n < 0 && (errno == EBADF || errno == ENOTSOCK)) break;
      continue;
    }

    size_t nout = 0, nmiss = 0, hits = 0, formerrs = 0;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      for (int i = 0; i < n; i++) {
        const size_t len = in[i].msg_len;
        const uint8_t* q = in_buf.data() + static_cast<size_t>(i) * kMaxDatagram;
        // Not a DNS message (JS drops these too), or a source we cannot reply to.
        if (len < kHeader || len > kMaxDatagram || (in[i].msg_hdr.msg_flags & MSG_TRUNC) != 0) continue;
        if (in[i].msg_hdr.msg_namelen == 0 || in[i].msg_hdr.msg_namelen > sizeof(from[i])) continue;
        const char* k = reinterpret_cast<const char*>(q) + 2;
        const AnswerTable::Entry* e = s->cache.Find(k, len - 2, AnswerTable::Hash(k, len - 2));
        std::string& o = out[nout];
        if (e != nullptr) {
          o.assign(e->answer(), e->answer_len);  // at least 12 bytes: Set() refuses shorter answers
          o[0] = static_cast<char>(q[0]);
          o[1] = static_cast<char>(q[1]);
          s->answered[TypeCell(q, len) * 16 + (static_cast<uint8_t>(o[3]) & 0xf)]++;
          e->hits++;
          hits++;
        } else if (PlainQuestion(q, len, qkey, plain) &&
                   (e = s->questions.Find(qkey.data(), qkey.size(), AnswerTable::Hash(qkey.data(), qkey.size()))) != nullptr &&
                   e->answer_len <= plain.limit) {
          o.assign(e->answer(), e->answer_len);  // Set() stored it only with this question section at offset 12
          PatchAnswer(o, q, plain.name_len);
          s->answered[TypeCell(q, len) * 16 + (static_cast<uint8_t>(o[3]) & 0xf)]++;
          e->hits++;
          hits++;
        } else {
          const Screen screen = ScreenQuery(q, len);
          if (screen == Screen::kDrop) continue;
          if (screen == Screen::kAnswer) {
            miss_idx[nmiss++] = static_cast<size_t>(i);
            continue;
          }
          FormerrReply(q, o);
          s->answered[TypeCell(q, len) * 16 + 1]++;
          formerrs++;
        }
        out_iov[nout] = {o.data(), o.size()};
        memset(&outm[nout], 0, sizeof(outm[nout]));
        outm[nout].msg_hdr.msg_name = &from[i];
        outm[nout].msg_hdr.msg_namelen = in[i].msg_hdr.msg_namelen;
        outm[nout].msg_hdr.msg_iov = &out_iov[nout];
        outm[nout].msg_hdr.msg_iovlen = 1;
        nout++;
      }
    }
    s->hits += hits;
    s->formerrs += formerrs;
    if (nout > 0) SendAll(s->fd, outm, nout);
    for (size_t k = 0; k < nmiss; k++) {
      const size_t i = miss_idx[k];
      HandMiss(s, in_buf.data() + i * kMaxDatagram, in[i].msg_len, from[i]);
    }
  }
}

// On the JS thread: onMiss(query, address, port).
void CallJs(napi_env env, napi_value cb, void*, void* data) {
  auto* m = static_cast<Miss*>(data);
  if (env != nullptr && cb != nullptr) {
    char addr[INET6_ADDRSTRLEN + 1 + IF_NAMESIZE] = "";
    int port = 0;
    if (m->from.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&m->from);
      inet_ntop(AF_INET, &a->sin_addr, addr, sizeof(addr));
      port = ntohs(a->sin_port);
    } else if (m->from.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&m->from);
      inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof(addr));
      port = ntohs(a->sin6_port);
      // A link-local peer is only reachable through its interface: written "fe80::1%eth0", as dgram does.
      char ifname[IF_NAMESIZE];
      if (a->sin6_scope_id != 0 && if_indextoname(a->sin6_scope_id, ifname) != nullptr && strlen(addr) + 1 + strlen(ifname) < sizeof(addr)) {
        strcat(addr, "%");
        strcat(addr, ifname);
      }
    }
    napi_value args[3], undefined;
    void* copy;
    if (addr[0] != '\0' && napi_create_buffer_copy(env, m->query.size(), m->query.data(), &copy, &args[0]) == napi_ok &&
        napi_create_string_utf8(env, addr, NAPI_AUTO_LENGTH, &args[1]) == napi_ok &&
        napi_create_int32(env, port, &args[2]) == napi_ok && napi_get_undefined(env, &undefined) == napi_ok) {
      napi_call_function(env, undefined, cb, 3, args, nullptr);
    }
  }
  delete m;
}

void StopThread(Server* s) {
  if (!s->thread.joinable()) return;
  s->stopping = true;
  // Wakes the thread blocked in recvmmsg (it then returns 0); kReceiveTimeoutMs is the backstop.
  shutdown(s->fd, SHUT_RDWR);
  s->thread.join();
}

// Runs before the thread-safe function's own teardown (hooks run in reverse order of registration), so the
// thread is gone before anything it uses is.
void Cleanup(void* arg) { StopThread(static_cast<Server*>(arg)); }

napi_value Throw(napi_env env, const char* msg) {
  napi_throw_error(env, nullptr, msg);
  return nullptr;
}

// Throws an Error with `code` set (EADDRINUSE...), as Node's own socket errors have, so JavaScript reports it alike.
napi_value ThrowErrno(napi_env env, const char* what, int err) {
  char msg[160];
  snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
  napi_value code, text, error;
  const char* name = err == EADDRINUSE ? "EADDRINUSE" : err == EACCES ? "EACCES" : err == EADDRNOTAVAIL ? "EADDRNOTAVAIL" : "ESOCKET";
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &text);
  napi_create_error(env, code, text, &error);
  napi_set_named_property(env, error, "code", code);
  napi_throw(env, error);
  return nullptr;
}

bool GetBuffer(napi_env env, napi_value v, uint8_t** data, size_t* len) {
  bool is;
  if (napi_is_buffer(env, v, &is) != napi_ok || !is) return false;
  return napi_get_buffer_info(env, v, reinterpret_cast<void**>(data), len) == napi_ok;
}

napi_value Undefined(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

// A literal IPv4 or IPv6 address (an IPv6 one may name its interface, "fe80::1%eth0", as CallJs writes it) and a
// port as a socket address; false when it is neither.
bool ParseAddress(napi_env env, napi_value v, int32_t port, sockaddr_storage* out, socklen_t* len) {
  char text[INET6_ADDRSTRLEN + 1 + IF_NAMESIZE];
  size_t n;
  if (port < 0 || port > 65535 || napi_get_value_string_utf8(env, v, text, sizeof(text), &n) != napi_ok || n + 1 >= sizeof(text)) return false;
  memset(out, 0, sizeof(*out));
  auto* a4 = reinterpret_cast<sockaddr_in*>(out);
  if (inet_pton(AF_INET, text, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(sockaddr_in);
    return true;
  }
  auto* a6 = reinterpret_cast<sockaddr_in6*>(out);
  if (char* pct = strchr(text, '%')) {
    *pct = '\0';
    a6->sin6_scope_id = if_nametoindex(pct + 1);
    if (a6->sin6_scope_id == 0) return false;
  }
  if (inet_pton(AF_INET6, text, &a6->sin6_addr) != 1) return false;
  a6->sin6_family = AF_INET6;
  a6->sin6_port = htons(static_cast<uint16_t>(port));
  *len = sizeof(sockaddr_in6);
  return true;
}

// listen(address, port, onMiss): opens this process's socket on address:port (SO_REUSEPORT: the other answering
// processes open theirs on the same port; port 0 picks one) and serves it until stop(). Returns the port bound.
napi_value Listen(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (g_server != nullptr && g_server->thread.joinable()) return Throw(env, "the native UDP path is already running");
  int32_t port;
  napi_valuetype t;
  sockaddr_storage addr;
  socklen_t addr_len;
  if (argc < 3 || napi_get_value_int32(env, argv[1], &port) != napi_ok || !ParseAddress(env, argv[0], port, &addr, &addr_len) ||
      napi_typeof(env, argv[2], &t) != napi_ok || t != napi_function)
    return Throw(env, "listen(address, port, onMiss) needs a literal IP address, a port and a function");

  const int fd = socket(addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ThrowErrno(env, "socket", errno);
  const int one = 1, rcvbuf = kReceiveBuffer;
  const timeval timeout{kReceiveTimeoutMs / 1000, (kReceiveTimeoutMs % 1000) * 1000};
  // What the kernel grants of the buffer is bounded by net.core.rmem_max; less is not a reason to refuse to start.
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    const int err = errno;
    close(fd);
    return ThrowErrno(env, "bind", err);
  }
  sockaddr_storage bound;
  socklen_t bound_len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  const int bound_port = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);

  if (g_server == nullptr) g_server = new Server();
  Server* s = g_server;
  napi_value name;
  napi_create_string_utf8(env, "dns-udp-miss", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[2], nullptr, name, kMaxQueuedMisses, 1, nullptr, nullptr, nullptr, CallJs, &s->tsfn) != napi_ok) {
    close(fd);
    return Throw(env, "cannot create the miss callback");
  }
  // The thread must not keep the process alive: it exits when its IPC channel closes, as before.
  napi_unref_threadsafe_function(env, s->tsfn);
  s->fd = fd;
  s->env = env;
  s->stopping = false;
  s->thread = std::thread(Run, s);
  napi_add_env_cleanup_hook(env, Cleanup, s);
  napi_value result;
  napi_create_int32(env, bound_port, &result);
  return result;
}

napi_value Stop(napi_env env, napi_callback_info) {
  Server* s = g_server;
  if (s == nullptr || !s->thread.joinable()) return Undefined(env);
  StopThread(s);
  napi_remove_env_cleanup_hook(env, Cleanup, s);
  napi_release_threadsafe_function(s->tsfn, napi_tsfn_abort);
  s->tsfn = nullptr;
  close(s->fd);
  s->fd = -1;
  return Undefined(env);
}

// send(message, address, port): a reply built in JavaScript (to a miss), sent from the socket the query came to.
// False when it could not go out now (the client retries, as for any lost datagram).
napi_value Send(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  uint8_t* m;
  size_t ml;
  int32_t port;
  sockaddr_storage to;
  socklen_t to_len;
  if (argc < 3 || !GetBuffer(env, argv[0], &m, &ml) || napi_get_value_int32(env, argv[2], &port) != napi_ok || !ParseAddress(env, argv[1], port, &to, &to_len))
    return Throw(env, "send(message, address, port) needs a Buffer, a literal IP address and a port");
  Server* s = g_server;
  if (s == nullptr || s->fd < 0) return Throw(env, "send(): the native UDP path is not listening");
  ssize_t r;
  do {
    r = sendto(s->fd, m, ml, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), to_len);
  } while (r < 0 && errno == EINTR);
  napi_value ok;
  napi_get_boolean(env, r == static_cast<ssize_t>(ml), &ok);
  return ok;
}

// set(query, answer): caches answer for every query equal to this one after the id.
napi_value Set(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  uint8_t *q, *a;
  size_t ql, al;
  if (argc < 2 || !GetBuffer(env, argv[0], &q, &ql) || !GetBuffer(env, argv[1], &a, &al)) return Throw(env, "set(query, answer) needs two Buffers");
  if (ql < kHeader || al < kHeader || al > kMaxDatagram) return Throw(env, "set(): a query and an answer are DNS messages of 12 bytes or more");
  if (g_server == nullptr) g_server = new Server();
  Server* s = g_server;
  std::string key(reinterpret_cast<const char*>(q) + 2, ql - 2);
  const size_t cost = key.size() + al;
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->cache.size() >= kMaxEntries || s->bytes + cost > kMaxBytes) ClearLocked(s);
  s->bytes -= s->cache.Put(key, a, al);
  s->bytes += cost;
  // By question too, when that is safe: the answer is not truncated (a truncated one is only right for clients that
  // accept no more than this one did; a whole one is right for every client accepting its size), and its question
  // section is the query's, byte for byte, at offset 12 (so a later query's question can be copied over it).
  std::string qkey;
  Plain plain;
  if (PlainQuestion(q, ql, qkey, plain) && (a[2] & kTc) == 0 && U16(a + 4) == 1 && al >= kHeader + plain.name_len + 4 &&
      memcmp(a + kHeader, q + kHeader, plain.name_len + 4) == 0) {
    const size_t qcost = qkey.size() + al;
    if (s->bytes + qcost <= kMaxBytes) {
      s->bytes -= s->questions.Put(qkey, a, al);
      s->bytes += qcost;
    }
  }
  return Undefined(env);
}

// flush(): forgets every cached answer; once it returns, no query is answered from them.
napi_value Flush(napi_env env, napi_callback_info) {
  if (g_server != nullptr) {
    std::lock_guard<std::mutex> lock(g_server->mu);
    ClearLocked(g_server);
  }
  return Undefined(env);
}

napi_value Stats(napi_env env, napi_callback_info) {
  napi_value o, v;
  napi_create_object(env, &o);
  uint64_t hits = 0, misses = 0, dropped = 0, formerrs = 0, entries = 0, bytes = 0;
  if (Server* s = g_server) {
    hits = s->hits;
    formerrs = s->formerrs;
    misses = s->misses;
    dropped = s->dropped;
    std::lock_guard<std::mutex> lock(s->mu);
    entries = s->cache.size();
    bytes = s->bytes;
  }
  const std::pair<const char*, uint64_t> fields[] = {{"hits", hits}, {"misses", misses}, {"dropped", dropped}, {"formerrs", formerrs}, {"entries", entries}, {"bytes", bytes}};
  for (const auto& f : fields) {
    napi_create_double(env, static_cast<double>(f.second), &v);
    napi_set_named_property(env, o, f.first, v);
  }
  return o;
}

// answered(): [cell, count, cell, count, ...] for every non-zero cell of Server::answered (cell = type cell * 16 + rcode),
// counts since the thread started.
napi_value Answered(napi_env env, napi_callback_info) {
  std::vector<double> cells;
  if (Server* s = g_server) {
    std::lock_guard<std::mutex> lock(s->mu);
    for (size_t i = 0; i < kTypeCells * 16; i++)
      if (s->answered[i] != 0) {
        cells.push_back(static_cast<double>(i));
        cells.push_back(static_cast<double>(s->answered[i]));
      }
  }
  napi_value out, v;
  napi_create_array_with_length(env, cells.size(), &out);
  for (size_t i = 0; i < cells.size(); i++) {
    napi_create_double(env, cells[i], &v);
    napi_set_element(env, out, static_cast<uint32_t>(i), v);
  }
  return out;
}

// hitCounts(): the queries answered from each cached answer since the last call, as [question, count, ...] (question:
// the answer's header and question section, a Buffer), then `lost`: hits whose question was not kept (RetiredHits).
// What dnsAnalyticsAdaptiveGroups counts of this thread's answers: aggregated per cached answer, read every few
// seconds, so a hit costs one increment and nothing crosses to JavaScript per query. The copying is done under the
// lock, the JavaScript values after it.
napi_value HitCounts(napi_env env, napi_callback_info) {
  std::vector<std::pair<std::string, uint64_t>> counts;
  uint64_t lost = 0;
  if (Server* s = g_server) {
    std::lock_guard<std::mutex> lock(s->mu);
    counts.swap(s->retired.questions);
    lost = s->retired.lost;
    s->retired.lost = 0;
    const auto take = [&](const AnswerTable::Entry& e) {
      std::string q = QuestionOf(e);
      if (q.empty())
        lost += e.hits;
      else
        counts.emplace_back(std::move(q), e.hits);
    };
    s->cache.TakeHits(take);
    s->questions.TakeHits(take);
  }
  napi_value out, v;
  napi_create_array_with_length(env, counts.size() * 2 + 1, &out);
  uint32_t i = 0;
  for (const auto& c : counts) {
    void* copy;
    napi_create_buffer_copy(env, c.first.size(), c.first.data(), &copy, &v);
    napi_set_element(env, out, i++, v);
    napi_create_double(env, static_cast<double>(c.second), &v);
    napi_set_element(env, out, i++, v);
  }
  napi_create_double(env, static_cast<double>(lost), &v);
  napi_set_element(env, out, i, v);
  return out;
}

// keyHash(bytes): the table's hash of a key, for the test that two processes hash alike keys differently.
napi_value KeyHash(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  void* data = nullptr;
  size_t len = 0;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc < 1 ||
      napi_get_buffer_info(env, argv[0], &data, &len) != napi_ok)
    return Throw(env, "keyHash(buffer)");
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(KeyedHash(static_cast<const char*>(data), len)));
  napi_value out;
  napi_create_string_utf8(env, hex, 16, &out);
  return out;
}

napi_value Init(napi_env env, napi_value exports) {
  if (getrandom(g_hash_key, sizeof(g_hash_key), 0) != static_cast<ssize_t>(sizeof(g_hash_key))) {
    napi_throw_error(env, nullptr, "getrandom() gave no key for the answer table's hash");
    return nullptr;
  }
  const napi_property_descriptor props[] = {
      {"listen", nullptr, Listen, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"send", nullptr, Send, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"stop", nullptr, Stop, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"set", nullptr, Set, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"flush", nullptr, Flush, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"stats", nullptr, Stats, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"answered", nullptr, Answered, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"hitCounts", nullptr, HitCounts, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"keyHash", nullptr, KeyHash, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
