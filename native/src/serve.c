/*
 * Serving data connections on which the peer is the requester: a small pool of worker threads fed
 * by an epoll set of those connections, so an idle connection costs a descriptor and a few bytes,
 * never a thread. Each connection is armed one-shot: a worker that gets it reads one request,
 * answers it from the local caches, and arms it again, or closes it when it ends, is shut down
 * (link removed, context destroyed) or has been idle for the idle timeout. On the client side of
 * a link, a worker first connects back to the server (a "reverse" connection), because only the
 * server listens. The pool grows on demand up to SERVE_WORKERS_MAX and lives as long as the
 * context.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "hmac.h"
#include "net.h"
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define SERVE_STACK (256 * 1024)
#define SWEEP_MS 1000            /* idle connections are looked for at most this often */

_Static_assert(sizeof(((serve *)0)->hdr) == REQ_SIZE, "serve.hdr holds one request header");
#define REVERSE_CONNECT_MS 5000
#define IOV_BATCH 256

void serve_shutdown_session(pdrt_ctx *ctx, uint64_t session) {
    for (serve *s = ctx->serves; s != NULL; s = s->next) {
        if (s->session != session) continue;
        s->aborted = 1;
        if (s->fd >= 0) shutdown(s->fd, SHUT_RDWR);
    }
}

void serve_shutdown_all(pdrt_ctx *ctx) {
    for (serve *s = ctx->serves; s != NULL; s = s->next) {
        s->aborted = 1;
        if (s->fd >= 0) shutdown(s->fd, SHUT_RDWR);
    }
}

/* Moves the listed blocks of c between the socket and memory, IOV_BATCH blocks per syscall batch. */
static int blocks_io(int fd, cache *c, const uint32_t *idx, uint32_t n, int sending, int64_t deadline) {
    struct iovec iov[IOV_BATCH];
    for (uint32_t i = 0; i < n;) {
        int k = 0;
        for (; k < IOV_BATCH && i < n; k++, i++) {
            iov[k].iov_base = c->blocks + (size_t)idx[i] * c->block_bytes;
            iov[k].iov_len = c->block_bytes;
        }
        int r = sending ? net_sendv_all(fd, iov, k, deadline) : net_recvv_all(fd, iov, k, deadline);
        if (r != NET_OK) return r;
    }
    return NET_OK;
}

static int send_resp(int fd, int32_t status, int64_t deadline) {
    uint8_t b[RESP_SIZE];
    wire_resp r = { .status = status };
    wire_put_resp(b, &r);
    return net_send_all(fd, b, RESP_SIZE, deadline);
}

static cache *lookup(pdrt_ctx *ctx, uint64_t id) {
    pthread_mutex_lock(&ctx->mu);
    cache *c = cache_get(ctx, id);
    pthread_mutex_unlock(&ctx->mu);
    return c;
}

static void release(pdrt_ctx *ctx, cache *c) {
    if (c == NULL) return;
    pthread_mutex_lock(&ctx->mu);
    cache_put(ctx, c);
    pthread_mutex_unlock(&ctx->mu);
}

static int serve_info(pdrt_ctx *ctx, serve *s, const wire_req *q, int64_t deadline) {
    cache *c = lookup(ctx, q->cache_id);
    wire_resp r = { .status = PDRT_KV_CACHE_NOT_EXIST };
    if (!s->same_host) {
        r.status = PDRT_PARAM_INVALID; /* memory is only exposed to peers proven to share the host */
    } else if (c != NULL) {
        r = (wire_resp){ .status = PDRT_SUCCESS, .num_blocks = c->num_blocks, .block_bytes = c->block_bytes,
                         .fd = (uint32_t)c->fd, .gen = c->gen };
    }
    release(ctx, c);
    uint8_t b[RESP_SIZE];
    wire_put_resp(b, &r);
    return net_send_all(s->fd, b, RESP_SIZE, deadline);
}

/* PULL: header, indices → status, blocks. PUSH: header, indices → status; blocks → status. */
static int serve_blocks(pdrt_ctx *ctx, serve *s, const wire_req *q, int64_t deadline) {
    if (q->n == 0 || q->n > PDRT_MAX_BLOCKS_PER_TRANSFER) return NET_ERR;
    uint32_t *idx = malloc((size_t)q->n * sizeof *idx);
    if (idx == NULL) return NET_ERR;
    int r = net_recv_all(s->fd, idx, (size_t)q->n * sizeof *idx, deadline);
    for (uint32_t i = 0; r == NET_OK && i < q->n; i++) idx[i] = get32((const uint8_t *)&idx[i]);
    cache *c = r == NET_OK ? lookup(ctx, q->cache_id) : NULL;
    int32_t status = PDRT_KV_CACHE_NOT_EXIST;
    if (c != NULL) status = c->block_bytes != q->block_bytes ? PDRT_PARAM_INVALID : cache_check_blocks(c, idx, q->n);
    if (r == NET_OK) r = send_resp(s->fd, status, deadline);
    if (r == NET_OK && status == PDRT_SUCCESS) {
        if (q->op == OP_PULL) {
            r = blocks_io(s->fd, c, idx, q->n, 1, deadline);
        } else {
            r = blocks_io(s->fd, c, idx, q->n, 0, deadline);
            if (r == NET_OK) r = send_resp(s->fd, PDRT_SUCCESS, deadline);
        }
    }
    release(ctx, c);
    free(idx);
    return r;
}

/* Connects back to the server for a requester there; the fd is published before connecting so a
 * shutdown can abort the attempt. */
static int reverse_connect(pdrt_ctx *ctx, serve *s) {
    int64_t deadline = now_ms() + REVERSE_CONNECT_MS;
    int fd = net_connect_start(&s->addr, s->addrlen, s->local_ip, 0);
    if (fd < 0) return -1;
    pthread_mutex_lock(&ctx->mu);
    int aborted = s->aborted;
    if (!aborted) s->fd = fd;
    pthread_mutex_unlock(&ctx->mu);
    if (aborted) {
        close(fd);
        return -1;
    }
    if (net_connect_wait(fd, deadline) != NET_OK) return -1;
    net_tune(fd, 0);
    return data_hello(ctx, fd, CONN_REVERSE, s->remote_id, s->session, s->keyed ? s->key : NULL, deadline) == NET_OK
               ? 0
               : -1;
}

/* Takes what the socket has of a request header, without waiting: a peer that sends part of one
 * and stalls holds no worker (the connection goes back to the epoll set, and the idle sweep ends
 * it). Then answers the request, bounded by the requester's own timeout. NET_OK = arm again. */
static int serve_one(pdrt_ctx *ctx, serve *s) {
    for (;;) {
        ssize_t r = recv(s->fd, s->hdr + s->hlen, REQ_SIZE - s->hlen, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return NET_OK;
        if (r <= 0) return NET_ERR;
        s->hlen += (size_t)r;
        if (s->hlen == REQ_SIZE) break;
    }
    s->hlen = 0;
    wire_req q;
    if (wire_get_req(s->hdr, &q) != 0) return NET_ERR;
    uint32_t t = q.timeout_ms > 3600000u ? 3600000u : q.timeout_ms;
    int64_t deadline = now_ms() + t + 1000;
    return q.op == OP_INFO                      ? serve_info(ctx, s, &q, deadline)
           : q.op == OP_PULL || q.op == OP_PUSH ? serve_blocks(ctx, s, &q, deadline)
                                                : NET_ERR;
}

/* Under ctx->mu: hands the connection to the epoll set for its next request. 0 = armed. */
static int arm(pdrt_ctx *ctx, serve *s) {
    struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.ptr = s };
    int op = s->armed ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(ctx->sv_ep, op, s->fd, &ev) != 0) return -1;
    s->armed = 1;
    return 0;
}

/* Under ctx->mu: the connection is done; its socket closes (leaving the epoll set with it). */
static void finish(pdrt_ctx *ctx, serve *s) {
    serve **pp = &ctx->serves;
    while (*pp != s) pp = &(*pp)->next;
    *pp = s->next;
    if (s->fd >= 0) close(s->fd);
    ctx->nserves--;
    pthread_cond_broadcast(&ctx->cv);
    wipe(s->key, sizeof s->key);
    free(s);
}

/* Under ctx->mu: shuts down connections idle past the idle timeout; their workers close them. */
static void sweep(pdrt_ctx *ctx) {
    int64_t now = now_ms();
    if (now < ctx->sv_sweep_at) return;
    ctx->sv_sweep_at = now + SWEEP_MS;
    for (serve *s = ctx->serves; s != NULL; s = s->next)
        if (!s->busy && s->fd >= 0 && s->idle_since + (int64_t)ctx->cfg.idle_timeout_ms <= now) shutdown(s->fd, SHUT_RDWR);
}

static int grow(pdrt_ctx *ctx);

static void *worker_main(void *arg) {
    pdrt_ctx *ctx = arg;
    int wait_ms = ctx->cfg.idle_timeout_ms < SWEEP_MS ? (int)ctx->cfg.idle_timeout_ms : SWEEP_MS;
    for (;;) {
        struct epoll_event ev;
        int n = epoll_wait(ctx->sv_ep, &ev, 1, wait_ms);
        pthread_mutex_lock(&ctx->mu);
        if (ctx->sv_quit) {
            pthread_mutex_unlock(&ctx->mu);
            break;
        }
        sweep(ctx);
        serve *s = NULL;
        if (n == 1 && ev.data.ptr == NULL) { /* a new connection: one unit of the semaphore each */
            uint64_t one;
            if (read(ctx->sv_wake, &one, sizeof one) == (ssize_t)sizeof one && ctx->sv_jobs != NULL) {
                s = ctx->sv_jobs;
                ctx->sv_jobs = s->job_next;
            }
        } else if (n == 1) {
            s = ev.data.ptr;
        }
        if (s == NULL) {
            pthread_mutex_unlock(&ctx->mu);
            continue;
        }
        s->busy = 1;
        /* The last idle worker took this: another may be needed for the next connection. */
        if (--ctx->sv_idle == 0) grow(ctx);
        int fresh = !s->armed, aborted = s->aborted;
        pthread_mutex_unlock(&ctx->mu);

        int ok = !aborted && (fresh ? !s->reverse || reverse_connect(ctx, s) == 0 : serve_one(ctx, s) == NET_OK);

        pthread_mutex_lock(&ctx->mu);
        s->busy = 0;
        s->idle_since = now_ms();
        ctx->sv_idle++;
        if (!ok || s->aborted || arm(ctx, s) != 0) finish(ctx, s);
        pthread_mutex_unlock(&ctx->mu);
    }
    return NULL;
}

/* Under ctx->mu: one more worker, unless the pool is at its bound. 0 = started. */
static int grow(pdrt_ctx *ctx) {
    if (ctx->sv_workers >= SERVE_WORKERS_MAX || ctx->stopping) return -1;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SERVE_STACK);
    int err = pthread_create(&ctx->sv_threads[ctx->sv_workers], &attr, worker_main, ctx);
    pthread_attr_destroy(&attr);
    if (err != 0) return -1;
    ctx->sv_workers++;
    ctx->sv_idle++;
    return 0;
}

int serve_init(pdrt_ctx *ctx) {
    ctx->sv_ep = epoll_create1(EPOLL_CLOEXEC);
    ctx->sv_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
    if (ctx->sv_ep < 0 || ctx->sv_wake < 0) return -1;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    return epoll_ctl(ctx->sv_ep, EPOLL_CTL_ADD, ctx->sv_wake, &ev);
}

void serve_stop(pdrt_ctx *ctx) {
    pthread_mutex_lock(&ctx->mu);
    ctx->sv_quit = 1;
    int n = ctx->sv_workers;
    /* Level-triggered and never read again: every worker wakes and sees sv_quit. */
    uint64_t many = 1u << 30;
    ssize_t w = ctx->sv_wake >= 0 ? write(ctx->sv_wake, &many, sizeof many) : 0;
    (void)w;
    pthread_mutex_unlock(&ctx->mu);
    for (int i = 0; i < n; i++) pthread_join(ctx->sv_threads[i], NULL);
    ctx->sv_workers = 0;
}

void serve_fini(pdrt_ctx *ctx) {
    if (ctx->sv_ep >= 0) close(ctx->sv_ep);
    if (ctx->sv_wake >= 0) close(ctx->sv_wake);
}

uint32_t serve_count_peer(pdrt_ctx *ctx, const struct sockaddr_storage *peer) {
    uint32_t n = 0;
    for (serve *s = ctx->serves; s != NULL; s = s->next) n += s->has_peer && net_same_addr(&s->peer, peer);
    return n;
}

/* Under ctx->mu: at the total cap, the connection idle longest is shut down to make room (its
 * requester finds it dead and opens another when it needs one), so idle connections held by some
 * peers cannot lock others out. 1 = room. */
static int make_room(pdrt_ctx *ctx) {
    if ((uint32_t)ctx->nserves < ctx->cfg.max_conns) return 1;
    serve *oldest = NULL;
    for (serve *s = ctx->serves; s != NULL; s = s->next)
        if (s->armed && !s->busy && !s->aborted && s->fd >= 0 && (oldest == NULL || s->idle_since < oldest->idle_since))
            oldest = s;
    if (oldest == NULL) return 0;
    oldest->aborted = 1;
    shutdown(oldest->fd, SHUT_RDWR); /* its worker closes it and counts it out */
    return 1;
}

int serve_spawn(pdrt_ctx *ctx, serve *s) {
    /* The first worker comes with the first connection; more as the busy ones run out. */
    if (ctx->stopping || !make_room(ctx) || (ctx->sv_workers == 0 && grow(ctx) != 0)) {
        free(s);
        return -1;
    }
    s->ctx = ctx;
    s->idle_since = now_ms();
    s->next = ctx->serves;
    ctx->serves = s;
    ctx->nserves++;
    if (s->fd >= 0 && !s->reverse) { /* a connection the peer opened: straight to the epoll set */
        if (arm(ctx, s) == 0) return 0;
    } else { /* a reverse connection still to be made: a worker makes it */
        s->job_next = ctx->sv_jobs;
        ctx->sv_jobs = s;
        uint64_t one = 1;
        if (write(ctx->sv_wake, &one, sizeof one) == (ssize_t)sizeof one) return 0;
        ctx->sv_jobs = s->job_next;
    }
    ctx->serves = s->next;
    ctx->nserves--;
    free(s);
    return -1;
}
