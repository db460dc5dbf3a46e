/*
 * Serving threads: one per data connection on which the peer is the requester. A thread reads a
 * request, answers it from the local caches, and loops until the connection closes or is shut
 * down (link removed, context destroyed). On the client side of a link, a serving thread first
 * connects back to the server (a "reverse" connection), because only the server listens.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "hmac.h"
#include "net.h"
#include "wire.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SERVE_STACK (256 * 1024)
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
    if (q->n == 0 || q->n > MAX_BLOCKS_PER_CALL) return NET_ERR;
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

static void *serve_main(void *arg) {
    serve *s = arg;
    pdrt_ctx *ctx = s->ctx;
    if (!s->reverse || reverse_connect(ctx, s) == 0) {
        uint8_t b[REQ_SIZE];
        wire_req q;
        /* Idle between requests for as long as the link lives; each request bounds its own waits
         * by the requester's remaining time plus a margin. */
        /* A connection idle for the idle timeout is closed: idle ones cost nothing else, but
         * their number is capped. (A requester finds a closed pooled connection dead and opens
         * another.) */
        while (net_recv_all(s->fd, b, REQ_SIZE, now_ms() + ctx->cfg.idle_timeout_ms) == NET_OK &&
               wire_get_req(b, &q) == 0) {
            uint32_t t = q.timeout_ms > 3600000u ? 3600000u : q.timeout_ms;
            int64_t deadline = now_ms() + t + 1000;
            int r = q.op == OP_INFO ? serve_info(ctx, s, &q, deadline)
                  : q.op == OP_PULL || q.op == OP_PUSH ? serve_blocks(ctx, s, &q, deadline)
                  : NET_ERR;
            if (r != NET_OK) break;
        }
    }
    pthread_mutex_lock(&ctx->mu);
    serve **pp = &ctx->serves;
    while (*pp != s) pp = &(*pp)->next;
    *pp = s->next;
    if (s->fd >= 0) close(s->fd);
    /* pdrt_destroy may free ctx as soon as it sees threads at 0, which can be while this thread is
     * still inside the unlock below: it joins this thread first, found in serve_last. The thread
     * that ended before this one is joined here, so at most one waits to be joined. */
    pthread_t prev = ctx->serve_last;
    int joins_prev = ctx->serve_last_set;
    ctx->serve_last = pthread_self();
    ctx->serve_last_set = 1;
    ctx->threads--;
    pthread_cond_broadcast(&ctx->cv);
    pthread_mutex_unlock(&ctx->mu);
    wipe(s->key, sizeof s->key);
    free(s);
    if (joins_prev) pthread_join(prev, NULL);
    return NULL;
}

void serve_join_last(pdrt_ctx *ctx) {
    if (!ctx->serve_last_set) return;
    pthread_join(ctx->serve_last, NULL);
    ctx->serve_last_set = 0;
}

uint32_t serve_count(pdrt_ctx *ctx, uint64_t session) {
    uint32_t n = 0;
    for (serve *s = ctx->serves; s != NULL; s = s->next) n += s->session == session;
    return n;
}

int serve_spawn(pdrt_ctx *ctx, serve *s) {
    if ((uint32_t)ctx->threads >= ctx->cfg.max_conns || ctx->stopping) {
        free(s);
        return -1;
    }
    s->ctx = ctx;
    s->next = ctx->serves;
    ctx->serves = s;
    ctx->threads++;
    pthread_attr_t attr;
    pthread_attr_init(&attr); /* joinable: see the end of serve_main */
    pthread_attr_setstacksize(&attr, SERVE_STACK);
    pthread_t t;
    int err = pthread_create(&t, &attr, serve_main, s);
    pthread_attr_destroy(&attr);
    if (err == 0) return 0;
    ctx->serves = s->next;
    ctx->threads--;
    free(s);
    return -1;
}
