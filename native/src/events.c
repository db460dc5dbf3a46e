/* The event queue: a bounded ring drained by pdrt_poll_events, waited on by pdrt_wait_events. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

/* Under ctx->mu. A full queue drops its oldest event: a consumer that stopped draining should
 * not make the runtime grow without bound, and pdrt_list_links still tells the current truth. */
void event_push(pdrt_ctx *ctx, uint32_t kind, uint32_t side, uint64_t remote_id, int32_t code) {
    if (ctx->ev_len == MAX_EVENTS) {
        ctx->ev_head = (ctx->ev_head + 1) % MAX_EVENTS;
        ctx->ev_len--;
    }
    pdrt_event *e = &ctx->events[(ctx->ev_head + ctx->ev_len) % MAX_EVENTS];
    e->kind = kind;
    e->side = side;
    e->remote_cluster_id = remote_id;
    e->code = code;
    e->reserved = 0;
    e->time_ms = (uint64_t)wall_ms();
    ctx->ev_len++;
    pthread_cond_broadcast(&ctx->ev_cv);
}

int32_t pdrt_poll_events(pdrt_ctx *ctx, pdrt_event *out, uint32_t cap, uint32_t *n) {
    if (n == NULL || (out == NULL && cap > 0) || ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    pthread_mutex_lock(&ctx->mu);
    uint32_t k = 0;
    while (k < cap && ctx->ev_len > 0) {
        out[k++] = ctx->events[ctx->ev_head];
        ctx->ev_head = (ctx->ev_head + 1) % MAX_EVENTS;
        ctx->ev_len--;
    }
    pthread_mutex_unlock(&ctx->mu);
    *n = k;
    ctx_leave(ctx);
    return PDRT_SUCCESS;
}

int32_t pdrt_wait_events(pdrt_ctx *ctx, int32_t timeout_ms) {
    if (timeout_ms < 0 || ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    int64_t deadline = now_ms() + timeout_ms;
    pthread_mutex_lock(&ctx->mu);
    while (ctx->ev_len == 0 && !ctx->stopping)
        if (cv_wait_until(&ctx->ev_cv, &ctx->mu, deadline) == ETIMEDOUT) break;
    int32_t rc = ctx->ev_len > 0 ? PDRT_SUCCESS : ctx->stopping ? PDRT_FAILED : PDRT_TIMEOUT;
    pthread_mutex_unlock(&ctx->mu);
    ctx_leave(ctx);
    return rc;
}
