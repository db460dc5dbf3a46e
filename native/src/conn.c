/*
 * Requester-side data connections of a link: a small pool of idle connections, refilled on demand.
 * The link's client connects directly; the server asks the client (over the control connection)
 * to connect back, and waits for the I/O thread to pool the arriving connection.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "auth.h"
#include "hmac.h"
#include "net.h"
#include "wire.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int32_t net_status(int r) {
    return r == NET_TIMEOUT ? PDRT_TIMEOUT : PDRT_LINK_FAILED;
}

/* Publishes fd as the transfer's connection unless the link is gone. Under ctx->mu. */
static int publish(link_t *lk, xfer *x, int fd) {
    if (!lk->listed) return -1;
    x->fd = fd;
    return 0;
}

int data_hello(pdrt_ctx *ctx, int fd, uint32_t kind, uint64_t server_id, uint64_t session, const uint8_t *key,
               int64_t deadline) {
    wire_hello h = { .version = WIRE_VERSION, .kind = kind, .client_id = ctx->id, .server_id = server_id,
                     .role = ctx->role, .session = session };
    auth_input in;
    if (key != NULL) {
        if (auth_nonce(h.nonce) != 0) return NET_ERR;
        auth_data_input(&in, h.nonce, ctx->id, server_id, session, kind);
        auth_mac(key, AUTH_MAC, AUTH_DATA_HELLO, &in, h.mac);
        h.flags = HELLO_AUTH;
    }
    uint8_t b[HELLO_SIZE];
    wire_put_hello(b, &h);
    wire_welcome w;
    int r = net_send_all(fd, b, HELLO_SIZE, deadline);
    if (r == NET_OK) r = net_recv_all(fd, b, WELCOME_SIZE, deadline);
    if (r == NET_OK && (wire_get_welcome(b, &w) != 0 || w.status != PDRT_SUCCESS)) r = NET_ERR;
    /* The server proves it too: nothing it sends on the connection is taken from an impostor. */
    if (r == NET_OK && key != NULL &&
        (!(w.flags & WELCOME_AUTH) || !auth_verify(key, AUTH_MAC, AUTH_DATA_WELCOME, &in, w.mac)))
        r = NET_ERR;
    return r;
}

static int open_data(pdrt_ctx *ctx, link_t *lk, xfer *x, int64_t deadline, int32_t *rc) {
    pthread_mutex_lock(&ctx->mu);
    struct sockaddr_storage addr = lk->addr;
    socklen_t addrlen = lk->addrlen;
    char local_ip[PDRT_IP_MAX];
    memcpy(local_ip, lk->local_ip, sizeof local_ip);
    uint64_t server_id = lk->remote_id, session = lk->session;
    uint8_t key[AUTH_MAC];
    int keyed = lk->keyed;
    memcpy(key, lk->key, sizeof key);
    pthread_mutex_unlock(&ctx->mu);
    *rc = PDRT_LINK_FAILED;
    int fd = net_connect_start(&addr, addrlen, local_ip, 0);
    if (fd < 0) return -1;
    pthread_mutex_lock(&ctx->mu);
    int ok = publish(lk, x, fd) == 0;
    pthread_mutex_unlock(&ctx->mu);
    if (!ok) {
        close(fd);
        return -1;
    }
    net_tune(fd, 0);
    int r = net_connect_wait(fd, deadline);
    if (r == NET_OK) r = data_hello(ctx, fd, CONN_DATA, server_id, session, keyed ? key : NULL, deadline);
    wipe(key, sizeof key);
    if (r != NET_OK) {
        conn_release(ctx, lk, x, fd, 0);
        *rc = net_status(r);
        return -1;
    }
    return fd;
}

int conn_acquire(pdrt_ctx *ctx, link_t *lk, xfer *x, int64_t deadline, int32_t *rc) {
    int asked = 0;
    pthread_mutex_lock(&ctx->mu);
    for (;;) {
        if (!lk->listed || ctx->stopping) {
            pthread_mutex_unlock(&ctx->mu);
            *rc = PDRT_LINK_FAILED;
            return -1;
        }
        if (lk->npool > 0) {
            int fd = lk->pool[--lk->npool];
            /* The peer closed it while idle, or is about to: the serving side closes connections
             * idle for its idle timeout, and one taken just then would fail the transfer. */
            if (net_is_dead(fd) || now_ms() - lk->pool_since[lk->npool] > (int64_t)ctx->cfg.idle_timeout_ms / 2) {
                close(fd);
                continue;
            }
            publish(lk, x, fd);
            pthread_mutex_unlock(&ctx->mu);
            return fd;
        }
        if (lk->side == PDRT_SIDE_CLIENT) break;
        if (!asked) {
            if (lk->ctl_fd < 0 || ctl_send(lk->ctl_fd, CTL_OPEN_REVERSE, lk->session) != 0) {
                pthread_mutex_unlock(&ctx->mu);
                *rc = PDRT_LINK_FAILED;
                return -1;
            }
            asked = 1;
        }
        if (cv_wait_until(&ctx->cv, &ctx->mu, deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&ctx->mu);
            *rc = PDRT_TIMEOUT;
            return -1;
        }
    }
    pthread_mutex_unlock(&ctx->mu);
    return open_data(ctx, lk, x, deadline, rc);
}

void conn_release(pdrt_ctx *ctx, link_t *lk, xfer *x, int fd, int reusable) {
    pthread_mutex_lock(&ctx->mu);
    x->fd = -1;
    if (reusable && lk->listed && lk->npool < POOL_MAX) {
        lk->pool_since[lk->npool] = now_ms();
        lk->pool[lk->npool++] = fd;
    } else {
        close(fd);
    }
    pthread_mutex_unlock(&ctx->mu);
}
