/*
 * TCP keepalive on client control sockets, armed once a link has lived KEEPALIVE_ARM_MS.
 *
 * Keepalive takes four setsockopt calls per socket, a tenth of what a whole link+unlink costs,
 * and it only matters to a link that stays idle for TCP_KEEPIDLE (10 s): links that come and go
 * within a second never need it. New client links wait in a FIFO (due times are link time + a
 * constant, so in order); a timerfd in the I/O thread's epoll set fires when the oldest is due,
 * and the I/O thread arms every due link at once. The timer is set only when the queue gets its
 * first link while the timer is idle, so a burst of links costs one timerfd_settime call.
 * (Server-side sockets inherit keepalive from the listener and never wait here.)
 */
#define _GNU_SOURCE
#include "internal.h"
#include "net.h"

#include <stdint.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define KEEPALIVE_ARM_MS 1000

int ka_init(pdrt_ctx *ctx) {
    ctx->ka_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ctx->ka_fd < 0) return -1;
    return ep_add(ctx, ctx->ka_fd);
}

/* Under ctx->mu. */
static void set_timer(pdrt_ctx *ctx, int64_t due_ms) {
    struct itimerspec its = { .it_value = { .tv_sec = due_ms / 1000, .tv_nsec = (long)(due_ms % 1000) * 1000000L } };
    ctx->ka_timer_set = timerfd_settime(ctx->ka_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0;
}

void ka_queue(pdrt_ctx *ctx, link_t *lk) {
    if (lk->ka_queued || lk->ctl_fd < 0) return;
    lk->ka_due = now_ms() + KEEPALIVE_ARM_MS;
    if (!ctx->ka_timer_set) set_timer(ctx, lk->ka_due);
    if (!ctx->ka_timer_set) { /* no timer: arm it now rather than never */
        net_keepalive(lk->ctl_fd);
        return;
    }
    lk->ka_prev = ctx->ka_tail;
    lk->ka_next = NULL;
    if (ctx->ka_tail != NULL) ctx->ka_tail->ka_next = lk;
    else ctx->ka_head = lk;
    ctx->ka_tail = lk;
    lk->ka_queued = 1;
}

void ka_dequeue(pdrt_ctx *ctx, link_t *lk) {
    if (!lk->ka_queued) return;
    if (lk->ka_prev != NULL) lk->ka_prev->ka_next = lk->ka_next;
    else ctx->ka_head = lk->ka_next;
    if (lk->ka_next != NULL) lk->ka_next->ka_prev = lk->ka_prev;
    else ctx->ka_tail = lk->ka_prev;
    lk->ka_prev = lk->ka_next = NULL;
    lk->ka_queued = 0;
}

void ka_fire(pdrt_ctx *ctx) {
    uint64_t expirations;
    if (read(ctx->ka_fd, &expirations, sizeof expirations) != (ssize_t)sizeof expirations) return; /* stale */
    pthread_mutex_lock(&ctx->mu);
    ctx->ka_timer_set = 0;
    int64_t now = now_ms();
    while (ctx->ka_head != NULL && ctx->ka_head->ka_due <= now) {
        link_t *lk = ctx->ka_head;
        ka_dequeue(ctx, lk);
        net_keepalive(lk->ctl_fd);
    }
    if (ctx->ka_head != NULL) set_timer(ctx, ctx->ka_head->ka_due);
    while (!ctx->ka_timer_set && ctx->ka_head != NULL) { /* no timer: arm the rest now */
        link_t *lk = ctx->ka_head;
        ka_dequeue(ctx, lk);
        net_keepalive(lk->ctl_fd);
    }
    pthread_mutex_unlock(&ctx->mu);
}
