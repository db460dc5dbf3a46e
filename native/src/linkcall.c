/*
 * pdrt_link: up to 16 client-side handshakes driven together by one poll loop with one deadline.
 * Each cluster first takes a LINKING placeholder in the link table, so a concurrent link, unlink
 * or incoming handshake for the same cluster id gets PROCESSING_LINK instead of racing.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "auth.h"
#include "net.h"
#include "wire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

enum { ST_SEND_HELLO, ST_RECV_WELCOME, ST_SEND_CONFIRM, ST_RECV_ACK, ST_DONE };

typedef struct {
    int active;                 /* has a placeholder and a handshake in progress or done */
    int fd;
    int stage;
    uint8_t out[HELLO_SIZE + CONFIRM_SIZE];
    size_t olen, ooff;
    uint8_t in[WELCOME_SIZE + ACK_SIZE];
    size_t ineed, icap, ihave;  /* bytes needed to go on, most bytes to read, bytes read */
    link_t *lk;
    int32_t code;
    wire_welcome w;
    int same_host;
    int told_read;              /* the last CONFIRM claimed the server's probe was read */
    int32_t told_pid;           /* and named this probe */
    uint32_t told_fd;
    auth_input proof;           /* authenticated links: what the proofs bind */
    uint8_t key[AUTH_MAC];      /* and the link key derived from them */
} attempt;

int32_t batch_check(const pdrt_cluster *clusters, uint32_t n, int32_t timeout_ms, const int32_t *rets) {
    if (clusters == NULL || rets == NULL || n == 0) return PDRT_PARAM_INVALID;
    if (n > PDRT_MAX_CLUSTERS_PER_CALL) return PDRT_CLUSTER_NUM_EXCEED_LIMIT;
    if (timeout_ms <= 0) return PDRT_PARAM_INVALID;
    return PDRT_SUCCESS;
}

int32_t cluster_check(const pdrt_ctx *ctx, const pdrt_cluster *c, int for_link, struct sockaddr_storage *ss,
                      socklen_t *len) {
    struct sockaddr_storage tmp;
    socklen_t tlen;
    int rlen = net_field_len(c->remote_ip, PDRT_IP_MAX), llen = net_field_len(c->local_ip, PDRT_IP_MAX);
    if (c->reserved != 0 || rlen < 0 || llen < 0) return PDRT_PARAM_INVALID;
    if (llen > 0 && net_parse_ip(c->local_ip, 0, &tmp, &tlen) != 0) return PDRT_PARAM_INVALID;
    if (!for_link) /* unlink is keyed by cluster id; an address, when given, must still be valid */
        return rlen == 0 || net_parse_ip(c->remote_ip, 1, &tmp, &tlen) == 0 ? PDRT_SUCCESS : PDRT_PARAM_INVALID;
    if (c->remote_port == 0 || c->remote_cluster_id == ctx->id) return PDRT_PARAM_INVALID;
    if (net_parse_ip(c->remote_ip, c->remote_port, ss, len) != 0) return PDRT_PARAM_INVALID;
    if (llen > 0 && tmp.ss_family != ss->ss_family) return PDRT_PARAM_INVALID;
    return PDRT_SUCCESS;
}

/* Ends a handshake with code; returns 0 so callers can `return fail(...)`. */
static int fail(attempt *a, int32_t code) {
    a->code = code;
    a->stage = ST_DONE;
    return 0;
}

/* The CONFIRM for the server's probe at pid and fd (or for no probe), into a->out at off. */
static void put_confirm(attempt *a, size_t off, int known, int32_t pid, uint32_t fd, uint64_t token,
                        const uint8_t *mac) {
    wire_confirm c = { 0 };
    if (mac != NULL) memcpy(c.mac, mac, AUTH_MAC);
    if (known) {
        c.flags = CONFIRM_READ;
        c.token = token;
    }
    a->told_read = known;
    a->told_pid = pid;
    a->told_fd = fd;
    wire_put_confirm(a->out + off, &c);
}

static int on_ack(pdrt_ctx *ctx, attempt *a) {
    wire_ack ack;
    if (wire_get_ack(a->in, &ack) != 0) return fail(a, PDRT_LINK_FAILED);
    /* An authenticated server says whether the link may be made only once we proved the secret. */
    if (ack.status == PDRT_ALREADY_LINK || ack.status == PDRT_PROCESSING_LINK) return fail(a, ack.status);
    if (ack.status != PDRT_SUCCESS) return fail(a, PDRT_LINK_FAILED);
    if (ctx->secret != NULL) auth_mac(ctx->secret, ctx->secret_len, AUTH_LINK_KEY, &a->proof, a->key);
    a->same_host = ack.same_host != 0;
    /* The server could read our probe but not match the token we sent: what we remembered of its
     * probe belongs to an earlier process. Read it afresh next time. */
    if (a->told_read && !a->same_host && (a->w.flags & WELCOME_PEER_READABLE))
        samehost_forget(ctx, a->told_pid, a->told_fd);
    a->code = PDRT_SUCCESS;
    a->stage = ST_DONE;
    return 0;
}

static int on_welcome(pdrt_ctx *ctx, attempt *a, int fastpath) {
    if (wire_get_welcome(a->in, &a->w) != 0) return fail(a, PDRT_LINK_FAILED);
    int32_t s = a->w.status;
    if (s == PDRT_ALREADY_LINK || s == PDRT_PROCESSING_LINK) return fail(a, s);
    if (s != PDRT_SUCCESS || a->w.server_id != a->lk->remote_id) return fail(a, PDRT_LINK_FAILED);
    /* Both ends hold a secret or neither does; with one, the server proves it before we do. */
    int auth = ctx->secret != NULL;
    if (((a->w.flags & WELCOME_AUTH) != 0) != auth) return fail(a, PDRT_LINK_FAILED);
    uint8_t mac[AUTH_MAC];
    if (auth) {
        memcpy(a->proof.server_nonce, a->w.nonce, AUTH_NONCE);
        a->proof.session = a->w.session;
        if (!auth_verify(ctx->secret, ctx->secret_len, AUTH_LINK_SERVER, &a->proof, a->w.mac))
            return fail(a, PDRT_LINK_FAILED);
        if (!(a->w.flags & WELCOME_CONFIRM_AGAIN)) return fail(a, PDRT_LINK_FAILED);
        auth_mac(ctx->secret, ctx->secret_len, AUTH_LINK_CLIENT, &a->proof, mac);
    }
    size_t extra = a->ihave - WELCOME_SIZE;
    if (!(a->w.flags & WELCOME_CONFIRM_AGAIN)) { /* the early CONFIRM stood: the ACK follows, usually with it */
        memmove(a->in, a->in + WELCOME_SIZE, extra);
        a->ihave = extra;
        a->ineed = a->icap = ACK_SIZE;
        a->stage = ST_RECV_ACK;
        return extra == ACK_SIZE ? on_ack(ctx, a) : 0;
    }
    if (extra != 0) return fail(a, PDRT_LINK_FAILED); /* nothing may follow a WELCOME that asks again */
    if (a->told_read) samehost_forget(ctx, a->told_pid, a->told_fd); /* what we remembered is stale */
    int32_t pid = (int32_t)a->w.pid;
    uint64_t token = 0;
    int known = (a->w.flags & WELCOME_PEER_READABLE) && fastpath &&
                samehost_probe_token(ctx, a->lk->remote_id, pid, a->w.probe_fd, &token) == 0;
    put_confirm(a, 0, known, pid, a->w.probe_fd, token, auth ? mac : NULL);
    a->olen = CONFIRM_SIZE;
    a->ooff = 0;
    a->stage = ST_SEND_CONFIRM;
    return 0;
}

/* Advances one handshake as far as it goes without blocking. After each message sent it returns
 * instead of trying to read the answer, which needs the server's turn: a read now would only
 * cost a syscall that finds nothing. */
static void step(pdrt_ctx *ctx, attempt *a, int fastpath) {
    while (a->stage != ST_DONE) {
        if (a->stage == ST_SEND_HELLO || a->stage == ST_SEND_CONFIRM) {
            /* A HELLO may go before the connect is known to be complete: while it is not, send
             * says EAGAIN; a refused connect fails here. */
            ssize_t n = send(a->fd, a->out + a->ooff, a->olen - a->ooff, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
            if (n < 0) {
                fail(a, PDRT_LINK_FAILED);
                return;
            }
            a->ooff += (size_t)n;
            if (a->ooff < a->olen) continue;
            a->ihave = 0;
            /* After the HELLO: a WELCOME, and the ACK with it when the early CONFIRM stands. */
            a->ineed = a->stage == ST_SEND_HELLO ? WELCOME_SIZE : ACK_SIZE;
            a->icap = a->stage == ST_SEND_HELLO ? WELCOME_SIZE + ACK_SIZE : ACK_SIZE;
            a->stage++;
            return;
        }
        ssize_t n = recv(a->fd, a->in + a->ihave, a->icap - a->ihave, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (n <= 0) {
            fail(a, PDRT_LINK_FAILED);
            return;
        }
        a->ihave += (size_t)n;
        if (a->ihave < a->ineed) continue;
        if (a->stage == ST_RECV_WELCOME)
            on_welcome(ctx, a, fastpath);
        else
            on_ack(ctx, a);
    }
}

/* Under ctx->mu: takes a placeholder for cluster i, or says why not. */
static int32_t reserve(pdrt_ctx *ctx, const pdrt_cluster *c, const struct sockaddr_storage *ss, socklen_t len,
                       attempt *a) {
    link_t *lk = link_find(ctx, c->remote_cluster_id);
    if (lk != NULL)
        return lk->state == PDRT_LINK_LINKING || lk->state == PDRT_LINK_UNLINKING ? PDRT_PROCESSING_LINK
                                                                                  : PDRT_ALREADY_LINK;
    lk = link_new(c->remote_cluster_id, PDRT_SIDE_CLIENT);
    if (lk == NULL) return PDRT_OUT_OF_MEMORY;
    memcpy(lk->remote_ip, c->remote_ip, PDRT_IP_MAX);
    memcpy(lk->local_ip, c->local_ip, PDRT_IP_MAX);
    lk->remote_port = c->remote_port;
    lk->addr = *ss;
    lk->addrlen = len;
    link_insert(ctx, lk);
    a->lk = lk;
    a->active = 1;
    return PDRT_SUCCESS;
}

/* Connects and sends the HELLO with an early CONFIRM right behind it: from the server's probe as
 * remembered from an earlier link, or none (which stands whenever the server cannot read ours,
 * as between hosts). See wire.h. */
static void start(pdrt_ctx *ctx, const pdrt_cluster *c, attempt *a, int fastpath) {
    a->fd = net_connect_start(&a->lk->addr, a->lk->addrlen, c->local_ip, c->local_port);
    if (a->fd < 0) {
        fail(a, PDRT_LINK_FAILED);
        return;
    }
    net_tune(a->fd, 0); /* keepalive comes later, for links that last (keepalive.c) */
    int auth = ctx->secret != NULL;
    wire_hello h = { .version = WIRE_VERSION, .kind = CONN_CTL, .client_id = ctx->id,
                     .server_id = c->remote_cluster_id, .role = ctx->role,
                     .flags = HELLO_FORCE_LINK | (auth ? HELLO_AUTH : HELLO_EARLY_CONFIRM) |
                              (fastpath ? HELLO_FASTPATH : 0),
                     .pid = (uint32_t)ctx->pid, .probe_fd = (uint32_t)ctx->probe_fd,
                     .probe_token = ctx->probe_token };
    memcpy(h.boot_id, ctx->boot_id, sizeof h.boot_id);
    if (auth) {
        /* No early CONFIRM: ours must carry a proof over the server's nonce, not known yet. */
        a->proof.client_id = ctx->id;
        a->proof.server_id = c->remote_cluster_id;
        if (auth_nonce(a->proof.client_nonce) != 0) {
            fail(a, PDRT_LINK_FAILED);
            return;
        }
        memcpy(h.nonce, a->proof.client_nonce, AUTH_NONCE);
        wire_put_hello(a->out, &h);
        a->olen = HELLO_SIZE;
        a->stage = ST_SEND_HELLO;
        step(ctx, a, fastpath);
        return;
    }
    wire_put_hello(a->out, &h);
    int32_t pid = 0;
    uint32_t fd = 0;
    uint64_t token = 0;
    int known = fastpath && samehost_recall(ctx, c->remote_cluster_id, &pid, &fd, &token) == 0;
    put_confirm(a, HELLO_SIZE, known, pid, fd, token, NULL);
    a->olen = HELLO_SIZE + CONFIRM_SIZE;
    a->stage = ST_SEND_HELLO;
    step(ctx, a, fastpath);
}

/* Under ctx->mu: turns each placeholder into a link, or removes it. */
static void finish(pdrt_ctx *ctx, attempt *at, uint32_t n, int32_t *rets) {
    for (uint32_t i = 0; i < n; i++) {
        attempt *a = &at[i];
        if (!a->active) continue;
        /* The I/O thread watches the link from here on, for peer loss and control messages. */
        if (a->code == PDRT_SUCCESS && link_watch(ctx, a->lk, a->fd, 0) != 0) a->code = PDRT_LINK_FAILED;
        rets[i] = a->code;
        if (a->code != PDRT_SUCCESS) {
            if (a->fd >= 0) close(a->fd);
            link_remove(ctx, a->lk, 0);
            continue;
        }
        link_t *lk = a->lk;
        lk->state = PDRT_LINK_LINKED;
        lk->session = a->w.session;
        lk->peer_pid = (int32_t)a->w.pid;
        lk->same_host = a->same_host;
        if (ctx->secret != NULL) {
            memcpy(lk->key, a->key, sizeof lk->key);
            lk->keyed = 1;
        }
        ka_queue(ctx, lk);
    }
}

int32_t pdrt_link(pdrt_ctx *ctx, const pdrt_cluster *clusters, uint32_t n, int32_t timeout_ms, int32_t *rets) {
    int32_t rc = batch_check(clusters, n, timeout_ms, rets);
    if (rc != PDRT_SUCCESS) return rc;
    if (ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    int64_t deadline = now_ms() + timeout_ms;
    attempt at[PDRT_MAX_CLUSTERS_PER_CALL];
    memset(at, 0, sizeof at);
    struct sockaddr_storage ss[PDRT_MAX_CLUSTERS_PER_CALL];
    socklen_t len[PDRT_MAX_CLUSTERS_PER_CALL];
    for (uint32_t i = 0; i < n; i++) {
        at[i].fd = -1;
        rets[i] = cluster_check(ctx, &clusters[i], 1, &ss[i], &len[i]);
    }
    pthread_mutex_lock(&ctx->mu);
    int fastpath = ctx->fastpath;
    for (uint32_t i = 0; i < n; i++) {
        if (rets[i] != PDRT_SUCCESS) continue;
        for (uint32_t k = 0; k < i && rets[i] == PDRT_SUCCESS; k++)
            if (rets[k] != PDRT_PARAM_INVALID && clusters[k].remote_cluster_id == clusters[i].remote_cluster_id)
                rets[i] = PDRT_PROCESSING_LINK; /* the same cluster twice in one call */
        if (rets[i] == PDRT_SUCCESS) rets[i] = reserve(ctx, &clusters[i], &ss[i], len[i], &at[i]);
    }
    pthread_mutex_unlock(&ctx->mu);

    for (uint32_t i = 0; i < n; i++)
        if (at[i].active) start(ctx, &clusters[i], &at[i], fastpath);
    for (;;) {
        struct pollfd pfd[PDRT_MAX_CLUSTERS_PER_CALL];
        uint32_t map[PDRT_MAX_CLUSTERS_PER_CALL], np = 0;
        for (uint32_t i = 0; i < n; i++) {
            attempt *a = &at[i];
            if (!a->active || a->stage == ST_DONE) continue;
            short ev = a->stage == ST_RECV_WELCOME || a->stage == ST_RECV_ACK ? POLLIN : POLLOUT;
            pfd[np] = (struct pollfd){ .fd = a->fd, .events = ev };
            map[np++] = i;
        }
        if (np == 0) break;
        int r = poll(pfd, np, remaining_ms(deadline));
        if (r < 0 && errno != EINTR) r = 0;
        if (r == 0 && remaining_ms(deadline) == 0) {
            for (uint32_t k = 0; k < np; k++) fail(&at[map[k]], PDRT_TIMEOUT);
            break;
        }
        for (uint32_t k = 0; k < np; k++)
            if (pfd[k].revents) step(ctx, &at[map[k]], fastpath);
    }

    pthread_mutex_lock(&ctx->mu);
    finish(ctx, at, n, rets);
    pthread_mutex_unlock(&ctx->mu);
    rc = PDRT_SUCCESS;
    for (uint32_t i = 0; i < n; i++)
        if (rets[i] != PDRT_SUCCESS) rc = PDRT_FAILED;
    ctx_leave(ctx);
    return rc;
}
