/* Block caches and transfers on both paths, alone and in parallel. */
#define _GNU_SOURCE
#include "testing.h"

#include <pthread.h>
#include <string.h>

static void test_blocks_local(void) {
    current = "local blocks";
    pdrt_ctx *d = make_ctx(61, NULL);
    static uint8_t buf[NBLOCKS * BLOCK];
    uint32_t idx[3] = { 3, 0, 63 };
    CHECK_RC(pdrt_register_blocks(d, 5, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(d, 5, NBLOCKS, BLOCK), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_register_blocks(d, 6, 0, BLOCK), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_register_blocks(d, 6, 4, 0), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_read_blocks(d, 5, idx, 3, buf, 3 * BLOCK), PDRT_SUCCESS);
    int zero = 1;
    for (size_t i = 0; i < 3 * BLOCK; i++) zero &= buf[i] == 0;
    CHECK(zero);
    fill_pattern(buf, 3, 9);
    CHECK_RC(pdrt_write_blocks(d, 5, idx, 3, buf, 3 * BLOCK), PDRT_SUCCESS);
    uint8_t got[3 * BLOCK];
    CHECK_RC(pdrt_read_blocks(d, 5, idx, 3, got, sizeof got), PDRT_SUCCESS);
    CHECK(memcmp(got, buf, sizeof got) == 0);
    CHECK_RC(pdrt_write_blocks(d, 5, idx, 3, buf, 3 * BLOCK - 1), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_read_blocks(d, 5, idx, 0, got, 0), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_read_blocks(d, 5, NULL, 1, got, BLOCK), PDRT_PARAM_INVALID);
    uint32_t bad[1] = { 64 };
    CHECK_RC(pdrt_read_blocks(d, 5, bad, 1, got, BLOCK), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_read_blocks(d, 99, idx, 1, got, BLOCK), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_unregister_blocks(d, 5), PDRT_SUCCESS);
    CHECK_RC(pdrt_unregister_blocks(d, 5), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_read_blocks(d, 5, idx, 1, got, BLOCK), PDRT_KV_CACHE_NOT_EXIST);
    pdrt_destroy(d);
}

/* Pulls, pushes and errors between a server p and a client d, on whichever path they negotiated. */
static void transfers(pdrt_ctx *p, uint64_t pid, pdrt_ctx *d, uint64_t did) {
    write_all(p, 1, 1);
    write_all(d, 2, 2);
    uint32_t src[4] = { 5, 1, 60, 5 }, dst[4] = { 0, 9, 3, 40 };
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, src, 2, dst, 4, 2000), PDRT_SUCCESS);
    for (int i = 0; i < 4; i++) CHECK(block_matches(d, 2, dst[i], 1, src[i]));
    CHECK(block_matches(d, 2, 1, 2, 1)); /* untouched neighbour */

    /* Push from the client into the server, then the server pulls from the client. */
    uint32_t psrc[2] = { 7, 8 }, pdst[2] = { 30, 2 };
    CHECK_RC(pdrt_push_blocks(d, pid, 2, psrc, 1, pdst, 2, 2000), PDRT_SUCCESS);
    CHECK(block_matches(p, 1, 30, 2, 7) && block_matches(p, 1, 2, 2, 8));
    uint32_t rsrc[3] = { 11, 12, 13 }, rdst[3] = { 50, 51, 49 };
    CHECK_RC(pdrt_pull_blocks(p, did, 2, rsrc, 1, rdst, 3, 2000), PDRT_SUCCESS);
    for (int i = 0; i < 3; i++) CHECK(block_matches(p, 1, rdst[i], 2, rsrc[i]));

    uint32_t ok[1] = { 0 }, big[1] = { 64 };
    CHECK_RC(pdrt_pull_blocks(d, pid, 77, ok, 2, ok, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, big, 2, ok, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 2, big, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 78, ok, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_pull_blocks(d, pid, 3, ok, 2, ok, 1, 2000), PDRT_PARAM_INVALID); /* block sizes differ */
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 2, ok, 0, 2000), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, NULL, 2, ok, 1, 2000), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 2, ok, 1, 0), PDRT_PARAM_INVALID);
    CHECK_RC(pdrt_pull_blocks(d, 4242, 1, ok, 2, ok, 1, 2000), PDRT_NOT_YET_LINK);

    /* Re-registered under the same id: the peer sees the new memory, not the old mapping. */
    CHECK_RC(pdrt_unregister_blocks(p, 1), PDRT_SUCCESS);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, ok, 2, ok, 1, 2000), PDRT_KV_CACHE_NOT_EXIST);
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    write_all(p, 1, 3);
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, src, 2, dst, 4, 2000), PDRT_SUCCESS);
    for (int i = 0; i < 4; i++) CHECK(block_matches(d, 2, dst[i], 3, src[i]));
    pdrt_link_info li = find_link(d, pid);
    CHECK(li.state == PDRT_LINK_LINKED && li.transfers_in_flight == 0);
}

static void test_transfers(int same_host) {
    current = same_host ? "transfers over shared memory" : "transfers over TCP";
    pdrt_ctx *p = make_ctx(71, "127.0.0.2");
    pdrt_ctx *d = make_ctx(72, NULL);
    if (!same_host) CHECK_RC(pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, 0), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(p, 3, NBLOCKS, BLOCK / 2), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(d, 2, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(link1(d, cluster(71, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    CHECK(find_link(d, 71).same_host == same_host);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 72, NULL));
    CHECK(find_link(p, 72).same_host == same_host);
    transfers(p, 71, d, 72);
    CHECK_RC(unlink1(d, 71, 0, 2000), PDRT_SUCCESS);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

/* ---- concurrency ---- */

typedef struct {
    pdrt_ctx *ctx;
    uint64_t peer, remote_cache, local_cache;
    uint32_t seed, base, src_base;
    int bad;
} stress_arg;

/* Repeated pulls of 8 blocks into a slice of the local cache that belongs to this thread. */
static void *stress_thread(void *arg) {
    stress_arg *a = arg;
    for (uint32_t round = 0; round < 40; round++) {
        uint32_t src[8], dst[8];
        for (uint32_t i = 0; i < 8; i++) {
            src[i] = a->src_base + (round * 7 + i * 5) % (NBLOCKS / 2);
            dst[i] = a->base + i;
        }
        if (pdrt_pull_blocks(a->ctx, a->peer, a->remote_cache, src, a->local_cache, dst, 8, 5000) != PDRT_SUCCESS) a->bad++;
        for (uint32_t i = 0; i < 8; i++)
            if (!block_matches(a->ctx, a->local_cache, dst[i], a->seed, src[i])) a->bad++;
    }
    return NULL;
}

static void test_parallel_pulls(int same_host) {
    current = same_host ? "parallel pulls, shared memory" : "parallel pulls, TCP (client and reverse pools)";
    pdrt_ctx *p = make_ctx(81, "127.0.0.2");
    pdrt_ctx *d = make_ctx(82, NULL);
    pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, same_host);
    pdrt_register_blocks(p, 1, NBLOCKS, BLOCK);
    pdrt_register_blocks(d, 2, NBLOCKS, BLOCK);
    write_all(p, 1, 4);
    write_all(d, 2, 5);
    CHECK_RC(link1(d, cluster(81, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    enum { T = 4 };
    pthread_t th[2 * T];
    stress_arg args[2 * T];
    /* D pulls P's blocks 0..31 into its own 0..31; P pulls D's 32..63 into its own 32..63: nobody
     * reads a block that a pull is writing. */
    for (int i = 0; i < T; i++) {
        uint32_t slice = 8 * (uint32_t)i;
        args[i] = (stress_arg){ .ctx = d, .peer = 81, .remote_cache = 1, .local_cache = 2, .seed = 4, .base = slice };
        args[T + i] = (stress_arg){ .ctx = p, .peer = 82, .remote_cache = 2, .local_cache = 1, .seed = 5,
                                    .base = 32 + slice, .src_base = 32 };
    }
    for (int i = 0; i < 2 * T; i++) pthread_create(&th[i], NULL, stress_thread, &args[i]);
    int bad = 0;
    for (int i = 0; i < 2 * T; i++) {
        pthread_join(th[i], NULL);
        bad += args[i].bad;
    }
    CHECK(bad == 0);
    CHECK(find_link(d, 81).transfers_in_flight == 0);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

void test_blocks(void) {
    test_blocks_local();
    test_transfers(0);
    test_transfers(1);
    test_parallel_pulls(0);
    test_parallel_pulls(1);
}
