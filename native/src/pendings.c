/*
 * The table of server-side handshakes in progress (handshake.h), owned by the I/O thread: by
 * descriptor for the events, oldest first for the deadlines and for giving way when the budget is
 * used up.
 */
#include "handshake.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hs_add(pendings *ps, pending *p) {
    if ((size_t)p->fd >= ps->cap) {
        size_t cap = ps->cap ? ps->cap : 64;
        while (cap <= (size_t)p->fd) cap *= 2;
        pending **v = realloc(ps->by_fd, cap * sizeof *v);
        if (v == NULL) return -1;
        memset(v + ps->cap, 0, (cap - ps->cap) * sizeof *v);
        ps->by_fd = v;
        ps->cap = cap;
    }
    ps->by_fd[p->fd] = p;
    p->prev = ps->tail;
    if (ps->tail != NULL) ps->tail->next = p;
    else ps->head = p;
    ps->tail = p;
    ps->count++;
    return 0;
}

void hs_forget(pendings *ps, pending *p) {
    ps->by_fd[p->fd] = NULL;
    if (p->prev != NULL) p->prev->next = p->next;
    else ps->head = p->next;
    if (p->next != NULL) p->next->prev = p->prev;
    else ps->tail = p->prev;
    ps->count--;
    free(p);
}

void hs_drop(pdrt_ctx *ctx, pendings *ps, pending *p) {
    if (p->lk != NULL) {
        pthread_mutex_lock(&ctx->mu);
        link_remove(ctx, p->lk, 0);
        pthread_mutex_unlock(&ctx->mu);
    }
    if (p->registered) ep_del(ctx, p->fd);
    close(p->fd);
    hs_forget(ps, p);
}
