/*
 * The link port's listener (handshake.h): accepts one connection per wakeup within the handshake
 * budget (in total and per peer address) and the process's descriptor limit, pausing with a
 * back-off while descriptors are short, and hands each socket to its handshake (handshake.c).
 */
#define _GNU_SOURCE
#include "handshake.h"
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* Pause of the listener when the process is short of descriptors: doubled up to the maximum. */
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000

/* Room for one more handshake from addr: a peer over its own budget is refused, and when the total
 * budget is used up the oldest handshake gives way (a real peer finishes in a round trip, so
 * slots held by peers that never finish cannot lock it out). 1 = room. */
static int handshake_room(pdrt_ctx *ctx, pendings *ps, const struct sockaddr_storage *addr) {
    uint32_t from_peer = 0;
    for (const pending *q = ps->head; q != NULL; q = q->next)
        if (net_same_addr(&q->addr, addr) && ++from_peer >= ctx->cfg.max_handshakes_per_peer) return 0;
    if (ps->count >= ctx->cfg.max_handshakes && ps->head != NULL) hs_drop(ctx, ps, ps->head);
    return 1;
}

/* The process is short of descriptors: stop accepting for a while (the listener leaves the epoll
 * set, so its backlog cannot make this thread spin), backing off while the shortage lasts, and
 * say so once. Peers waiting in the backlog time out or are refused by the kernel. */
static void accept_pause(pdrt_ctx *ctx, pendings *ps, const char *why) {
    if (ps->resume_at == 0) ep_del(ctx, ctx->listen_fd);
    ps->backoff_ms = ps->backoff_ms == 0 ? BACKOFF_MIN_MS : ps->backoff_ms * 2;
    if (ps->backoff_ms > BACKOFF_MAX_MS) ps->backoff_ms = BACKOFF_MAX_MS;
    ps->resume_at = now_ms() + ps->backoff_ms;
    if (!ps->told) {
        ps->told = 1;
        fprintf(stderr, "pdrt: cluster %llu: %s; link-port connections are refused while it lasts\n",
                (unsigned long long)ctx->id, why);
    }
}

void hs_resume(pdrt_ctx *ctx, pendings *ps) {
    if (ps->resume_at == 0 || now_ms() < ps->resume_at) return;
    ps->resume_at = 0;
    if (ep_add(ctx, ctx->listen_fd) != 0) accept_pause(ctx, ps, "cannot watch the listener");
}

/* The highest descriptor number the link port may take: the rest of the process (its management
 * API above all) keeps an eighth of the limit, at least 64, for itself. Descriptors are numbered
 * lowest first, so the number tells how many are open. */
static int fd_ceiling(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30)) return 1 << 30;
    int soft = (int)rl.rlim_cur, headroom = soft / 8 > 64 ? soft / 8 : 64;
    return soft - headroom;
}

/* Accepts one connection per wakeup: the listener is level-triggered, so a backlog shows up again
 * in the next epoll_wait (with whatever else is ready) instead of costing an accept that finds
 * nothing after every connection. */
void hs_listen(pdrt_ctx *ctx, pendings *ps) {
    struct sockaddr_storage addr;
    socklen_t alen = sizeof addr;
    int fd;
    do fd = accept4(ctx->listen_fd, (struct sockaddr *)&addr, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
    while (fd < 0 && (errno == EINTR || errno == ECONNABORTED));
    if (fd < 0) {
        if (errno != EMFILE && errno != ENFILE && errno != ENOBUFS && errno != ENOMEM) return;
        /* Out of descriptors: the oldest unfinished handshake gives its own up (the backlog is
         * read again at the next wakeup), or, with none, accepting pauses. */
        if (ps->head != NULL) hs_drop(ctx, ps, ps->head);
        else accept_pause(ctx, ps, "out of file descriptors");
        return;
    }
    int ceiling = fd_ceiling();
    if (fd >= ceiling) {
        /* What is left belongs to the rest of the process. The oldest unfinished handshake gives
         * its descriptor to this one (moved down to a number below the ceiling, so the next
         * number handed out still tells how many are open); with none, the connection is refused. */
        int low = -1;
        if (ps->head != NULL) {
            hs_drop(ctx, ps, ps->head);
            low = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        }
        if (low >= 0 && low < ceiling) {
            close(fd);
            fd = low;
        } else {
            if (low >= 0) close(low);
            close(fd);
            accept_pause(ctx, ps, "near the descriptor limit");
            return;
        }
        if (!ps->told) {
            ps->told = 1;
            fprintf(stderr, "pdrt: cluster %llu: near the descriptor limit; the oldest unfinished handshakes give way\n",
                    (unsigned long long)ctx->id);
        }
    }
    ps->backoff_ms = 0;
    /* TCP_NODELAY and keepalive come from the listener. Handshakes have a budget of their own,
     * in total and per peer address, so peers that never finish one cannot take what links and
     * data connections need; beyond it the connection is refused at once. */
    pending *p = handshake_room(ctx, ps, &addr) ? calloc(1, sizeof *p) : NULL;
    if (p != NULL) {
        p->fd = fd;
        p->addr = addr;
        p->deadline = now_ms() + ctx->cfg.handshake_timeout_ms;
    }
    if (p == NULL || hs_add(ps, p) != 0) {
        free(p);
        close(fd);
        return;
    }
    /* Accepted once its first bytes arrived (TCP_DEFER_ACCEPT): the HELLO is usually here. */
    hs_advance(ctx, ps, p);
}
