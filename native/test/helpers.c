/* Helpers shared by the test files (see testing.h). */
#define _GNU_SOURCE
#include "testing.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int failures;
const char *current = "";

int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

pdrt_cluster cluster(uint64_t id, const char *ip, uint16_t port) {
    pdrt_cluster c;
    memset(&c, 0, sizeof c);
    c.remote_cluster_id = id;
    c.remote_port = port;
    snprintf(c.remote_ip, sizeof c.remote_ip, "%s", ip);
    return c;
}

/* A context listening on an ephemeral port of ip, or client-only when ip is NULL. */
pdrt_ctx *make_ctx(uint64_t id, const char *ip) {
    pdrt_ctx *ctx = NULL;
    int32_t rc = pdrt_create(id, ip ? PDRT_ROLE_PROMPT : PDRT_ROLE_DECODER, ip, 0, NULL, &ctx);
    if (rc != PDRT_SUCCESS) {
        fprintf(stderr, "pdrt_create(%llu, %s) = 0x%x\n", (unsigned long long)id, ip ? ip : "-", (unsigned)rc);
        exit(100);
    }
    return ctx;
}

uint16_t port_of(pdrt_ctx *ctx) {
    uint16_t port = 0;
    pdrt_listen_port(ctx, &port);
    return port;
}

int32_t link1(pdrt_ctx *ctx, pdrt_cluster c, int32_t timeout_ms) {
    int32_t ret = PDRT_FAILED;
    pdrt_link(ctx, &c, 1, timeout_ms, &ret);
    return ret;
}

int32_t unlink1(pdrt_ctx *ctx, uint64_t id, int force, int32_t timeout_ms) {
    pdrt_cluster c = cluster(id, "", 0);
    int32_t ret = PDRT_FAILED;
    pdrt_unlink(ctx, &c, 1, timeout_ms, force, &ret);
    return ret;
}

/* The link to id, or state 0 when there is none. */
pdrt_link_info find_link(pdrt_ctx *ctx, uint64_t id) {
    pdrt_link_info all[32], none;
    memset(&none, 0, sizeof none);
    uint32_t n = 0, total = 0;
    pdrt_list_links(ctx, all, 32, &n, &total);
    for (uint32_t i = 0; i < n; i++)
        if (all[i].remote_cluster_id == id) return all[i];
    return none;
}

/* Waits (bounded) for an event of kind about id, discarding others; 1 when seen. */
int wait_event(pdrt_ctx *ctx, uint32_t kind, uint64_t id, pdrt_event *out) {
    int64_t deadline = mono_ms() + 5000;
    while (mono_ms() < deadline) {
        pdrt_event ev[16];
        uint32_t n = 0;
        pdrt_wait_events(ctx, (int32_t)(deadline - mono_ms()));
        pdrt_poll_events(ctx, ev, 16, &n);
        for (uint32_t i = 0; i < n; i++) {
            if (ev[i].kind == kind && ev[i].remote_cluster_id == id) {
                if (out) *out = ev[i];
                return 1;
            }
        }
    }
    return 0;
}

uint32_t drain_events(pdrt_ctx *ctx) {
    pdrt_event ev[64];
    uint32_t n = 0, all = 0;
    do {
        pdrt_poll_events(ctx, ev, 64, &n);
        all += n;
    } while (n > 0);
    return all;
}

/* Polls a condition with a bounded deadline (not a sleep to synchronise: it ends on the condition). */
int eventually(int (*cond)(void *), void *arg) {
    int64_t deadline = mono_ms() + 5000;
    while (mono_ms() < deadline) {
        if (cond(arg)) return 1;
        usleep(2000);
    }
    return cond(arg);
}

void fill_pattern(uint8_t *buf, uint32_t nblocks, uint32_t seed) {
    for (uint32_t b = 0; b < nblocks; b++)
        for (uint32_t i = 0; i < BLOCK; i++) buf[(size_t)b * BLOCK + i] = (uint8_t)(seed * 131 + b * 31 + i * 7);
}

/* Fills every block of a cache with the pattern of seed. */
void write_all(pdrt_ctx *ctx, uint64_t cache_id, uint32_t seed) {
    static uint8_t buf[NBLOCKS * BLOCK];
    uint32_t idx[NBLOCKS];
    for (uint32_t i = 0; i < NBLOCKS; i++) idx[i] = i;
    fill_pattern(buf, NBLOCKS, seed);
    CHECK_RC(pdrt_write_blocks(ctx, cache_id, idx, NBLOCKS, buf, sizeof buf), PDRT_SUCCESS);
}

/* 1 when local block dst of ctx's cache equals block src of the pattern seed. */
int block_matches(pdrt_ctx *ctx, uint64_t cache_id, uint32_t dst, uint32_t seed, uint32_t src) {
    uint8_t got[BLOCK];
    if (pdrt_read_blocks(ctx, cache_id, &dst, 1, got, BLOCK) != PDRT_SUCCESS) return 0;
    for (uint32_t i = 0; i < BLOCK; i++)
        if (got[i] != (uint8_t)(seed * 131 + src * 31 + i * 7)) return 0;
    return 1;
}
