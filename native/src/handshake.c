/*
 * Server-side handshakes (handshake.h): reading a client's HELLO and CONFIRM, admission of a link
 * against the port's caps and the cluster secret, and the hand-over of an accepted socket. The
 * table of handshakes in progress is pendings.c; the listener that accepts the sockets, within the
 * handshake budget and the descriptor limit, is listener.c.
 */
#define _GNU_SOURCE
#include "handshake.h"
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static int send_welcome(int fd, const wire_welcome *w) {
    uint8_t b[WELCOME_SIZE];
    wire_put_welcome(b, w);
    return send(fd, b, sizeof b, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof b ? 0 : -1;
}

/* Whether the client's probe object (pid, fd) holds token: proof that we could map its memory. */
static int probe_readable(pdrt_ctx *ctx, uint64_t client_id, int32_t pid, uint32_t fd, uint64_t token) {
    uint64_t got;
    if (samehost_probe_token(ctx, client_id, pid, fd, &got) == 0 && got == token) return 1;
    /* perhaps a remembered token of an earlier process: read afresh */
    samehost_forget(ctx, pid, fd);
    return samehost_probe_token(ctx, client_id, pid, fd, &got) == 0 && got == token;
}

/* Under ctx->mu: whether a link from client_id may be made now (PDRT_SUCCESS) or why not. A
 * restarted client holds no state for us (HELLO_FORCE_LINK): if our old connection from it turns
 * out dead (its EOF not processed yet), the stale entry is dropped now instead of refusing. */
static int32_t admit(pdrt_ctx *ctx, const pending *p, uint64_t client_id, uint32_t flags) {
    link_t *lk = link_find(ctx, client_id);
    if (lk != NULL && (flags & HELLO_FORCE_LINK) && lk->side == PDRT_SIDE_SERVER && lk->watched &&
        (lk->state == PDRT_LINK_LINKED || lk->state == PDRT_LINK_UNUSABLE) && net_is_dead(lk->ctl_fd)) {
        event_push(ctx, PDRT_EVENT_PEER_LOST, lk->side, lk->remote_id, PDRT_LINK_FAILED);
        link_remove(ctx, lk, 0);
        lk = NULL;
    }
    if (lk != NULL)
        return lk->state == PDRT_LINK_LINKING || lk->state == PDRT_LINK_UNLINKING ? PDRT_PROCESSING_LINK
                                                                                  : PDRT_ALREADY_LINK;
    /* Links served are capped in total and per peer address (each costs a socket and memory). */
    uint32_t total = 0, from_peer = 0;
    char ip[PDRT_IP_MAX];
    uint16_t port;
    net_addr_text(&p->addr, ip, sizeof ip, &port);
    for (link_t *l = ctx->links; l != NULL; l = l->next) {
        if (l->side != PDRT_SIDE_SERVER) continue;
        total++;
        if (strcmp(l->remote_ip, ip) == 0) from_peer++;
    }
    if (total >= ctx->cfg.max_links || from_peer >= ctx->cfg.max_links_per_peer) return PDRT_LINK_FAILED;
    return PDRT_SUCCESS;
}

/* Under ctx->mu: the LINKING placeholder of an admitted client, or NULL when out of memory. */
static link_t *placeholder(pdrt_ctx *ctx, pending *p, uint64_t client_id, uint64_t session) {
    link_t *lk = link_new(client_id, PDRT_SIDE_SERVER);
    if (lk == NULL) return NULL;
    lk->session = session;
    lk->peer_pid = p->peer_pid;
    net_addr_text(&p->addr, lk->remote_ip, sizeof lk->remote_ip, &lk->remote_port);
    link_insert(ctx, lk);
    p->lk = lk;
    return lk;
}

/* Returns 0 to keep the connection pending (the WELCOME sent, or kept for an early CONFIRM), -1 to
 * drop it. */
static int hello_ctl(pdrt_ctx *ctx, pending *p, const wire_hello *h) {
    int auth = ctx->secret != NULL;
    wire_welcome w = { .status = PDRT_SUCCESS, .server_id = ctx->id };
    /* A peer without the secret, or a secret-holding peer of an unauthenticated server: refused
     * before anything is looked up for it. */
    if (((h->flags & HELLO_AUTH) != 0) != auth || h->server_id != ctx->id || h->client_id == ctx->id) {
        w.status = PDRT_LINK_FAILED;
        send_welcome(p->fd, &w);
        return -1;
    }
    /* Whether the client's probe object can be read here. With a secret, only a proven client
     * gets that looked at (confirm_auth): the probe names a process and descriptor of the
     * client's choosing, which an anonymous peer could otherwise use as an oracle. */
    int same_boot = (h->flags & HELLO_FASTPATH) && ctx->boot_id[0] != '\0' && strcmp(h->boot_id, ctx->boot_id) == 0;
    int peer_readable = same_boot && !auth && probe_readable(ctx, h->client_id, (int32_t)h->pid, h->probe_fd, h->probe_token);
    p->probe_pid = (int32_t)h->pid;
    p->probe_fd = h->probe_fd;
    p->probe_token = h->probe_token;
    p->hello_flags = h->flags;
    p->peer_pid = (int32_t)h->pid;
    pthread_mutex_lock(&ctx->mu);
    /* With a secret, the WELCOME invites the client to read our probe whenever we share a boot;
     * whether we can read its probe is settled once it has proved the secret. */
    p->peer_readable = (auth ? same_boot : peer_readable) && ctx->fastpath;
    uint64_t session = ctx_session(ctx);
    if (auth) {
        /* Nothing is held for the peer until its proof arrives: the link is made in on_confirm. */
        p->auth = 1;
        p->in.client_id = h->client_id;
        p->in.server_id = ctx->id;
        p->in.session = session;
        memcpy(p->in.client_nonce, h->nonce, AUTH_NONCE);
        if (auth_nonce(p->in.server_nonce) != 0) w.status = PDRT_LINK_FAILED;
        else auth_mac(ctx->secret, ctx->secret_len, AUTH_LINK_SERVER, &p->in, w.mac);
        memcpy(w.nonce, p->in.server_nonce, AUTH_NONCE);
    } else {
        w.status = admit(ctx, p, h->client_id, h->flags);
        if (w.status == PDRT_SUCCESS && placeholder(ctx, p, h->client_id, session) == NULL)
            w.status = PDRT_OUT_OF_MEMORY;
    }
    if (w.status == PDRT_SUCCESS) {
        w.session = session;
        w.flags = (p->peer_readable ? WELCOME_PEER_READABLE : 0) | (auth ? WELCOME_AUTH | WELCOME_CONFIRM_AGAIN : 0);
        w.pid = (uint32_t)ctx->pid;
        w.probe_fd = (uint32_t)ctx->probe_fd;
    }
    pthread_mutex_unlock(&ctx->mu);
    p->w = w;
    p->early = w.status == PDRT_SUCCESS && !auth && (h->flags & HELLO_EARLY_CONFIRM) != 0;
    if (!p->early && (send_welcome(p->fd, &w) != 0 || w.status != PDRT_SUCCESS)) return -1;
    p->stage = 1;
    return 0;
}

static void send_ack_status(int fd, int32_t status) {
    uint8_t b[ACK_SIZE];
    wire_ack a = { .status = status };
    wire_put_ack(b, &a);
    (void)!send(fd, b, sizeof b, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* An authenticated handshake's CONFIRM: the client proved the secret, so the link may now be made
 * (the checks a plain handshake does at the HELLO). 0 = p->lk made; -1 = drop (after telling a
 * proven client why). */
static int confirm_auth(pdrt_ctx *ctx, pending *p, const wire_confirm *c) {
    if (!auth_verify(ctx->secret, ctx->secret_len, AUTH_LINK_CLIENT, &p->in, c->mac)) return -1;
    if (p->peer_readable)
        p->peer_readable = probe_readable(ctx, p->in.client_id, p->probe_pid, p->probe_fd, p->probe_token);
    pthread_mutex_lock(&ctx->mu);
    int32_t status = admit(ctx, p, p->in.client_id, p->hello_flags);
    link_t *lk = NULL;
    if (status == PDRT_SUCCESS) {
        lk = placeholder(ctx, p, p->in.client_id, p->in.session);
        if (lk == NULL) status = PDRT_OUT_OF_MEMORY;
    }
    if (lk != NULL) {
        auth_mac(ctx->secret, ctx->secret_len, AUTH_LINK_KEY, &p->in, lk->key);
        lk->keyed = 1;
    }
    pthread_mutex_unlock(&ctx->mu);
    if (status != PDRT_SUCCESS) send_ack_status(p->fd, status);
    return status == PDRT_SUCCESS ? 0 : -1;
}

/* Returns 1 when the socket became the link's control socket, 0 to wait for another CONFIRM, -1 to
 * drop it. */
static int on_confirm(pdrt_ctx *ctx, pending *p) {
    wire_confirm c;
    if (wire_get_confirm(p->buf, &c) != 0) return -1;
    if (p->auth && confirm_auth(ctx, p, &c) != 0) return -1;
    int proved = (c.flags & CONFIRM_READ) && c.token == ctx->probe_token;
    p->have = 0;
    if (p->early && p->peer_readable && !proved) { /* a fresh CONFIRM could prove more: ask for it */
        p->early = 0;
        p->w.flags |= WELCOME_CONFIRM_AGAIN;
        return send_welcome(p->fd, &p->w) == 0 ? 0 : -1;
    }
    pthread_mutex_lock(&ctx->mu);
    link_t *lk = p->lk;
    lk->same_host = p->peer_readable && proved;
    uint8_t b[WELCOME_SIZE + ACK_SIZE];
    size_t len = 0;
    if (p->early) { /* the WELCOME waited for the early CONFIRM: both answers leave together */
        wire_put_welcome(b, &p->w);
        len = WELCOME_SIZE;
    }
    wire_ack a = { .status = PDRT_SUCCESS, .same_host = (uint32_t)lk->same_host };
    wire_put_ack(b + len, &a);
    len += ACK_SIZE;
    /* Watched before the ACK leaves: the client may send UNLINK the moment it reads it. */
    if (link_watch(ctx, lk, p->fd, p->registered) != 0) {
        pthread_mutex_unlock(&ctx->mu);
        return -1;
    }
    p->registered = 1;
    if (send(p->fd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len) {
        link_unwatch(ctx, lk);
        lk->ctl_fd = -1;
        p->registered = 0;
        pthread_mutex_unlock(&ctx->mu);
        return -1;
    }
    lk->state = PDRT_LINK_LINKED;
    p->lk = NULL;
    event_push(ctx, PDRT_EVENT_PEER_LINKED, PDRT_SIDE_SERVER, lk->remote_id, PDRT_SUCCESS);
    pthread_mutex_unlock(&ctx->mu);
    return 1;
}

/* Returns 1 when the socket was handed over (to a serving thread or the link's pool), -1 to drop it. */
static int hello_data(pdrt_ctx *ctx, pending *p, const wire_hello *h) {
    /* Whoever takes the socket reads it: out of the epoll set first. */
    if (p->registered) ep_del(ctx, p->fd);
    p->registered = 0;
    wire_welcome w = { .status = PDRT_NOT_YET_LINK, .server_id = ctx->id };
    auth_input in;
    auth_data_input(&in, h->nonce, h->client_id, h->server_id, h->session, h->kind);
    pthread_mutex_lock(&ctx->mu);
    link_t *lk = link_find(ctx, h->client_id);
    if (lk != NULL && lk->side == PDRT_SIDE_SERVER && lk->session == h->session && h->server_id == ctx->id &&
        (lk->state == PDRT_LINK_LINKED || lk->state == PDRT_LINK_UNUSABLE)) {
        /* On an authenticated context, a connection that cannot prove it belongs to the link (a
         * guessed or overheard session number) never reaches a cache. */
        int proven = ctx->secret == NULL ? (h->flags & HELLO_AUTH) == 0
                                         : lk->keyed && (h->flags & HELLO_AUTH) &&
                                               auth_verify(lk->key, sizeof lk->key, AUTH_DATA_HELLO, &in, h->mac);
        w.status = proven ? PDRT_SUCCESS : PDRT_LINK_FAILED;
        w.session = lk->session;
        if (proven && ctx->secret != NULL) {
            w.flags = WELCOME_AUTH;
            auth_mac(lk->key, sizeof lk->key, AUTH_DATA_WELCOME, &in, w.mac);
        }
    }
    if (w.status == PDRT_SUCCESS) {
        if (h->kind == CONN_DATA) {
            serve *s = serve_count_peer(ctx, &p->addr) < ctx->cfg.max_conns_per_peer ? calloc(1, sizeof *s) : NULL;
            if (s != NULL) {
                s->has_peer = 1;
                s->peer = p->addr;
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
                lk->pool_since[lk->npool] = now_ms();
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

/* Reads what the handshake needs next. Returns 0 to keep waiting, 1 when handed over, -1 to drop. */
static int on_pending(pdrt_ctx *ctx, pending *p) {
    for (;;) {
        /* The HELLO read may take an early CONFIRM with it: nothing else is ever sent before the
         * WELCOME, and a CONFIRM sent with the HELLO usually arrives with it. */
        size_t need = p->stage == 0 ? HELLO_SIZE : CONFIRM_SIZE;
        size_t cap = p->stage == 0 ? HELLO_SIZE + CONFIRM_SIZE : CONFIRM_SIZE;
        ssize_t r = recv(p->fd, p->buf + p->have, cap - p->have, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (r <= 0) return -1;
        p->have += (size_t)r;
        if (p->have < need) continue;
        if (p->stage == 1) return on_confirm(ctx, p);
        wire_hello h;
        if (wire_get_hello(p->buf, &h) != 0 || h.version != WIRE_VERSION) return -1;
        size_t extra = p->have - HELLO_SIZE;
        if (h.kind == CONN_CTL) {
            if (hello_ctl(ctx, p, &h) != 0) return -1;
            memmove(p->buf, p->buf + HELLO_SIZE, extra);
            p->have = extra;
            return extra == CONFIRM_SIZE ? on_confirm(ctx, p) : 0; /* otherwise the CONFIRM is still on its way */
        }
        if (extra != 0) return -1; /* a data connection sends nothing before its WELCOME */
        if (h.kind == CONN_DATA || h.kind == CONN_REVERSE) return hello_data(ctx, p, &h);
        return -1;
    }
}

void hs_advance(pdrt_ctx *ctx, pendings *ps, pending *p) {
    int st = on_pending(ctx, p);
    if (st == 0 && !p->registered) {
        if (ep_add(ctx, p->fd) == 0) p->registered = 1;
        else st = -1;
    }
    if (st < 0) hs_drop(ctx, ps, p);
    else if (st > 0) hs_forget(ps, p);
}
