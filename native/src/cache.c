/*
 * KV block caches: zero-filled blocks in a memfd, so a same-host peer can map them through
 * /proc/<pid>/fd/<fd>, and no name is left behind in /dev/shm when the process is killed.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static cache *cache_find(pdrt_ctx *ctx, uint64_t id) {
    for (cache *c = ctx->caches; c != NULL; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

cache *cache_get(pdrt_ctx *ctx, uint64_t id) {
    cache *c = cache_find(ctx, id);
    if (c != NULL) c->refs++;
    return c;
}

static void cache_free(cache *c) {
    if (c->base != NULL) munmap(c->base, c->size);
    if (c->fd >= 0) close(c->fd);
    free(c);
}

void cache_put(pdrt_ctx *ctx, cache *c) {
    (void)ctx;
    if (--c->refs == 0) cache_free(c);
}

void cache_free_all(pdrt_ctx *ctx) {
    while (ctx->caches != NULL) {
        cache *c = ctx->caches;
        ctx->caches = c->next;
        cache_put(ctx, c);
    }
}

int32_t cache_check_blocks(const cache *c, const uint32_t *blocks, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (blocks[i] >= c->num_blocks) return PDRT_KV_CACHE_NOT_EXIST;
    return PDRT_SUCCESS;
}

static int32_t cache_alloc(uint64_t id, uint32_t num_blocks, uint32_t block_bytes, cache **out) {
    cache *c = calloc(1, sizeof *c);
    if (c == NULL) return PDRT_OUT_OF_MEMORY;
    c->fd = -1;
    c->id = id;
    c->num_blocks = num_blocks;
    c->block_bytes = block_bytes;
    c->size = SHM_HDR_BYTES + (size_t)num_blocks * block_bytes;
    c->gen = random_u64();
    c->refs = 1;
    c->fd = memfd_create("pdrt-cache", MFD_CLOEXEC);
    if (c->fd < 0 || ftruncate(c->fd, (off_t)c->size) != 0) goto oom;
    /* Commit the memory now: a later page fault on an exhausted tmpfs would be a SIGBUS. */
    if (fallocate(c->fd, 0, 0, (off_t)c->size) != 0 && errno != EOPNOTSUPP) goto oom;
    c->base = mmap(NULL, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
    if (c->base == MAP_FAILED) {
        c->base = NULL;
        goto oom;
    }
    c->blocks = c->base + SHM_HDR_BYTES;
    shm_hdr *h = (shm_hdr *)c->base;
    h->magic = SHM_MAGIC;
    h->cache_id = id;
    h->gen = c->gen;
    h->num_blocks = num_blocks;
    h->block_bytes = block_bytes;
    __atomic_store_n(&h->valid, 1u, __ATOMIC_RELEASE);
    *out = c;
    return PDRT_SUCCESS;
oom:
    cache_free(c);
    return PDRT_OUT_OF_MEMORY;
}

int32_t pdrt_register_blocks(pdrt_ctx *ctx, uint64_t cache_id, uint32_t num_blocks, uint32_t block_bytes) {
    if (ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    int32_t rc = PDRT_PARAM_INVALID;
    cache *c = NULL;
    if (num_blocks == 0 || block_bytes == 0) goto out;
    pthread_mutex_lock(&ctx->mu);
    int exists = cache_find(ctx, cache_id) != NULL;
    pthread_mutex_unlock(&ctx->mu);
    if (exists) goto out;
    /* Allocated outside the lock (committing memory takes a while), then inserted if still new. */
    rc = cache_alloc(cache_id, num_blocks, block_bytes, &c);
    if (rc != PDRT_SUCCESS) goto out;
    pthread_mutex_lock(&ctx->mu);
    if (cache_find(ctx, cache_id) != NULL) {
        cache_put(ctx, c);
        rc = PDRT_PARAM_INVALID;
    } else {
        c->next = ctx->caches;
        ctx->caches = c;
    }
    pthread_mutex_unlock(&ctx->mu);
out:
    ctx_leave(ctx);
    return rc;
}

int32_t pdrt_unregister_blocks(pdrt_ctx *ctx, uint64_t cache_id) {
    if (ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    int32_t rc = PDRT_KV_CACHE_NOT_EXIST;
    pthread_mutex_lock(&ctx->mu);
    for (cache **pp = &ctx->caches; *pp != NULL; pp = &(*pp)->next) {
        cache *c = *pp;
        if (c->id != cache_id) continue;
        *pp = c->next;
        /* Same-host peers holding a mapping see this and stop using it. */
        __atomic_store_n(&((shm_hdr *)c->base)->valid, 0u, __ATOMIC_RELEASE);
        cache_put(ctx, c);
        rc = PDRT_SUCCESS;
        break;
    }
    pthread_mutex_unlock(&ctx->mu);
    ctx_leave(ctx);
    return rc;
}

/* Shared checks of write/read: the cache, the block list, and the buffer length. */
static int32_t local_copy(pdrt_ctx *ctx, uint64_t cache_id, const uint32_t *blocks, uint32_t n, uint8_t *buf,
                          uint64_t len, int into_cache) {
    if (blocks == NULL || buf == NULL || n == 0 || ctx_enter(ctx) != 0) return PDRT_PARAM_INVALID;
    pthread_mutex_lock(&ctx->mu);
    cache *c = cache_get(ctx, cache_id);
    pthread_mutex_unlock(&ctx->mu);
    int32_t rc = PDRT_KV_CACHE_NOT_EXIST;
    if (c != NULL) {
        rc = (uint64_t)n * c->block_bytes != len ? PDRT_PARAM_INVALID : cache_check_blocks(c, blocks, n);
        for (uint32_t i = 0; rc == PDRT_SUCCESS && i < n; i++) {
            uint8_t *blk = c->blocks + (size_t)blocks[i] * c->block_bytes;
            uint8_t *b = buf + (size_t)i * c->block_bytes;
            if (into_cache)
                memcpy(blk, b, c->block_bytes);
            else
                memcpy(b, blk, c->block_bytes);
        }
        pthread_mutex_lock(&ctx->mu);
        cache_put(ctx, c);
        pthread_mutex_unlock(&ctx->mu);
    }
    ctx_leave(ctx);
    return rc;
}

int32_t pdrt_write_blocks(pdrt_ctx *ctx, uint64_t cache_id, const uint32_t *blocks, uint32_t n,
                          const uint8_t *src, uint64_t src_len) {
    return local_copy(ctx, cache_id, blocks, n, (uint8_t *)src, src_len, 1);
}

int32_t pdrt_read_blocks(pdrt_ctx *ctx, uint64_t cache_id, const uint32_t *blocks, uint32_t n, uint8_t *dst,
                         uint64_t dst_len) {
    return local_copy(ctx, cache_id, blocks, n, dst, dst_len, 0);
}
