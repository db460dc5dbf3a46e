/*
 * pdrt_unlink on either side of a link. Normal: mark UNLINKING, take the control socket back from
 * the I/O thread, send UNLINK, read the UNLINK_ACK on this thread (one deadline for the whole
 * call), then close. Force: forget the link at once and tell nobody; a client parks its socket
 * (see pdrt.h) so the server's end stays intact.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

/* Under ctx->mu. Starts the unlink of one cluster; returns its code, with *waiting set when the
 * peer has been asked and the answer must be awaited. */
static int32_t begin(pdrt_ctx *ctx, link_t *lk, int force, link_t **waiting) {
    if (lk == NULL) return PDRT_NOT_YET_LINK;
    if (lk->state == PDRT_LINK_LINKING || lk->state == PDRT_LINK_UNLINKING) return PDRT_PROCESSING_LINK;
    if (force) {
        link_remove(ctx, lk, lk->side == PDRT_SIDE_CLIENT);
        return PDRT_SUCCESS;
    }
    if (lk->inflight > 0) return PDRT_LINK_BUSY;
    lk->state = PDRT_LINK_UNLINKING;
    lk->unlink_acked = 0;
    /* From here this thread reads the socket: the answer needs no hand-off from the I/O thread. */
    int watched = lk->watched;
    link_unwatch(ctx, lk);
    lk->peer_gone = lk->ctl_fd < 0 || !watched || ctl_send(lk->ctl_fd, CTL_UNLINK, lk->session) != 0;
    lk->refs++;
    *waiting = lk;
    return PDRT_SUCCESS;
}

/* Reads the control messages that arrived on an unlinking link's socket. Without ctx->mu: while
 * UNLINKING, the socket and the fields below belong to the unlinking thread. */
static void read_answer(link_t *lk) {
    for (;;) {
        uint8_t b[CTL_SIZE * 4];
        memcpy(b, lk->rbuf, lk->rlen);
        size_t want = sizeof b - lk->rlen;
        ssize_t r = recv(lk->ctl_fd, b + lk->rlen, want, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (r <= 0) {
            lk->peer_gone = 1;
            return;
        }
        size_t have = lk->rlen + (size_t)r, off = 0;
        for (; have - off >= CTL_SIZE; off += CTL_SIZE) {
            wire_ctl m;
            if (wire_get_ctl(b + off, &m) != 0) {
                lk->peer_gone = 1;
                return;
            }
            if (m.type == CTL_UNLINK_ACK) {
                lk->unlink_acked = 1;
            } else if (m.type == CTL_UNLINK) { /* both ends unlinking at once: each one is told */
                ctl_send(lk->ctl_fd, CTL_UNLINK_ACK, m.arg);
                lk->unlink_acked = 1;
            }
            /* CTL_OPEN_REVERSE: a transfer of the peer's that our UNLINK is about to fail anyway. */
        }
        lk->rlen = have - off;
        memcpy(lk->rbuf, b + off, lk->rlen);
        if (lk->unlink_acked || (size_t)r < want) return;
    }
}

/* Waits (by the deadline, or until pdrt_destroy begins) for every asked peer to answer or vanish. */
static void await_answers(pdrt_ctx *ctx, link_t *const *waiting, uint32_t n, int64_t deadline) {
    for (;;) {
        struct pollfd pfd[PDRT_MAX_CLUSTERS_PER_CALL + 1];
        link_t *map[PDRT_MAX_CLUSTERS_PER_CALL];
        nfds_t np = 0;
        for (uint32_t i = 0; i < n; i++) {
            link_t *lk = waiting[i];
            if (lk == NULL || lk->unlink_acked || lk->peer_gone) continue;
            pfd[np] = (struct pollfd){ .fd = lk->ctl_fd, .events = POLLIN };
            map[np++] = lk;
        }
        if (np == 0) return;
        pfd[np] = (struct pollfd){ .fd = ctx->stop_fd, .events = POLLIN };
        int r = poll(pfd, np + 1, remaining_ms(deadline));
        if (r < 0 && errno != EINTR) return;
        if (r == 0 && remaining_ms(deadline) == 0) return;
        if (r > 0 && pfd[np].revents) return;
        for (nfds_t k = 0; r > 0 && k < np; k++)
            if (pfd[k].revents) read_answer(map[k]);
    }
}

int32_t pdrt_unlink(pdrt_ctx *ctx, const pdrt_cluster *clusters, uint32_t n, int32_t timeout_ms, int32_t force,
                    int32_t *rets) {
    int32_t rc = batch_check(clusters, n, timeout_ms, rets);
    if (rc != PDRT_SUCCESS) return rc;
    if (ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    int64_t deadline = now_ms() + timeout_ms;
    link_t *waiting[PDRT_MAX_CLUSTERS_PER_CALL] = { 0 };
    for (uint32_t i = 0; i < n; i++) rets[i] = cluster_check(ctx, &clusters[i], 0, NULL, NULL);

    pthread_mutex_lock(&ctx->mu);
    int asked = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (rets[i] != PDRT_SUCCESS) continue;
        for (uint32_t k = 0; k < i && rets[i] == PDRT_SUCCESS; k++)
            if (rets[k] != PDRT_PARAM_INVALID && clusters[k].remote_cluster_id == clusters[i].remote_cluster_id)
                rets[i] = PDRT_PROCESSING_LINK;
        if (rets[i] == PDRT_SUCCESS)
            rets[i] = begin(ctx, link_find(ctx, clusters[i].remote_cluster_id), force, &waiting[i]);
        asked |= waiting[i] != NULL;
    }
    int stopping = ctx->stopping;
    pthread_mutex_unlock(&ctx->mu);
    if (asked && !stopping) await_answers(ctx, waiting, n, deadline);
    pthread_mutex_lock(&ctx->mu);
    for (uint32_t i = 0; i < n; i++) {
        link_t *lk = waiting[i];
        if (lk == NULL) continue;
        /* Not acknowledged (peer dead, stuck, or too slow): the peer must unlink on its own. */
        if (!lk->unlink_acked) rets[i] = PDRT_NOTIFY_PROMPT_UNLINK_FAILED;
        link_remove(ctx, lk, 0);
        link_unref(ctx, lk);
    }
    pthread_mutex_unlock(&ctx->mu);
    for (uint32_t i = 0; i < n; i++)
        if (rets[i] != PDRT_SUCCESS) rc = PDRT_FAILED;
    ctx_leave(ctx);
    return rc;
}
