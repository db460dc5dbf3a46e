/*
 * Block transfers over a link: pull (peer's blocks → local blocks) and push (local → peer), over
 * a data connection or, between same-host peers, by copying from/into the peer's mapped cache.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "net.h"
#include "wire.h"

#include <stdlib.h>
#include <string.h>

#define IOV_BATCH 256

typedef struct {
    pdrt_ctx *ctx;
    link_t *lk;
    cache *local;
    xfer x;
    int64_t deadline;
    uint64_t remote_cache;
    const uint32_t *remote_idx;
    const uint32_t *local_idx;
    uint32_t n;
    int pushing;
} job;

/* Takes the link and the local cache for the transfer and registers it as in flight. */
static int32_t job_begin(job *j, uint64_t remote_id, uint64_t local_cache) {
    pdrt_ctx *ctx = j->ctx;
    int32_t rc = PDRT_SUCCESS;
    pthread_mutex_lock(&ctx->mu);
    link_t *lk = link_find(ctx, remote_id);
    if (lk == NULL || lk->state == PDRT_LINK_LINKING || lk->state == PDRT_LINK_UNLINKING) {
        rc = PDRT_NOT_YET_LINK;
    } else if (lk->state == PDRT_LINK_UNUSABLE) {
        rc = PDRT_LINK_FAILED; /* a timed-out link must be unlinked and linked again */
    } else if ((j->local = cache_get(ctx, local_cache)) == NULL) {
        rc = PDRT_KV_CACHE_NOT_EXIST;
    } else {
        j->lk = lk;
        lk->refs++;
        lk->inflight++;
        j->x.fd = -1;
        j->x.next = lk->xfers;
        lk->xfers = &j->x;
    }
    pthread_mutex_unlock(&ctx->mu);
    return rc;
}

static void job_end(job *j, int32_t rc) {
    pdrt_ctx *ctx = j->ctx;
    link_t *lk = j->lk;
    pthread_mutex_lock(&ctx->mu);
    xfer **pp = &lk->xfers;
    while (*pp != &j->x) pp = &(*pp)->next;
    *pp = j->x.next;
    lk->inflight--;
    if (rc == PDRT_TIMEOUT) link_set_unusable(ctx, lk);
    cache_put(ctx, j->local);
    link_unref(ctx, lk);
    pthread_cond_broadcast(&ctx->cv);
    pthread_mutex_unlock(&ctx->mu);
}

static int local_blocks_io(int fd, const job *j, int sending) {
    struct iovec iov[IOV_BATCH];
    cache *c = j->local;
    for (uint32_t i = 0; i < j->n;) {
        int k = 0;
        for (; k < IOV_BATCH && i < j->n; k++, i++) {
            iov[k].iov_base = c->blocks + (size_t)j->local_idx[i] * c->block_bytes;
            iov[k].iov_len = c->block_bytes;
        }
        int r = sending ? net_sendv_all(fd, iov, k, j->deadline) : net_recvv_all(fd, iov, k, j->deadline);
        if (r != NET_OK) return r;
    }
    return NET_OK;
}

static int recv_status(int fd, int64_t deadline, int32_t *status) {
    uint8_t b[RESP_SIZE];
    wire_resp r;
    int rc = net_recv_all(fd, b, RESP_SIZE, deadline);
    if (rc == NET_OK && wire_get_resp(b, &r) != 0) rc = NET_ERR;
    if (rc == NET_OK) *status = r.status;
    return rc;
}

static int32_t tcp_transfer(job *j) {
    int32_t rc;
    int fd = conn_acquire(j->ctx, j->lk, &j->x, j->deadline, &rc);
    if (fd < 0) return rc;
    size_t hdr = REQ_SIZE + (size_t)j->n * 4;
    uint8_t *b = malloc(hdr);
    if (b == NULL) {
        conn_release(j->ctx, j->lk, &j->x, fd, 1);
        return PDRT_OUT_OF_MEMORY;
    }
    wire_req q = { .op = j->pushing ? OP_PUSH : OP_PULL, .n = j->n, .cache_id = j->remote_cache,
                   .block_bytes = j->local->block_bytes, .timeout_ms = (uint32_t)remaining_ms(j->deadline) };
    wire_put_req(b, &q);
    for (uint32_t i = 0; i < j->n; i++) put32(b + REQ_SIZE + (size_t)i * 4, j->remote_idx[i]);
    int32_t status = PDRT_FAILED;
    int r = net_send_all(fd, b, hdr, j->deadline);
    free(b);
    if (r == NET_OK) r = recv_status(fd, j->deadline, &status);
    if (r == NET_OK && status == PDRT_SUCCESS) {
        r = local_blocks_io(fd, j, j->pushing);
        if (r == NET_OK && j->pushing) r = recv_status(fd, j->deadline, &status);
    }
    conn_release(j->ctx, j->lk, &j->x, fd, r == NET_OK);
    return r == NET_OK ? status : net_status(r);
}

/* Copies between the local cache and the peer's mapped cache; MAP_USE_TCP when not mappable. */
static int32_t shm_transfer(job *j) {
    int32_t rc;
    peer_map *m = peer_map_get(j->ctx, j->lk, &j->x, j->remote_cache, j->pushing, j->deadline, &rc);
    if (m == NULL) return rc;
    cache *c = j->local;
    rc = PDRT_SUCCESS;
    if (m->block_bytes != c->block_bytes) rc = PDRT_PARAM_INVALID;
    for (uint32_t i = 0; rc == PDRT_SUCCESS && i < j->n; i++)
        if (j->remote_idx[i] >= m->num_blocks) rc = PDRT_KV_CACHE_NOT_EXIST;
    uint8_t *remote = m->base + SHM_HDR_BYTES;
    size_t bb = c->block_bytes;
    for (uint32_t i = 0; rc == PDRT_SUCCESS && i < j->n; i++) {
        uint8_t *r = remote + (size_t)j->remote_idx[i] * bb;
        uint8_t *l = c->blocks + (size_t)j->local_idx[i] * bb;
        if (j->pushing)
            memcpy(r, l, bb);
        else
            memcpy(l, r, bb);
    }
    /* Unregistered while we copied: what we read may be recycled memory. */
    if (rc == PDRT_SUCCESS && !peer_map_valid(m)) rc = PDRT_KV_CACHE_NOT_EXIST;
    pthread_mutex_lock(&j->ctx->mu);
    peer_map_put(m);
    pthread_mutex_unlock(&j->ctx->mu);
    return rc;
}

static int32_t transfer(pdrt_ctx *ctx, int pushing, uint64_t remote_id, uint64_t remote_cache,
                        const uint32_t *remote_idx, uint64_t local_cache, const uint32_t *local_idx, uint32_t n,
                        int32_t timeout_ms) {
    if (remote_idx == NULL || local_idx == NULL || n == 0 || n > PDRT_MAX_BLOCKS_PER_TRANSFER || timeout_ms <= 0 ||
        ctx_enter(ctx) != 0)
        return PDRT_PARAM_INVALID;
    job j = { .ctx = ctx, .deadline = now_ms() + timeout_ms, .remote_cache = remote_cache, .remote_idx = remote_idx,
              .local_idx = local_idx, .n = n, .pushing = pushing };
    int32_t rc = job_begin(&j, remote_id, local_cache);
    if (rc == PDRT_SUCCESS) {
        rc = cache_check_blocks(j.local, local_idx, n);
        if (rc == PDRT_SUCCESS) rc = j.lk->same_host ? shm_transfer(&j) : MAP_USE_TCP;
        if (rc == MAP_USE_TCP) rc = tcp_transfer(&j);
        job_end(&j, rc);
    }
    ctx_leave(ctx);
    return rc;
}

int32_t pdrt_pull_blocks(pdrt_ctx *ctx, uint64_t remote_cluster_id, uint64_t remote_cache_id, const uint32_t *src,
                         uint64_t dst_cache_id, const uint32_t *dst, uint32_t n, int32_t timeout_ms) {
    return transfer(ctx, 0, remote_cluster_id, remote_cache_id, src, dst_cache_id, dst, n, timeout_ms);
}

int32_t pdrt_push_blocks(pdrt_ctx *ctx, uint64_t remote_cluster_id, uint64_t src_cache_id, const uint32_t *src,
                         uint64_t remote_cache_id, const uint32_t *dst, uint32_t n, int32_t timeout_ms) {
    return transfer(ctx, 1, remote_cluster_id, remote_cache_id, dst, src_cache_id, src, n, timeout_ms);
}
