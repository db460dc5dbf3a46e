/*
 * The call queue (pdrt.h, "Call queue"): a few threads that take link and unlink calls from a FIFO
 * of slot numbers, make them with pdrt_link / pdrt_unlink, write the outcome into the caller's slot
 * and report it through the caller's callback. It uses the public ABI only, so it knows nothing of
 * contexts beyond their handles.
 */
#define _GNU_SOURCE
#include "pdrt.h"
#include "util.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(pdrt_call) == 2496, "pdrt_call layout");
_Static_assert(offsetof(pdrt_call, clusters) == 64, "pdrt_call layout");
_Static_assert(offsetof(pdrt_call, rets) == 2368, "pdrt_call layout");
_Static_assert(offsetof(pdrt_call, holders) == 2432, "pdrt_call layout");

/* Links listed on the stack before a heap buffer is needed for the holders lookup. */
#define LIST_ON_STACK 64u

struct pdrt_calls {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pdrt_call *slots;
    uint32_t nslots;
    pdrt_calls_done done;
    uint8_t *busy;      /* per slot: 1 from submit until its callback returns */
    uint32_t *ring;     /* queued slot numbers, nslots long */
    uint32_t head, count;
    int stopping;
    uint32_t nthreads;
    pthread_t threads[PDRT_CALLS_MAX_THREADS];
};

/* Fills holders[] for the clusters a link answered PDRT_ALREADY_LINK (see pdrt.h). */
static void find_holders(pdrt_call *c) {
    pdrt_ctx *ctx = (pdrt_ctx *)(uintptr_t)c->ctx;
    pdrt_link_info on_stack[LIST_ON_STACK];
    pdrt_link_info *infos = on_stack;
    uint32_t cap = LIST_ON_STACK, n = 0, total = 0;
    for (;;) {
        if (pdrt_list_links(ctx, infos, cap, &n, &total) != PDRT_SUCCESS) goto out;
        if (total <= cap) break;
        if (infos != on_stack) free(infos);
        cap = total + 16;
        infos = malloc(sizeof *infos * cap);
        if (infos == NULL) return;
    }
    for (uint32_t i = 0; i < c->n; i++) {
        c->holders[i] = 0;
        if (c->rets[i] != PDRT_ALREADY_LINK) continue;
        for (uint32_t k = 0; k < n; k++) {
            if (infos[k].remote_cluster_id == c->clusters[i].remote_cluster_id && infos[k].state == PDRT_LINK_LINKED) {
                c->holders[i] = 1 + infos[k].side;
                break;
            }
        }
    }
    c->holders_known = 1;
out:
    if (infos != on_stack) free(infos);
}

static void run_call(pdrt_call *c) {
    pdrt_ctx *ctx = (pdrt_ctx *)(uintptr_t)c->ctx;
    uint32_t n = c->n <= PDRT_MAX_CLUSTERS_PER_CALL ? c->n : PDRT_MAX_CLUSTERS_PER_CALL;
    c->holders_known = 0;
    int64_t left = c->deadline_ms - wall_ms();
    if (left < 1) {
        /* The call waited in the queue for its whole time: it is not made. */
        c->ret = PDRT_FAILED;
        for (uint32_t i = 0; i < n; i++) c->rets[i] = PDRT_TIMEOUT;
        return;
    }
    int32_t timeout_ms = c->timeout_ms;
    if (timeout_ms > 0 && timeout_ms > left) timeout_ms = (int32_t)left;
    if (c->op == PDRT_CALL_LINK) {
        c->ret = pdrt_link(ctx, c->clusters, c->n, timeout_ms, c->rets);
        int already = 0;
        if (c->ret == PDRT_SUCCESS || c->ret == PDRT_FAILED)
            for (uint32_t i = 0; i < n; i++) already |= c->rets[i] == PDRT_ALREADY_LINK;
        if (already) find_holders(c);
    } else if (c->op == PDRT_CALL_UNLINK) {
        c->ret = pdrt_unlink(ctx, c->clusters, c->n, timeout_ms, c->force, c->rets);
    } else {
        c->ret = PDRT_PARAM_INVALID;
    }
}

static void *serve(void *arg) {
    pdrt_calls *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->count == 0 && !q->stopping) pthread_cond_wait(&q->cv, &q->mu);
        if (q->count == 0) break; /* stopping, and nothing left */
        uint32_t slot = q->ring[q->head];
        q->head = (q->head + 1) % q->nslots;
        q->count--;
        pthread_mutex_unlock(&q->mu);
        run_call(&q->slots[slot]);
        /* The slot is free before the caller hears of it, so the callback may submit it again. */
        pthread_mutex_lock(&q->mu);
        q->busy[slot] = 0;
        pthread_mutex_unlock(&q->mu);
        q->done(slot);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static void stop(pdrt_calls *q) {
    pthread_mutex_lock(&q->mu);
    q->stopping = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    for (uint32_t i = 0; i < q->nthreads; i++) pthread_join(q->threads[i], NULL);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->busy);
    free(q->ring);
    free(q);
}

int32_t pdrt_calls_create(uint32_t threads, pdrt_call *slots, uint32_t nslots, pdrt_calls_done done,
                          pdrt_calls **out) {
    if (out == NULL || slots == NULL || done == NULL || nslots == 0 || threads == 0 ||
        threads > PDRT_CALLS_MAX_THREADS)
        return PDRT_PARAM_INVALID;
    if (((uintptr_t)slots & 7u) != 0) return PDRT_PARAM_INVALID;
    pdrt_calls *q = calloc(1, sizeof *q);
    if (q == NULL) return PDRT_OUT_OF_MEMORY;
    q->busy = calloc(nslots, 1);
    q->ring = calloc(nslots, sizeof *q->ring);
    if (q->busy == NULL || q->ring == NULL) {
        free(q->busy);
        free(q->ring);
        free(q);
        return PDRT_OUT_OF_MEMORY;
    }
    q->slots = slots;
    q->nslots = nslots;
    q->done = done;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    for (uint32_t i = 0; i < threads; i++) {
        if (pthread_create(&q->threads[i], NULL, serve, q) != 0) {
            stop(q);
            return PDRT_FAILED;
        }
        q->nthreads++;
    }
    *out = q;
    return PDRT_SUCCESS;
}

int32_t pdrt_calls_submit(pdrt_calls *q, uint32_t slot) {
    if (q == NULL) return PDRT_PARAM_INVALID;
    pthread_mutex_lock(&q->mu);
    int32_t rc = PDRT_SUCCESS;
    if (q->stopping) rc = PDRT_FAILED;
    else if (slot >= q->nslots || q->busy[slot]) rc = PDRT_PARAM_INVALID;
    else {
        q->busy[slot] = 1;
        q->ring[(q->head + q->count) % q->nslots] = slot;
        q->count++;
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int32_t pdrt_calls_destroy(pdrt_calls *q) {
    if (q == NULL) return PDRT_PARAM_INVALID;
    stop(q);
    return PDRT_SUCCESS;
}
