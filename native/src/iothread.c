/*
 * The background I/O thread of a context: reads control messages and notices dead peers on every
 * established control connection, and drives the server-side handshakes (handshake.c) of the
 * connections its listener accepts.
 *
 * Readiness comes from an epoll set, so a wakeup costs O(ready sockets) however many links there
 * are. Other threads add and remove control sockets in that set themselves (epoll_ctl is safe
 * against a concurrent epoll_wait), so linking and unlinking never have to wake this thread.
 */
#define _GNU_SOURCE
#include "handshake.h"
#include "auth.h"
#include "net.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_READY 64
#define CTL_BATCH 16              /* control messages taken per read */


/* ---- established control connections ---- */

/* Under ctx->mu: the peer vanished; the link is dropped with a PEER_LOST event. (A link being
 * unlinked normally is not watched: its unlinking thread reads the socket and sees the loss.) */
static void ctl_lost(pdrt_ctx *ctx, link_t *lk) {
    event_push(ctx, PDRT_EVENT_PEER_LOST, lk->side, lk->remote_id, PDRT_LINK_FAILED);
    link_remove(ctx, lk, 0);
}

static void spawn_reverse(pdrt_ctx *ctx, link_t *lk) {
    serve *s = calloc(1, sizeof *s);
    if (s == NULL) return;
    s->fd = -1;
    s->reverse = 1;
    s->remote_id = lk->remote_id;
    s->session = lk->session;
    s->same_host = lk->same_host;
    memcpy(s->key, lk->key, sizeof s->key);
    s->keyed = lk->keyed;
    s->addr = lk->addr;
    s->addrlen = lk->addrlen;
    memcpy(s->local_ip, lk->local_ip, PDRT_IP_MAX);
    serve_spawn(ctx, s); /* on failure the requester times out, which is its contract */
}

/* Under ctx->mu. Returns 0 while the link is still listed. */
static int ctl_message(pdrt_ctx *ctx, link_t *lk, const wire_ctl *m) {
    switch (m->type) {
    case CTL_UNLINK:
        ctl_send(lk->ctl_fd, CTL_UNLINK_ACK, m->arg);
        event_push(ctx, PDRT_EVENT_PEER_UNLINKED, lk->side, lk->remote_id, PDRT_SUCCESS);
        link_remove(ctx, lk, 0);
        return -1;
    case CTL_UNLINK_ACK: /* late, for an unlink that gave up waiting: nothing to do */
        return 0;
    case CTL_OPEN_REVERSE:
        if (lk->side == PDRT_SIDE_CLIENT) spawn_reverse(ctx, lk);
        return 0;
    default:
        ctl_lost(ctx, lk);
        return -1;
    }
}

/* Under ctx->mu. Reads what a watched control socket has, several messages per read: a short read
 * means the socket is drained (anything later raises a new event), which spares a read that finds
 * nothing. */
static void on_ctl(pdrt_ctx *ctx, link_t *lk, int fd) {
    for (;;) {
        uint8_t b[CTL_SIZE * CTL_BATCH];
        memcpy(b, lk->rbuf, lk->rlen);
        size_t want = sizeof b - lk->rlen;
        ssize_t r = recv(fd, b + lk->rlen, want, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (r <= 0) {
            ctl_lost(ctx, lk);
            break;
        }
        size_t have = lk->rlen + (size_t)r, off = 0;
        int gone = 0;
        for (; !gone && have - off >= CTL_SIZE; off += CTL_SIZE) {
            wire_ctl m;
            if (wire_get_ctl(b + off, &m) != 0) m.type = 0;
            gone = ctl_message(ctx, lk, &m) != 0;
        }
        if (gone) break;
        lk->rlen = have - off;
        memcpy(lk->rbuf, b + off, lk->rlen);
        if ((size_t)r < want) break;
    }
}

/* Under ctx->mu. A socket the client force-unlinked: it stays open, silent, until the server lets
 * go of its end. A normal unlink from the server is still acknowledged so the server gets SUCCESS. */
static void on_detached(pdrt_ctx *ctx, int fd) {
    size_t at = 0;
    while (at < ctx->detached.n && ctx->detached.v[at] != fd) at++;
    if (at == ctx->detached.n) return; /* a stale event */
    uint8_t b[CTL_SIZE];
    int done = 0;
    for (;;) {
        ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (r <= 0) {
            done = 1;
            break;
        }
        wire_ctl m;
        if (r == CTL_SIZE && wire_get_ctl(b, &m) == 0 && m.type == CTL_UNLINK) {
            ctl_send(fd, CTL_UNLINK_ACK, m.arg);
            done = 1;
            break;
        }
    }
    if (done) {
        fdvec_remove_at(&ctx->detached, at);
        ep_del(ctx, fd);
        close(fd);
    }
}

/* A ready socket other than the listener and the handshakes: a watched link's, a parked one, or
 * one whose event went stale, told apart under ctx->mu. */
static void on_socket(pdrt_ctx *ctx, int fd) {
    pthread_mutex_lock(&ctx->mu);
    link_t *lk = link_find_fd(ctx, fd);
    if (lk != NULL) on_ctl(ctx, lk, fd);
    else on_detached(ctx, fd);
    pthread_mutex_unlock(&ctx->mu);
}


/* ---- the loop ---- */

/* The stop eventfd turned readable: pdrt_destroy began (it stays readable, for unlinks waiting on
 * it). This thread goes on serving handshakes and peers until the calls in progress have left and
 * io_stop asks it to quit, by adding the eventfd back. 1 = quit. */
static int on_stop(pdrt_ctx *ctx) {
    pthread_mutex_lock(&ctx->mu);
    int quit = ctx->io_quit;
    if (!quit) ep_del(ctx, ctx->stop_fd);
    pthread_mutex_unlock(&ctx->mu);
    return quit;
}

static void *io_main(void *arg) {
    pdrt_ctx *ctx = arg;
    pendings ps = { 0 };
    struct epoll_event ev[MAX_READY];
    for (;;) {
        int64_t wake = ps.head != NULL ? ps.head->deadline : -1;
        if (ps.resume_at != 0 && (wake < 0 || ps.resume_at < wake)) wake = ps.resume_at;
        int n = epoll_wait(ctx->ep, ev, MAX_READY, remaining_ms(wake));
        if (n < 0) n = 0; /* EINTR: look again */
        int quit = 0, accept_ready = 0;
        for (int i = 0; i < n; i++) {
            int fd = ev[i].data.fd;
            if (fd == ctx->stop_fd) quit = on_stop(ctx);
            else if (fd == ctx->listen_fd) accept_ready = 1;
            else if (fd == ctx->ka_fd) ka_fire(ctx);
            else if ((size_t)fd < ps.cap && ps.by_fd[fd] != NULL) hs_advance(ctx, &ps, ps.by_fd[fd]);
            else on_socket(ctx, fd);
        }
        if (quit) break; /* what is left is torn down by pdrt_destroy */
        if (accept_ready && ps.resume_at == 0) hs_listen(ctx, &ps);
        hs_resume(ctx, &ps);
        int64_t now = now_ms();
        while (ps.head != NULL && ps.head->deadline <= now) hs_drop(ctx, &ps, ps.head);
    }
    while (ps.head != NULL) hs_drop(ctx, &ps, ps.head);
    free(ps.by_fd);
    return NULL;
}

int io_start(pdrt_ctx *ctx) {
    if (pthread_create(&ctx->io, NULL, io_main, ctx) != 0) return -1;
    ctx->io_started = 1;
    return 0;
}

void io_stop(pdrt_ctx *ctx) {
    if (!ctx->io_started) return;
    pthread_mutex_lock(&ctx->mu);
    ctx->io_quit = 1;
    /* Readable since pdrt_destroy wrote it: added back, it wakes the thread at once (if it is
     * still in the set, the thread has yet to see it and will find io_quit then). */
    ep_add(ctx, ctx->stop_fd);
    pthread_mutex_unlock(&ctx->mu);
    pthread_join(ctx->io, NULL);
    ctx->io_started = 0;
}
