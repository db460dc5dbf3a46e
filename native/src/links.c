/* The link table of a context: lookup, removal with everything hanging off a link, listing. */
#define _GNU_SOURCE
#include "internal.h"
#include "net.h"
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

link_t *link_find(pdrt_ctx *ctx, uint64_t remote_id) {
    for (link_t *lk = ctx->links; lk != NULL; lk = lk->next)
        if (lk->remote_id == remote_id) return lk;
    return NULL;
}

link_t *link_find_fd(pdrt_ctx *ctx, int fd) {
    return fd >= 0 && (size_t)fd < ctx->ctl_cap ? ctx->ctl_by_fd[fd] : NULL;
}

int link_watch(pdrt_ctx *ctx, link_t *lk, int fd, int registered) {
    if ((size_t)fd >= ctx->ctl_cap) {
        size_t cap = ctx->ctl_cap ? ctx->ctl_cap : 64;
        while (cap <= (size_t)fd) cap *= 2;
        link_t **v = realloc(ctx->ctl_by_fd, cap * sizeof *v);
        if (v == NULL) return -1;
        memset(v + ctx->ctl_cap, 0, (cap - ctx->ctl_cap) * sizeof *v);
        ctx->ctl_by_fd = v;
        ctx->ctl_cap = cap;
    }
    if (!registered && ep_add(ctx, fd) != 0) return -1;
    ctx->ctl_by_fd[fd] = lk;
    lk->ctl_fd = fd;
    lk->watched = 1;
    return 0;
}

void link_unwatch(pdrt_ctx *ctx, link_t *lk) {
    if (!lk->watched) return;
    ep_del(ctx, lk->ctl_fd);
    ctx->ctl_by_fd[lk->ctl_fd] = NULL;
    lk->watched = 0;
}

link_t *link_new(uint64_t remote_id, uint32_t side) {
    link_t *lk = calloc(1, sizeof *lk);
    if (lk == NULL) return NULL;
    lk->remote_id = remote_id;
    lk->side = side;
    lk->state = PDRT_LINK_LINKING;
    lk->ctl_fd = -1;
    lk->refs = 1;
    return lk;
}

void link_insert(pdrt_ctx *ctx, link_t *lk) {
    lk->next = ctx->links;
    ctx->links = lk;
    lk->listed = 1;
}

void link_unref(pdrt_ctx *ctx, link_t *lk) {
    (void)ctx;
    if (--lk->refs > 0) return;
    for (int i = 0; i < lk->npool; i++) close(lk->pool[i]);
    while (lk->maps != NULL) {
        peer_map *m = lk->maps;
        lk->maps = m->next;
        peer_map_put(m);
    }
    if (lk->ctl_fd >= 0) close(lk->ctl_fd); /* only a socket never handed to link_remove */
    memset(lk->key, 0, sizeof lk->key); /* freed at once: nothing reads it again */
    free(lk);
}

void link_remove(pdrt_ctx *ctx, link_t *lk, int park) {
    if (!lk->listed) return;
    link_t **pp = &ctx->links;
    while (*pp != lk) pp = &(*pp)->next;
    *pp = lk->next;
    lk->listed = 0;
    for (xfer *x = lk->xfers; x != NULL; x = x->next)
        if (x->fd >= 0) shutdown(x->fd, SHUT_RDWR);
    for (int i = 0; i < lk->npool; i++) close(lk->pool[i]);
    lk->npool = 0;
    serve_shutdown_session(ctx, lk->session);
    if (park && lk->ka_queued && lk->ctl_fd >= 0) net_keepalive(lk->ctl_fd); /* a parked socket may live long */
    ka_dequeue(ctx, lk);
    if (lk->ctl_fd >= 0) {
        int fd = lk->ctl_fd;
        if (park && lk->watched && fdvec_push(&ctx->detached, fd) == 0) {
            ctx->ctl_by_fd[fd] = NULL; /* still in the epoll set, now as a detached socket */
            lk->watched = 0;
        } else {
            /* Out of the epoll set first: the number may be reused as soon as it is closed. */
            link_unwatch(ctx, lk);
            close(fd);
        }
        lk->ctl_fd = -1;
    }
    pthread_cond_broadcast(&ctx->cv);
    link_unref(ctx, lk);
}

void link_set_unusable(pdrt_ctx *ctx, link_t *lk) {
    if (!lk->listed || lk->state == PDRT_LINK_UNUSABLE || lk->state == PDRT_LINK_UNLINKING) return;
    lk->state = PDRT_LINK_UNUSABLE;
    event_push(ctx, PDRT_EVENT_LINK_UNUSABLE, lk->side, lk->remote_id, PDRT_TIMEOUT);
}

int32_t pdrt_list_links(pdrt_ctx *ctx, pdrt_link_info *out, uint32_t cap, uint32_t *n,
                        uint32_t *total) {
    if (n == NULL || total == NULL || (out == NULL && cap > 0) || ctx_enter(ctx) != 0)
        return PDRT_PARAM_INVALID;
    uint32_t k = 0, all = 0;
    pthread_mutex_lock(&ctx->mu);
    for (link_t *lk = ctx->links; lk != NULL; lk = lk->next, all++) {
        if (k >= cap) continue;
        pdrt_link_info *li = &out[k++];
        memset(li, 0, sizeof *li);
        li->remote_cluster_id = lk->remote_id;
        li->side = lk->side;
        li->state = lk->state;
        li->transfers_in_flight = lk->inflight;
        li->remote_port = lk->remote_port;
        li->same_host = (uint16_t)lk->same_host;
        memcpy(li->remote_ip, lk->remote_ip, PDRT_IP_MAX);
    }
    pthread_mutex_unlock(&ctx->mu);
    *n = k;
    *total = all;
    ctx_leave(ctx);
    return PDRT_SUCCESS;
}
