/*
 * What every part of a context may do with it, without knowing how a context is made: enter and
 * leave a call (the registry of live contexts, so a destroyed or bogus handle gets
 * PDRT_PARAM_INVALID instead of a crash, and pdrt_destroy can wait for calls in progress), add and
 * remove a descriptor in the I/O thread's epoll set, draw a session number. ctx.c registers a
 * context once it is whole and unregisters it first thing when it is destroyed.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <sys/epoll.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static pdrt_ctx *g_live;

int ctx_enter(pdrt_ctx *ctx) {
    int ok = -1;
    if (ctx == NULL) return -1;
    pthread_mutex_lock(&g_mu);
    for (pdrt_ctx *c = g_live; c != NULL; c = c->gnext) {
        if (c == ctx) {
            if (!c->closing) {
                c->calls++;
                ok = 0;
            }
            break;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return ok;
}

void ctx_leave(pdrt_ctx *ctx) {
    pthread_mutex_lock(&g_mu);
    if (--ctx->calls == 0) pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

uint64_t ctx_session(pdrt_ctx *ctx) {
    /* splitmix64: distinct numbers from a random seed without a syscall per link */
    uint64_t z = (ctx->rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z | 1;
}

int ep_add(pdrt_ctx *ctx, int fd) {
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
    return epoll_ctl(ctx->ep, EPOLL_CTL_ADD, fd, &ev);
}

void ep_del(pdrt_ctx *ctx, int fd) {
    struct epoll_event ev = { 0 }; /* ignored, but kernels before 2.6.9 wanted it */
    epoll_ctl(ctx->ep, EPOLL_CTL_DEL, fd, &ev);
}

void ctx_register(pdrt_ctx *ctx) {
    pthread_mutex_lock(&g_mu);
    ctx->gnext = g_live;
    g_live = ctx;
    pthread_mutex_unlock(&g_mu);
}

int ctx_unregister(pdrt_ctx *ctx) {
    pthread_mutex_lock(&g_mu);
    pdrt_ctx **pp = &g_live;
    while (*pp != NULL && *pp != ctx) pp = &(*pp)->gnext;
    if (*pp == NULL) {
        pthread_mutex_unlock(&g_mu);
        return -1;
    }
    *pp = ctx->gnext;
    ctx->closing = 1;
    pthread_mutex_unlock(&g_mu);
    return 0;
}

void ctx_wait_calls(pdrt_ctx *ctx) {
    pthread_mutex_lock(&g_mu);
    while (ctx->calls > 0) pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
}
