/*
 * Private structures of the host reference runtime.
 *
 * Ownership rules that keep file descriptors from being reused under someone's feet:
 * - a link's control socket is read by the context's I/O thread while the link is watched (in
 *   ctx->ctl_by_fd and the epoll set), and by the thread running a normal unlink of it once that
 *   thread has taken it out of both; it is closed under ctx->mu, after leaving the epoll set, by
 *   whoever removes the link (or parked on ctx->detached for the I/O thread, see pdrt.h); other
 *   threads write small control messages to it (under ctx->mu, never blocking);
 * - a server-side handshake in progress belongs to the I/O thread;
 * - a requester-side data connection belongs to the transfer that took it from the link's pool;
 *   others may only shutdown() it (under ctx->mu) to abort that transfer;
 * - a serving connection belongs to the serving epoll set between requests (armed one-shot) and to
 *   the worker that got its event while serving one; only that worker closes it and frees its
 *   serve entry (under ctx->mu), so the entry an event points to lives until the event is taken;
 *   others may only shutdown() it.
 * An event of the I/O thread's epoll set names only a file descriptor, looked up again under
 * ctx->mu: an event that went stale (its socket closed, the number reused) at worst causes a read
 * that finds nothing.
 */
#ifndef PDRT_INTERNAL_H
#define PDRT_INTERNAL_H

#include "pdrt.h"
#include "util.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define POOL_MAX 4               /* idle data connections kept per link */
#define POOL_CAP 16              /* room for reverse connections arriving for waiting transfers */
#define SERVE_WORKERS_MAX 32    /* serving threads per context, however many connections */
#define MAX_EVENTS 4096          /* queued events; the oldest is dropped beyond this */
#define DEFAULT_HANDSHAKE_MS 5000
#define DEFAULT_IDLE_MS 60000
#define DEFAULT_MAX_LINKS 1024
#define DEFAULT_MAX_LINKS_PER_PEER 64
#define DEFAULT_MAX_HANDSHAKES 256
#define DEFAULT_MAX_HANDSHAKES_PER_PEER 32
#define DEFAULT_MAX_CONNS_PER_PEER 256
#define DEFAULT_MAX_CONNS 1024
#define SHM_HDR_BYTES 4096u      /* header page in front of the blocks of a cache */
#define BOOT_ID_LEN 40


/* ---- block caches (cache.c) ---- */
typedef struct shm_hdr {             /* first bytes of every cache's shared memory */
    uint64_t magic;
    uint64_t cache_id;
    uint64_t gen;
    uint32_t num_blocks;
    uint32_t block_bytes;
    uint32_t valid;                  /* cleared (atomically) when the owner unregisters */
    uint32_t pad;
} shm_hdr;
#define SHM_MAGIC 0x45484341435452ULL /* "RTCACHE" */

typedef struct cache {
    struct cache *next;
    uint64_t id;
    uint64_t gen;
    uint32_t num_blocks;
    uint32_t block_bytes;
    int fd;                          /* memfd, kept open so a same-host peer can open it */
    uint8_t *base;                   /* header page + blocks */
    size_t size;
    uint8_t *blocks;
    int refs;                        /* list + users, under ctx->mu */
} cache;

/* ---- mappings of a same-host peer's caches (samehost.c) ---- */
typedef struct peer_map {
    struct peer_map *next;
    uint64_t cache_id;
    uint64_t gen;
    uint32_t num_blocks;
    uint32_t block_bytes;
    int writable;
    uint8_t *base;
    size_t size;
    int refs;                        /* link's list + transfers, under ctx->mu */
} peer_map;

/* ---- links (links.c) ---- */
typedef struct xfer {               /* one running transfer, so it can be aborted */
    struct xfer *next;
    int fd;                          /* data connection in use, -1 when none */
} xfer;

typedef struct link {
    struct link *next;
    uint64_t remote_id;
    uint64_t session;                /* chosen by the server; names the link on data connections */
    uint32_t side;
    uint32_t state;
    int listed;
    int refs;
    int ctl_fd;
    int watched;                     /* ctl_fd is in the epoll set and ctl_by_fd */
    uint8_t rbuf[16];                /* partial control message (whoever reads ctl_fd) */
    size_t rlen;
    int same_host;
    int32_t peer_pid;
    uint8_t key[32];                 /* authenticated links: the per-link key (auth.h) */
    int keyed;
    char remote_ip[PDRT_IP_MAX];
    uint16_t remote_port;
    char local_ip[PDRT_IP_MAX];      /* client: bind address for data connections */
    struct sockaddr_storage addr;    /* client: the server's listen address */
    socklen_t addrlen;
    uint32_t inflight;
    xfer *xfers;
    int pool[POOL_CAP];              /* idle data connections on which this side is the requester */
    int64_t pool_since[POOL_CAP];    /* when each became idle */
    int npool;
    int unlink_acked;
    int peer_gone;
    peer_map *maps;
    struct link *ka_prev, *ka_next;  /* client links waiting for keepalive (keepalive.c) */
    int64_t ka_due;
    int ka_queued;
} link_t;

/* ---- serving connections (serve.c) ---- */
typedef struct serve {
    struct serve *next;
    struct pdrt_ctx *ctx;
    int fd;
    uint64_t remote_id;
    uint64_t session;
    int same_host;
    int reverse;                     /* client side: connect to the server first */
    int aborted;                     /* set under ctx->mu by shutdowns that found no fd yet */
    int armed;                       /* in the serving epoll set (one-shot) */
    int busy;                        /* a worker is on it */
    int64_t idle_since;
    uint8_t hdr[32];                 /* a request header read so far (REQ_SIZE bytes) */
    size_t hlen;
    struct serve *job_next;          /* reverse connections waiting for a worker */
    int has_peer;
    struct sockaddr_storage peer;    /* server side: the peer's address, for per-peer caps */
    uint8_t key[32];                 /* reverse, authenticated link: the link key */
    int keyed;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char local_ip[PDRT_IP_MAX];
} serve;

/* ---- same-host proofs already made (samehost.c) ---- */
#define PROBE_MEMO 64
typedef struct probe_memo {
    uint64_t remote_id;              /* the cluster id of the context behind the probe */
    int32_t pid;                     /* 0 = empty */
    uint32_t fd;
    uint64_t token;                  /* the token read there */
} probe_memo;

struct pdrt_ctx {
    struct pdrt_ctx *gnext;          /* global registry of live contexts */
    int calls;                       /* API calls in progress (under the registry mutex) */
    int closing;

    uint64_t id;
    uint32_t role;
    uint8_t *secret;                 /* the cluster secret, NULL when links are not authenticated */
    size_t secret_len;
    pdrt_config cfg;                 /* settings with defaults filled in (cfg.link_secret unused) */
    pthread_mutex_t mu;
    pthread_cond_t cv;               /* link state changes, pool arrivals, thread exits */
    pthread_cond_t ev_cv;            /* events */
    int stopping;

    int listen_fd;
    uint16_t listen_port;
    int ep;                          /* the I/O thread's epoll set */
    int stop_fd;                     /* eventfd, readable from the start of pdrt_destroy on */
    pthread_t io;
    int io_started;
    int io_quit;

    link_t *links;
    link_t **ctl_by_fd;              /* watched links by control socket */
    size_t ctl_cap;
    int ka_fd;                       /* timerfd: the oldest link waiting for keepalive is due */
    int ka_timer_set;
    link_t *ka_head, *ka_tail;
    fdvec detached;                  /* control sockets a client force-unlinked; closed on peer EOF */
    uint64_t rng;                    /* session numbers (splitmix64 state) */

    pdrt_event *events;
    size_t ev_head, ev_len;

    cache *caches;
    uint64_t next_gen;
    serve *serves;
    int nserves;                     /* serving connections (and reverse ones being made) */
    int sv_ep;                       /* serving connections waiting for a request (serve.c) */
    int sv_wake;                     /* eventfd semaphore: reverse connections queued, or quit */
    serve *sv_jobs;
    pthread_t sv_threads[SERVE_WORKERS_MAX];
    int sv_workers, sv_idle, sv_quit;
    int64_t sv_sweep_at;

    int fastpath;
    char boot_id[BOOT_ID_LEN];
    int probe_fd;
    uint64_t probe_token;
    int32_t pid;
    probe_memo memo[PROBE_MEMO];     /* same-host proofs already made, under ctx->mu */
    uint32_t memo_next;
};

/* ---- the context as its parts use it (handle.c) ---- */
int ctx_enter(pdrt_ctx *ctx);        /* 0 when ctx is live; counts the call */
void ctx_leave(pdrt_ctx *ctx);
void ctx_register(pdrt_ctx *ctx);    /* ctx is whole: calls may enter it */
int ctx_unregister(pdrt_ctx *ctx);   /* no call enters ctx from now on; -1 when it was not live */
void ctx_wait_calls(pdrt_ctx *ctx);  /* returns once the calls that entered have left */
/* A fresh session number (never 0). Under ctx->mu. */
uint64_t ctx_session(pdrt_ctx *ctx);
/* Adds fd to, or removes it from, the I/O thread's epoll set (readable events). 0 = done. */
int ep_add(pdrt_ctx *ctx, int fd);
void ep_del(pdrt_ctx *ctx, int fd);

/* ---- events (events.c) ---- */
void event_push(pdrt_ctx *ctx, uint32_t kind, uint32_t side, uint64_t remote_id, int32_t code);

/* ---- links (links.c), all under ctx->mu ---- */
link_t *link_find(pdrt_ctx *ctx, uint64_t remote_id);
link_t *link_find_fd(pdrt_ctx *ctx, int fd);   /* a watched link */
/* Hands the link's control socket fd to the I/O thread: indexed by fd and, unless registered
 * already, added to the epoll set. 0 = watched; on failure the link is unchanged. */
int link_watch(pdrt_ctx *ctx, link_t *lk, int fd, int registered);
/* Takes the control socket back from the I/O thread (the caller reads it from then on). */
void link_unwatch(pdrt_ctx *ctx, link_t *lk);
link_t *link_new(uint64_t remote_id, uint32_t side);
void link_insert(pdrt_ctx *ctx, link_t *lk);
void link_unref(pdrt_ctx *ctx, link_t *lk);
/* Drops a link from the list, aborts its transfers and serving connections, and closes its control
 * socket (park = 0) or parks it on the detached list for the I/O thread (park = 1). */
void link_remove(pdrt_ctx *ctx, link_t *lk, int park);
void link_set_unusable(pdrt_ctx *ctx, link_t *lk);

/* ---- control messages (ctl.c) ---- */
/* Sends a control message without blocking; on failure the socket is shut down. 0 = sent. */
int ctl_send(int fd, uint32_t type, uint64_t arg);

/* ---- link/unlink calls (linkcall.c, unlink.c) ---- */
/* Checks one pdrt_cluster entry; for_link also requires a valid remote address (parsed into ss). */
int32_t cluster_check(const pdrt_ctx *ctx, const pdrt_cluster *c, int for_link, struct sockaddr_storage *ss,
                      socklen_t *len);
/* Checks the arguments shared by pdrt_link and pdrt_unlink. */
int32_t batch_check(const pdrt_cluster *clusters, uint32_t n, int32_t timeout_ms, const int32_t *rets);

/* ---- keepalive of client control sockets (keepalive.c), under ctx->mu but ka_init ---- */
int ka_init(pdrt_ctx *ctx);                      /* 0 = the timer is in the epoll set */
void ka_queue(pdrt_ctx *ctx, link_t *lk);        /* a new client link: arm it when it has lasted */
void ka_dequeue(pdrt_ctx *ctx, link_t *lk);      /* the link is going: no need any more */
void ka_fire(pdrt_ctx *ctx);                     /* I/O thread, the timer is readable; takes ctx->mu */

/* ---- I/O thread (iothread.c) ---- */
int io_start(pdrt_ctx *ctx);
void io_stop(pdrt_ctx *ctx);

/* ---- serving (serve.c) ---- */
int serve_init(pdrt_ctx *ctx);                   /* 0 = the serving epoll set exists */
/* Serves a connection (or makes a reverse one) through the worker pool; takes ownership of s.
 * Under ctx->mu. 0 = taken on. */
int serve_spawn(pdrt_ctx *ctx, serve *s);
/* Stops and joins the workers, once no connection is left. Without ctx->mu. */
void serve_stop(pdrt_ctx *ctx);
void serve_fini(pdrt_ctx *ctx);
/* Serving connections from a peer address. Under ctx->mu. */
uint32_t serve_count_peer(pdrt_ctx *ctx, const struct sockaddr_storage *peer);
void serve_shutdown_session(pdrt_ctx *ctx, uint64_t session);

void serve_shutdown_all(pdrt_ctx *ctx);

/* ---- caches (cache.c), lookups under ctx->mu ---- */
cache *cache_get(pdrt_ctx *ctx, uint64_t id);   /* takes a ref, NULL if unknown */
void cache_put(pdrt_ctx *ctx, cache *c);        /* drops a ref; frees on the last */
void cache_free_all(pdrt_ctx *ctx);
int32_t cache_check_blocks(const cache *c, const uint32_t *blocks, uint32_t n);

/* ---- same-host support (samehost.c) ---- */
void samehost_init(pdrt_ctx *ctx);
void samehost_fini(pdrt_ctx *ctx);
/* Reads the 8-byte probe token the context remote_id exposes at pid and fd, or recalls it from an
 * earlier read of the same pid and fd; 0 = known. Takes ctx->mu briefly. */
int samehost_probe_token(pdrt_ctx *ctx, uint64_t remote_id, int32_t pid, uint32_t fd, uint64_t *token);
/* The probe last read of context remote_id, for a CONFIRM sent before its WELCOME; 0 = known. */
int samehost_recall(pdrt_ctx *ctx, uint64_t remote_id, int32_t *pid, uint32_t *fd, uint64_t *token);
/* Forgets what samehost_probe_token recalls for pid and fd (the peer denied the proof). */
void samehost_forget(pdrt_ctx *ctx, int32_t pid, uint32_t fd);
void peer_map_put(peer_map *m);                  /* drops a ref under ctx->mu; unmaps on the last */
#define MAP_USE_TCP 1                            /* *rc of peer_map_get: take the TCP path instead */
/* Finds or maps the peer's cache (asking the peer over a data connection); takes a ref. NULL with
 * *rc = a status, or MAP_USE_TCP when shared memory is not usable. Without ctx->mu. */
peer_map *peer_map_get(pdrt_ctx *ctx, link_t *lk, xfer *x, uint64_t cache_id, int writable, int64_t deadline,
                       int32_t *rc);
/* 1 while the owner has not unregistered the mapped cache. */
int peer_map_valid(const peer_map *m);

/* ---- transfers (transfer.c, conn.c) ---- */
/* Takes an idle data connection of lk (or opens one) by the deadline and publishes it in x->fd
 * (so link_remove can abort it) as soon as it exists. Returns the fd, or -1 with a status in *rc.
 * Called without ctx->mu, with a ref on lk and x on lk->xfers. */
int conn_acquire(pdrt_ctx *ctx, link_t *lk, xfer *x, int64_t deadline, int32_t *rc);
/* Unpublishes x->fd and pools the connection (reusable) or closes it. */
void conn_release(pdrt_ctx *ctx, link_t *lk, xfer *x, int fd, int reusable);
/* Sends a data connection's HELLO (with a proof under the link key when key is not NULL) and reads
 * the WELCOME, checking the server's proof. NET_* result. */
int data_hello(pdrt_ctx *ctx, int fd, uint32_t kind, uint64_t server_id, uint64_t session, const uint8_t *key,
               int64_t deadline);
/* NET_* result of a transfer step → status. */
int32_t net_status(int r);

#endif /* PDRT_INTERNAL_H */
