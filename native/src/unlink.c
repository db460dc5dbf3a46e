/*
 * pdrt_unlink on either side of a link. Normal: mark UNLINKING, send UNLINK, wait (one deadline for
 * the whole call) for the I/O thread to see the UNLINK_ACK, then close. Force: forget the link at
 * once and tell nobody; a client parks its socket (see pdrt.h) so the server's end stays intact.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "wire.h"

#include <errno.h>

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
    lk->peer_gone = lk->ctl_fd < 0 || !lk->watched || ctl_send(lk->ctl_fd, CTL_UNLINK, lk->session) != 0;
    lk->refs++;
    *waiting = lk;
    return PDRT_SUCCESS;
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
    for (uint32_t i = 0; i < n; i++) {
        if (rets[i] != PDRT_SUCCESS) continue;
        for (uint32_t k = 0; k < i && rets[i] == PDRT_SUCCESS; k++)
            if (rets[k] != PDRT_PARAM_INVALID && clusters[k].remote_cluster_id == clusters[i].remote_cluster_id)
                rets[i] = PDRT_PROCESSING_LINK;
        if (rets[i] == PDRT_SUCCESS)
            rets[i] = begin(ctx, link_find(ctx, clusters[i].remote_cluster_id), force, &waiting[i]);
    }
    for (;;) {
        int open = 0;
        for (uint32_t i = 0; i < n; i++)
            if (waiting[i] != NULL && !waiting[i]->unlink_acked && !waiting[i]->peer_gone) open = 1;
        if (!open || ctx->stopping || cv_wait_until(&ctx->cv, &ctx->mu, deadline) == ETIMEDOUT) break;
    }
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
