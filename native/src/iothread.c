/*
 * The background I/O thread of a context: accepts connections, runs server-side handshakes,
 * reads control messages, and notices dead peers on every established control connection.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "net.h"
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PENDING 1024

enum { SLOT_WAKE, SLOT_LISTEN, SLOT_PENDING, SLOT_LINK, SLOT_DETACHED };

typedef struct {
    struct pollfd *pfd;
    uint8_t *kind;
    size_t n, cap;
} pollset;

static int pollset_add(pollset *ps, int fd, uint8_t kind) {
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 64;
        struct pollfd *p = realloc(ps->pfd, cap * sizeof *p);
        if (p == NULL) return -1;
        ps->pfd = p;
        uint8_t *k = realloc(ps->kind, cap);
        if (k == NULL) return -1;
        ps->kind = k;
        ps->cap = cap;
    }
    ps->pfd[ps->n] = (struct pollfd){ .fd = fd, .events = POLLIN };
    ps->kind[ps->n++] = kind;
    return 0;
}

/* ---- established control connections ---- */

/* Under ctx->mu. The peer vanished: an unlink in progress learns it was not acknowledged; any
 * other link is dropped with a PEER_LOST event. */
static void ctl_lost(pdrt_ctx *ctx, link_t *lk) {
    if (lk->state == PDRT_LINK_UNLINKING) {
        lk->peer_gone = 1;
        lk->watched = 0; /* EOF stays readable: stop polling it until the unlink closes it */
        pthread_cond_broadcast(&ctx->cv);
        return;
    }
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
        if (lk->state == PDRT_LINK_UNLINKING) { /* both ends unlinking at once: each one is told */
            lk->unlink_acked = 1;
            pthread_cond_broadcast(&ctx->cv);
            return 0;
        }
        event_push(ctx, PDRT_EVENT_PEER_UNLINKED, lk->side, lk->remote_id, PDRT_SUCCESS);
        link_remove(ctx, lk, 0);
        return -1;
    case CTL_UNLINK_ACK:
        if (lk->state == PDRT_LINK_UNLINKING) {
            lk->unlink_acked = 1;
            pthread_cond_broadcast(&ctx->cv);
        }
        return 0;
    case CTL_OPEN_REVERSE:
        if (lk->side == PDRT_SIDE_CLIENT) spawn_reverse(ctx, lk);
        return 0;
    default:
        ctl_lost(ctx, lk);
        return -1;
    }
}

static void on_ctl(pdrt_ctx *ctx, int fd) {
    pthread_mutex_lock(&ctx->mu);
    link_t *lk = link_find_fd(ctx, fd);
    while (lk != NULL && lk->watched) {
        ssize_t r = recv(fd, lk->rbuf + lk->rlen, CTL_SIZE - lk->rlen, MSG_DONTWAIT);
        if (r > 0) {
            lk->rlen += (size_t)r;
            if (lk->rlen < CTL_SIZE) continue;
            lk->rlen = 0;
            wire_ctl m;
            if (wire_get_ctl(lk->rbuf, &m) != 0) m.type = 0;
            if (ctl_message(ctx, lk, &m) != 0) break;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        ctl_lost(ctx, lk);
        break;
    }
    pthread_mutex_unlock(&ctx->mu);
}

/* A socket the client force-unlinked: it stays open, silent, until the server lets go of its end.
 * A normal unlink from the server is still acknowledged so the server gets SUCCESS. */
static void on_detached(pdrt_ctx *ctx, int fd) {
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
    if (!done) return;
    pthread_mutex_lock(&ctx->mu);
    for (size_t i = 0; i < ctx->detached.n; i++) {
        if (ctx->detached.v[i] == fd) {
            fdvec_remove_at(&ctx->detached, i);
            close(fd);
            break;
        }
    }
    pthread_mutex_unlock(&ctx->mu);
}

/* ---- server-side handshakes ---- */

static void pending_drop(pdrt_ctx *ctx, pending *p) {
    if (p->lk != NULL) {
        pthread_mutex_lock(&ctx->mu);
        link_remove(ctx, p->lk, 0);
        pthread_mutex_unlock(&ctx->mu);
    }
    close(p->fd);
    free(p);
}

static int send_welcome(int fd, const wire_welcome *w) {
    uint8_t b[WELCOME_SIZE];
    wire_put_welcome(b, w);
    return send(fd, b, sizeof b, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof b ? 0 : -1;
}

/* Returns 0 to keep the connection pending, 1 when handed over, -1 to drop it. */
static int hello_ctl(pdrt_ctx *ctx, pending *p, const wire_hello *h) {
    int peer_readable = 0;
    if ((h->flags & HELLO_FASTPATH) && ctx->boot_id[0] != '\0' && strcmp(h->boot_id, ctx->boot_id) == 0) {
        uint64_t token;
        peer_readable = samehost_read_probe((int32_t)h->pid, h->probe_fd, &token) == 0 && token == h->probe_token;
    }
    wire_welcome w = { .status = PDRT_SUCCESS, .server_id = ctx->id };
    pthread_mutex_lock(&ctx->mu);
    link_t *lk = NULL;
    if (h->server_id != ctx->id || h->client_id == ctx->id) {
        w.status = PDRT_LINK_FAILED;
    } else {
        lk = link_find(ctx, h->client_id);
        /* A restarted client holds no state for us: if our old connection from it turns out dead
         * (its EOF not processed yet), drop the stale entry now instead of refusing. */
        if (lk != NULL && (h->flags & HELLO_FORCE_LINK) && lk->side == PDRT_SIDE_SERVER && lk->watched &&
            (lk->state == PDRT_LINK_LINKED || lk->state == PDRT_LINK_UNUSABLE) && net_is_dead(lk->ctl_fd)) {
            event_push(ctx, PDRT_EVENT_PEER_LOST, lk->side, lk->remote_id, PDRT_LINK_FAILED);
            link_remove(ctx, lk, 0);
            lk = NULL;
        }
        if (lk != NULL)
            w.status = lk->state == PDRT_LINK_LINKING || lk->state == PDRT_LINK_UNLINKING ? PDRT_PROCESSING_LINK
                                                                                           : PDRT_ALREADY_LINK;
    }
    if (w.status == PDRT_SUCCESS) {
        lk = link_new(h->client_id, PDRT_SIDE_SERVER);
        if (lk == NULL) {
            w.status = PDRT_OUT_OF_MEMORY;
        } else {
            lk->session = random_u64() | 1;
            lk->peer_pid = (int32_t)h->pid;
            net_peer_text(p->fd, lk->remote_ip, sizeof lk->remote_ip, &lk->remote_port);
            link_insert(ctx, lk);
            p->lk = lk;
            p->peer_readable = peer_readable && ctx->fastpath;
            w.session = lk->session;
            w.flags = p->peer_readable ? WELCOME_PEER_READABLE : 0;
            w.pid = (uint32_t)ctx->pid;
            w.probe_fd = (uint32_t)ctx->probe_fd;
        }
    }
    pthread_mutex_unlock(&ctx->mu);
    if (send_welcome(p->fd, &w) != 0 || w.status != PDRT_SUCCESS) return -1;
    p->stage = 1;
    p->have = 0;
    return 0;
}

static int on_confirm(pdrt_ctx *ctx, pending *p) {
    wire_confirm c;
    if (wire_get_confirm(p->buf, &c) != 0) return -1;
    pthread_mutex_lock(&ctx->mu);
    link_t *lk = p->lk;
    lk->same_host = p->peer_readable && (c.flags & CONFIRM_READ) && c.token == ctx->probe_token;
    uint8_t b[ACK_SIZE];
    wire_ack a = { .status = PDRT_SUCCESS, .same_host = (uint32_t)lk->same_host };
    wire_put_ack(b, &a);
    if (send(p->fd, b, sizeof b, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof b) {
        pthread_mutex_unlock(&ctx->mu);
        return -1;
    }
    net_tune(p->fd, 1);
    lk->state = PDRT_LINK_LINKED;
    lk->ctl_fd = p->fd;
    lk->watched = 1;
    p->lk = NULL;
    event_push(ctx, PDRT_EVENT_PEER_LINKED, PDRT_SIDE_SERVER, lk->remote_id, PDRT_SUCCESS);
    pthread_mutex_unlock(&ctx->mu);
    return 1;
}

static int hello_data(pdrt_ctx *ctx, pending *p, const wire_hello *h) {
    wire_welcome w = { .status = PDRT_NOT_YET_LINK, .server_id = ctx->id };
    pthread_mutex_lock(&ctx->mu);
    link_t *lk = link_find(ctx, h->client_id);
    if (lk != NULL && lk->side == PDRT_SIDE_SERVER && lk->session == h->session && h->server_id == ctx->id &&
        (lk->state == PDRT_LINK_LINKED || lk->state == PDRT_LINK_UNUSABLE)) {
        w.status = PDRT_SUCCESS;
        w.session = lk->session;
        if (h->kind == CONN_DATA) {
            serve *s = calloc(1, sizeof *s);
            if (s != NULL) {
                s->fd = p->fd;
                s->remote_id = lk->remote_id;
                s->session = lk->session;
                s->same_host = lk->same_host;
            }
            /* The serving thread only reads until the client, having seen the WELCOME, sends. */
            if (s == NULL || serve_spawn(ctx, s) != 0) w.status = PDRT_OUT_OF_MEMORY;
        } else if (lk->npool < POOL_CAP) {
            /* WELCOME first: a waiting transfer may write its request the moment the fd is pooled. */
            if (send_welcome(p->fd, &w) == 0) {
                lk->pool[lk->npool++] = p->fd;
                pthread_cond_broadcast(&ctx->cv);
                pthread_mutex_unlock(&ctx->mu);
                return 1;
            }
            w.status = PDRT_LINK_FAILED;
        } else {
            w.status = PDRT_OUT_OF_MEMORY;
        }
    }
    int handed = w.status == PDRT_SUCCESS && h->kind == CONN_DATA;
    if (send_welcome(p->fd, &w) != 0 && handed) shutdown(p->fd, SHUT_RDWR);
    pthread_mutex_unlock(&ctx->mu);
    return handed ? 1 : -1;
}

static int on_pending(pdrt_ctx *ctx, pending *p) {
    size_t need = p->stage == 0 ? HELLO_SIZE : CONFIRM_SIZE;
    for (;;) {
        ssize_t r = recv(p->fd, p->buf + p->have, need - p->have, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (r <= 0) return -1;
        p->have += (size_t)r;
        if (p->have < need) continue;
        if (p->stage == 1) return on_confirm(ctx, p);
        wire_hello h;
        if (wire_get_hello(p->buf, &h) != 0 || h.version != WIRE_VERSION) return -1;
        if (h.kind == CONN_CTL) return hello_ctl(ctx, p, &h);
        if (h.kind == CONN_DATA || h.kind == CONN_REVERSE) return hello_data(ctx, p, &h);
        return -1;
    }
}

static void on_listen(pdrt_ctx *ctx) {
    size_t count = 0;
    for (pending *p = ctx->pend; p != NULL; p = p->next) count++;
    for (;;) {
        int fd = accept4(ctx->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;
        }
        pending *p = count < MAX_PENDING ? calloc(1, sizeof *p) : NULL;
        if (p == NULL) {
            close(fd);
            continue;
        }
        net_tune(fd, 0);
        p->fd = fd;
        p->deadline = now_ms() + SERVER_HANDSHAKE_MS;
        p->next = ctx->pend;
        ctx->pend = p;
        count++;
    }
}

/* ---- the loop ---- */

static void *io_main(void *arg) {
    pdrt_ctx *ctx = arg;
    pollset ps = { 0 };
    for (;;) {
        ps.n = 0;
        int64_t next = -1;
        pthread_mutex_lock(&ctx->mu);
        if (ctx->io_quit) {
            pthread_mutex_unlock(&ctx->mu);
            break;
        }
        for (size_t i = 0; i < ctx->closing_fds.n; i++) close(ctx->closing_fds.v[i]);
        ctx->closing_fds.n = 0;
        int ok = pollset_add(&ps, ctx->wake_rd, SLOT_WAKE) == 0 && pollset_add(&ps, ctx->listen_fd, SLOT_LISTEN) == 0;
        for (pending *p = ctx->pend; ok && p != NULL; p = p->next) {
            ok = pollset_add(&ps, p->fd, SLOT_PENDING) == 0;
            if (next < 0 || p->deadline < next) next = p->deadline;
        }
        for (link_t *lk = ctx->links; ok && lk != NULL; lk = lk->next)
            if (lk->watched) ok = pollset_add(&ps, lk->ctl_fd, SLOT_LINK) == 0;
        for (size_t i = 0; ok && i < ctx->detached.n; i++)
            ok = pollset_add(&ps, ctx->detached.v[i], SLOT_DETACHED) == 0;
        pthread_mutex_unlock(&ctx->mu);

        int r = poll(ps.pfd, ps.n, remaining_ms(next));
        if (r < 0) r = 0; /* EINTR, or a transient ENOMEM: look again next round */
        for (size_t i = 0; r > 0 && i < ps.n; i++) {
            if (ps.pfd[i].revents == 0 || ps.kind[i] == SLOT_LISTEN || ps.kind[i] == SLOT_PENDING) continue;
            int fd = ps.pfd[i].fd;
            if (ps.kind[i] == SLOT_WAKE) {
                char b[64];
                while (read(fd, b, sizeof b) > 0) {}
            } else if (ps.kind[i] == SLOT_LINK) {
                on_ctl(ctx, fd);
            } else {
                on_detached(ctx, fd);
            }
        }
        /* Pending handshakes: readiness is looked up by fd because the list is this thread's own. */
        int64_t now = now_ms();
        for (pending **pp = &ctx->pend; *pp != NULL;) {
            pending *p = *pp;
            short rev = 0;
            for (size_t i = 0; i < ps.n; i++)
                if (ps.kind[i] == SLOT_PENDING && ps.pfd[i].fd == p->fd) rev = ps.pfd[i].revents;
            int st = rev ? on_pending(ctx, p) : (p->deadline <= now ? -1 : 0);
            if (st == 0) {
                pp = &p->next;
                continue;
            }
            *pp = p->next;
            if (st < 0) {
                pending_drop(ctx, p);
            } else {
                free(p);
            }
        }
        if (ctx->listen_fd >= 0 && r > 0 && ps.n > 1 && ps.pfd[1].revents) on_listen(ctx);
    }
    while (ctx->pend != NULL) {
        pending *p = ctx->pend;
        ctx->pend = p->next;
        pending_drop(ctx, p);
    }
    free(ps.pfd);
    free(ps.kind);
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
    ctx_wake_io(ctx);
    pthread_mutex_unlock(&ctx->mu);
    pthread_join(ctx->io, NULL);
    ctx->io_started = 0;
}
