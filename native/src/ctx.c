/*
 * Context lifecycle and options: a context owns its parts (the link table, the I/O thread, the
 * serving threads, keep-alive, the same-host path, the block caches) and creates and destroys
 * them in order; the parts know the context only through handle.c.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "hmac.h"
#include "net.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* The layouts pdrt.h promises (and the TypeScript facade decodes with fixed offsets). */
_Static_assert(sizeof(pdrt_cluster) == 144, "pdrt_cluster must be 144 bytes");
_Static_assert(sizeof(pdrt_event) == 32, "pdrt_event must be 32 bytes");
_Static_assert(sizeof(pdrt_link_info) == 88, "pdrt_link_info must be 88 bytes");
_Static_assert(sizeof(pdrt_config) == 48, "pdrt_config must be 48 bytes");

int32_t pdrt_abi_version(void) {
    return PDRT_ABI_VERSION;
}

static int32_t open_listener(pdrt_ctx *ctx, const char *ip, uint16_t port) {
    struct sockaddr_storage ss;
    socklen_t len;
    if (net_parse_ip(ip, port, &ss, &len) != 0) return PDRT_PARAM_INVALID;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return PDRT_FAILED;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    /* Accepted sockets inherit these, which spares each of them its own setsockopt calls. */
    net_tune(fd, 1);
    /* Every connection starts with the client's HELLO: wake the I/O thread when it is there
     * rather than at the TCP handshake, a wakeup (and a read that finds nothing) saved. */
    int defer_s = (int)(ctx->cfg.handshake_timeout_ms + 999) / 1000;
    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof defer_s);
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 512) != 0) {
        close(fd);
        return PDRT_LINK_FAILED;
    }
    len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    ctx->listen_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                     : ((struct sockaddr_in6 *)&ss)->sin6_port);
    ctx->listen_fd = fd;
    return PDRT_SUCCESS;
}

static void ctx_free(pdrt_ctx *ctx) {
    if (ctx->listen_fd >= 0) close(ctx->listen_fd);
    if (ctx->ep >= 0) close(ctx->ep);
    if (ctx->stop_fd >= 0) close(ctx->stop_fd);
    if (ctx->ka_fd >= 0) close(ctx->ka_fd);
    samehost_fini(ctx);
    serve_fini(ctx);
    if (ctx->secret != NULL) wipe(ctx->secret, ctx->secret_len);
    free(ctx->secret);
    free(ctx->events);
    free(ctx->ctl_by_fd);
    free(ctx->detached.v);
    pthread_cond_destroy(&ctx->cv);
    pthread_cond_destroy(&ctx->ev_cv);
    pthread_mutex_destroy(&ctx->mu);
    free(ctx);
}

/* Checks a pdrt_config and fills in its defaults; 0 when valid. */
static int config_resolve(const pdrt_config *in, pdrt_config *out) {
    static const pdrt_config none = { 0 };
    const pdrt_config *c = in != NULL ? in : &none;
    if (c->reserved != 0 || (c->link_secret == NULL) != (c->link_secret_len == 0)) return -1;
    if (c->link_secret_len != 0 && (c->link_secret_len < PDRT_SECRET_MIN || c->link_secret_len > PDRT_SECRET_MAX))
        return -1;
    *out = *c;
    out->link_secret = NULL;
#define OR(field, dflt) out->field = c->field != 0 ? c->field : (dflt)
    OR(handshake_timeout_ms, DEFAULT_HANDSHAKE_MS);
    OR(idle_timeout_ms, DEFAULT_IDLE_MS);
    OR(max_links, DEFAULT_MAX_LINKS);
    OR(max_links_per_peer, DEFAULT_MAX_LINKS_PER_PEER);
    OR(max_handshakes, DEFAULT_MAX_HANDSHAKES);
    OR(max_handshakes_per_peer, DEFAULT_MAX_HANDSHAKES_PER_PEER);
    OR(max_conns_per_peer, DEFAULT_MAX_CONNS_PER_PEER);
    OR(max_conns, DEFAULT_MAX_CONNS);
#undef OR
    return 0;
}

int32_t pdrt_create(uint64_t cluster_id, uint32_t role, const char *listen_ip, uint16_t listen_port,
                    const pdrt_config *config, pdrt_ctx **out) {
    pdrt_config cfg;
    if (out == NULL || role > PDRT_ROLE_MIX || config_resolve(config, &cfg) != 0) return PDRT_PARAM_INVALID;
    int wants_listener = listen_port > 0 || (listen_ip != NULL && listen_ip[0] != '\0');
    if (wants_listener && listen_ip == NULL) return PDRT_PARAM_INVALID;
    pdrt_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) return PDRT_OUT_OF_MEMORY;
    ctx->id = cluster_id;
    ctx->role = role;
    ctx->cfg = cfg;
    ctx->listen_fd = ctx->ep = ctx->stop_fd = ctx->ka_fd = ctx->probe_fd = ctx->sv_ep = ctx->sv_wake = -1;
    ctx->fastpath = 1;
    ctx->events = calloc(MAX_EVENTS, sizeof *ctx->events);
    pthread_mutex_init(&ctx->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ctx->cv, &ca);
    pthread_cond_init(&ctx->ev_cv, &ca);
    pthread_condattr_destroy(&ca);
    ctx->rng = random_u64();
    if (cfg.link_secret_len != 0) {
        ctx->secret = malloc(cfg.link_secret_len);
        if (ctx->secret == NULL) {
            ctx_free(ctx);
            return PDRT_OUT_OF_MEMORY;
        }
        memcpy(ctx->secret, config->link_secret, cfg.link_secret_len);
        ctx->secret_len = cfg.link_secret_len;
    }
    ctx->ep = epoll_create1(EPOLL_CLOEXEC);
    ctx->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ctx->events == NULL || ctx->ep < 0 || ctx->stop_fd < 0 || ep_add(ctx, ctx->stop_fd) != 0 ||
        ka_init(ctx) != 0 || serve_init(ctx) != 0) {
        ctx_free(ctx);
        return PDRT_OUT_OF_MEMORY;
    }
    if (wants_listener) {
        int32_t rc = open_listener(ctx, listen_ip, listen_port);
        if (rc == PDRT_SUCCESS && ep_add(ctx, ctx->listen_fd) != 0) rc = PDRT_OUT_OF_MEMORY;
        if (rc != PDRT_SUCCESS) {
            ctx_free(ctx);
            return rc;
        }
    }
    samehost_init(ctx);
    if (io_start(ctx) != 0) {
        ctx_free(ctx);
        return PDRT_FAILED;
    }
    ctx_register(ctx);
    *out = ctx;
    return PDRT_SUCCESS;
}

int32_t pdrt_listen_port(pdrt_ctx *ctx, uint16_t *port) {
    if (port == NULL || ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    *port = ctx->listen_port;
    ctx_leave(ctx);
    return PDRT_SUCCESS;
}

int32_t pdrt_set_option(pdrt_ctx *ctx, uint32_t option, int64_t value) {
    if (ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    int32_t rc = PDRT_PARAM_INVALID;
    if (option == PDRT_OPT_SAME_HOST_FASTPATH && (value == 0 || value == 1)) {
        pthread_mutex_lock(&ctx->mu);
        ctx->fastpath = (int)value;
        pthread_mutex_unlock(&ctx->mu);
        rc = PDRT_SUCCESS;
    }
    ctx_leave(ctx);
    return rc;
}

int32_t pdrt_destroy(pdrt_ctx *ctx) {
    if (ctx == NULL || ctx_unregister(ctx) != 0) return PDRT_PARAM_INVALID;

    /* Wake every waiter (the stop eventfd stays readable: unlinks waiting for acks poll it) and
     * abort running transfers, then wait for calls in progress to leave. */
    pthread_mutex_lock(&ctx->mu);
    ctx->stopping = 1;
    uint64_t one = 1;
    ssize_t w = write(ctx->stop_fd, &one, sizeof one); /* an eventfd write of 1 cannot fail here */
    (void)w;
    for (link_t *lk = ctx->links; lk != NULL; lk = lk->next)
        for (xfer *x = lk->xfers; x != NULL; x = x->next)
            if (x->fd >= 0) shutdown(x->fd, SHUT_RDWR);
    pthread_cond_broadcast(&ctx->cv);
    pthread_cond_broadcast(&ctx->ev_cv);
    pthread_mutex_unlock(&ctx->mu);
    ctx_wait_calls(ctx);

    io_stop(ctx);

    pthread_mutex_lock(&ctx->mu);
    serve_shutdown_all(ctx);
    while (ctx->nserves > 0) pthread_cond_wait(&ctx->cv, &ctx->mu);
    while (ctx->links != NULL) link_remove(ctx, ctx->links, 0);
    for (size_t i = 0; i < ctx->detached.n; i++) close(ctx->detached.v[i]);
    ctx->detached.n = 0;
    cache_free_all(ctx);
    pthread_mutex_unlock(&ctx->mu);
    /* Every worker is joined before the free (one may still be inside an unlock of ctx->mu). */
    serve_stop(ctx);
    ctx_free(ctx);
    return PDRT_SUCCESS;
}
