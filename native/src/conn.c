/*
 * Requester-side data connections of a link: a small pool of idle connections, refilled on demand.
 * The link's client connects directly; the server asks the client (over the control connection)
 * to connect back, and waits for the I/O thread to pool the arriving connection.
 */
#define _GNU_SOURCE
#include "internal.h"
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

static int open_data(pdrt_ctx *ctx, link_t *lk, xfer *x, int64_t deadline, int32_t *rc) {
    pthread_mutex_lock(&ctx->mu);
    struct sockaddr_storage addr = lk->addr;
    socklen_t addrlen = lk->addrlen;
    char local_ip[PDRT_IP_MAX];
    memcpy(local_ip, lk->local_ip, sizeof local_ip);
    wire_hello h = { .version = WIRE_VERSION, .kind = CONN_DATA, .client_id = ctx->id,
                     .server_id = lk->remote_id, .role = ctx->role, .session = lk->session };
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
    uint8_t b[HELLO_SIZE];
    wire_put_hello(b, &h);
    wire_welcome w;
    int r = net_connect_wait(fd, deadline);
    if (r == NET_OK) r = net_send_all(fd, b, HELLO_SIZE, deadline);
    if (r == NET_OK) r = net_recv_all(fd, b, WELCOME_SIZE, deadline);
    if (r == NET_OK && (wire_get_welcome(b, &w) != 0 || w.status != PDRT_SUCCESS)) r = NET_ERR;
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
            if (net_is_dead(fd)) { /* the peer closed it while idle */
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
        lk->pool[lk->npool++] = fd;
    } else {
        close(fd);
    }
    pthread_mutex_unlock(&ctx->mu);
}
