/*
 * The authenticated link handshake: HMAC-SHA256 against RFC 4231, links between contexts with the
 * same, another or no cluster secret, and a raw client speaking the wire protocol to replay or
 * reflect proofs and to open data connections it has no proof for. The raw client uses the
 * runtime's private wire and proof helpers (src/), the rest the public ABI.
 */
#define _GNU_SOURCE
#include "testing.h"

#include "auth.h"
#include "hmac.h"
#include "wire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static const char SECRET[] = "0123456789abcdef-cluster-secret";
static const char OTHER[] = "0123456789abcdef-another-secret";

static pdrt_ctx *secret_ctx(uint64_t id, const char *ip, const char *secret) {
    pdrt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (secret != NULL) {
        cfg.link_secret = (const uint8_t *)secret;
        cfg.link_secret_len = (uint32_t)strlen(secret);
    }
    pdrt_ctx *ctx = NULL;
    int32_t rc = pdrt_create(id, ip ? PDRT_ROLE_PROMPT : PDRT_ROLE_DECODER, ip, 0, &cfg, &ctx);
    if (rc != PDRT_SUCCESS) {
        fprintf(stderr, "pdrt_create(%llu) = 0x%x\n", (unsigned long long)id, (unsigned)rc);
        exit(100);
    }
    return ctx;
}

static int hex_is(const uint8_t *got, const char *hex) {
    char s[2 * SHA256_BYTES + 1];
    for (int i = 0; i < SHA256_BYTES; i++) sprintf(s + 2 * i, "%02x", got[i]);
    return strncmp(s, hex, strlen(hex)) == 0; /* RFC 4231 case 5 lists a truncated MAC */
}

static void test_hmac_vectors(void) {
    current = "HMAC-SHA256 (RFC 4231) and SHA-256";
    uint8_t out[SHA256_BYTES];
    sha256_ctx s;
    sha256_init(&s);
    sha256_update(&s, "abc", 3);
    sha256_final(&s, out);
    CHECK(hex_is(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    uint8_t k1[20], k3[20], k4[25], k6[131], d3[50], d4[50];
    memset(k1, 0x0b, sizeof k1);
    hmac_sha256(k1, sizeof k1, "Hi There", 8, out);
    CHECK(hex_is(out, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
    hmac_sha256((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28, out);
    CHECK(hex_is(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    memset(k3, 0xaa, sizeof k3);
    memset(d3, 0xdd, sizeof d3);
    hmac_sha256(k3, sizeof k3, d3, sizeof d3, out);
    CHECK(hex_is(out, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"));
    for (int i = 0; i < 25; i++) k4[i] = (uint8_t)(i + 1);
    memset(d4, 0xcd, sizeof d4);
    hmac_sha256(k4, sizeof k4, d4, sizeof d4, out);
    CHECK(hex_is(out, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"));
    uint8_t k5[20];
    memset(k5, 0x0c, sizeof k5);
    hmac_sha256(k5, sizeof k5, "Test With Truncation", 20, out);
    CHECK(hex_is(out, "a3b6167473100ee06e0c796c2955552b"));
    memset(k6, 0xaa, sizeof k6);
    hmac_sha256(k6, sizeof k6, "Test Using Larger Than Block-Size Key - Hash Key First", 54, out);
    CHECK(hex_is(out, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
    const char *d7 = "This is a test using a larger than block-size key and a larger than block-size data. "
                     "The key needs to be hashed before being used by the HMAC algorithm.";
    hmac_sha256(k6, sizeof k6, d7, strlen(d7), out);
    CHECK(hex_is(out, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"));
    /* Incremental updates give the one-shot result. */
    hmac_ctx h;
    uint8_t split[SHA256_BYTES];
    hmac_init(&h, k6, sizeof k6);
    hmac_update(&h, d7, 10);
    hmac_update(&h, d7 + 10, strlen(d7) - 10);
    hmac_final(&h, split);
    CHECK(memcmp(split, out, sizeof out) == 0);
    CHECK(ct_equal(split, out, sizeof out));
    split[31] ^= 1;
    CHECK(!ct_equal(split, out, sizeof out));
}

static void test_config_checks(void) {
    current = "pdrt_config checks";
    pdrt_ctx *bad = NULL;
    pdrt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.link_secret = (const uint8_t *)"short";
    cfg.link_secret_len = 5;
    CHECK_RC(pdrt_create(1, 0, "127.0.0.2", 0, &cfg, &bad), PDRT_PARAM_INVALID);
    cfg.link_secret = NULL;
    cfg.link_secret_len = 32;
    CHECK_RC(pdrt_create(1, 0, "127.0.0.2", 0, &cfg, &bad), PDRT_PARAM_INVALID);
    cfg.link_secret_len = 0;
    cfg.reserved = 1;
    CHECK_RC(pdrt_create(1, 0, "127.0.0.2", 0, &cfg, &bad), PDRT_PARAM_INVALID);
    CHECK(bad == NULL);
}

/* Pull, push, and a pull by the server (over a reverse connection, or shared memory). */
static void transfers_ok(pdrt_ctx *p, uint64_t pid, pdrt_ctx *d, uint64_t did) {
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    CHECK_RC(pdrt_register_blocks(d, 2, NBLOCKS, BLOCK), PDRT_SUCCESS);
    write_all(p, 1, 1);
    write_all(d, 2, 2);
    uint32_t src[3] = { 5, 1, 60 }, dst[3] = { 0, 9, 3 };
    CHECK_RC(pdrt_pull_blocks(d, pid, 1, src, 2, dst, 3, 2000), PDRT_SUCCESS);
    for (int i = 0; i < 3; i++) CHECK(block_matches(d, 2, dst[i], 1, src[i]));
    uint32_t psrc[1] = { 7 }, pdst[1] = { 30 };
    CHECK_RC(pdrt_push_blocks(d, pid, 2, psrc, 1, pdst, 1, 2000), PDRT_SUCCESS);
    CHECK(block_matches(p, 1, 30, 2, 7));
    uint32_t rsrc[1] = { 11 }, rdst[1] = { 50 };
    CHECK_RC(pdrt_pull_blocks(p, did, 2, rsrc, 1, rdst, 1, 2000), PDRT_SUCCESS);
    CHECK(block_matches(p, 1, 50, 2, 11));
}

static void test_good_secret(int fastpath) {
    current = fastpath ? "same secret, same-host path" : "same secret, TCP path";
    pdrt_ctx *p = secret_ctx(201, "127.0.0.2", SECRET), *d = secret_ctx(202, NULL, SECRET);
    CHECK_RC(pdrt_set_option(d, PDRT_OPT_SAME_HOST_FASTPATH, fastpath), PDRT_SUCCESS);
    CHECK_RC(pdrt_set_option(p, PDRT_OPT_SAME_HOST_FASTPATH, fastpath), PDRT_SUCCESS);
    CHECK_RC(link1(d, cluster(201, "127.0.0.2", port_of(p)), 2000), PDRT_SUCCESS);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 202, NULL));
    CHECK(find_link(d, 201).same_host == (uint16_t)fastpath);
    transfers_ok(p, 201, d, 202);
    /* Another context with the same id and secret proves itself, then learns the server still
     * holds that link: ALREADY_LINK, told apart from a failure, after the proofs. */
    pdrt_ctx *d2 = secret_ctx(202, NULL, SECRET);
    CHECK_RC(link1(d2, cluster(201, "127.0.0.2", port_of(p)), 2000), PDRT_ALREADY_LINK);
    pdrt_destroy(d2);
    CHECK_RC(unlink1(d, 201, 0, 2000), PDRT_SUCCESS);
    pdrt_destroy(d);
    pdrt_destroy(p);
}

/* What a rogue client gets: LINK_FAILED, no link on the server, and the server's cache unchanged. */
static void rogue_refused(const char *name, const char *server_secret, const char *client_secret) {
    current = name;
    pdrt_ctx *p = secret_ctx(211, "127.0.0.2", server_secret), *d = secret_ctx(212, NULL, client_secret);
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    write_all(p, 1, 1);
    CHECK_RC(link1(d, cluster(211, "127.0.0.2", port_of(p)), 2000), PDRT_LINK_FAILED);
    uint32_t n = 0, total = 0;
    pdrt_link_info li[4];
    CHECK_RC(pdrt_list_links(p, li, 4, &n, &total), PDRT_SUCCESS);
    CHECK(total == 0);
    CHECK_RC(pdrt_list_links(d, li, 4, &n, &total), PDRT_SUCCESS);
    CHECK(total == 0);
    CHECK_RC(pdrt_register_blocks(d, 2, NBLOCKS, BLOCK), PDRT_SUCCESS);
    uint32_t b[1] = { 3 };
    CHECK_RC(pdrt_pull_blocks(d, 211, 1, b, 2, b, 1, 500), PDRT_NOT_YET_LINK);
    CHECK_RC(pdrt_push_blocks(d, 211, 2, b, 1, b, 1, 500), PDRT_NOT_YET_LINK);
    for (uint32_t i = 0; i < NBLOCKS; i++) CHECK(block_matches(p, 1, i, 1, i));
    pdrt_destroy(d);
    pdrt_destroy(p);
}

/* ---- a raw client ---- */

static int raw_connect(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = { .tv_sec = 3 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int raw_send(int fd, const uint8_t *b, size_t n) {
    return send(fd, b, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

/* Reads exactly n bytes; -1 on EOF, error or the 3 s receive timeout. */
static int raw_recv(int fd, uint8_t *b, size_t n) {
    size_t have = 0;
    while (have < n) {
        ssize_t r = recv(fd, b + have, n - have, 0);
        if (r <= 0) return -1;
        have += (size_t)r;
    }
    return 0;
}

/* Sends an authenticated control HELLO from client id 221 with nonce; reads the WELCOME. */
static int raw_hello(int fd, uint64_t server_id, const uint8_t nonce[AUTH_NONCE], wire_welcome *w) {
    wire_hello h = { .version = WIRE_VERSION, .kind = CONN_CTL, .client_id = 221, .server_id = server_id,
                     .role = PDRT_ROLE_DECODER, .flags = HELLO_FORCE_LINK | HELLO_AUTH };
    memcpy(h.nonce, nonce, AUTH_NONCE);
    uint8_t b[HELLO_SIZE];
    wire_put_hello(b, &h);
    if (raw_send(fd, b, sizeof b) != 0 || raw_recv(fd, b, WELCOME_SIZE) != 0) return -1;
    return wire_get_welcome(b, w);
}

static int raw_confirm(int fd, const uint8_t mac[AUTH_MAC], wire_ack *ack) {
    wire_confirm c = { 0 };
    memcpy(c.mac, mac, AUTH_MAC);
    uint8_t b[CONFIRM_SIZE];
    wire_put_confirm(b, &c);
    if (raw_send(fd, b, CONFIRM_SIZE) != 0 || raw_recv(fd, b, ACK_SIZE) != 0) return -1;
    return wire_get_ack(b, ack);
}

static void test_replay_and_reflection(void) {
    current = "replayed and reflected proofs";
    const uint8_t *key = (const uint8_t *)SECRET;
    size_t klen = strlen(SECRET);
    pdrt_ctx *p = secret_ctx(220, "127.0.0.2", SECRET);
    CHECK_RC(pdrt_register_blocks(p, 1, NBLOCKS, BLOCK), PDRT_SUCCESS);
    write_all(p, 1, 1);
    uint16_t port = port_of(p);
    uint8_t nonce[AUTH_NONCE];
    memset(nonce, 0x5a, sizeof nonce);

    /* A reflected proof: the server's own WELCOME MAC sent back as the client's. */
    int fd = raw_connect(port);
    wire_welcome w1;
    CHECK(fd >= 0 && raw_hello(fd, 220, nonce, &w1) == 0);
    CHECK(w1.status == PDRT_SUCCESS && (w1.flags & WELCOME_AUTH));
    wire_ack ack;
    CHECK(raw_confirm(fd, w1.mac, &ack) != 0); /* closed without an ACK */
    close(fd);

    /* An honest proof over the first WELCOME's nonce, replayed into a second handshake (the same
     * client nonce, but the server picks a new one). */
    auth_input in = { .client_id = 221, .server_id = 220, .session = w1.session };
    memcpy(in.client_nonce, nonce, AUTH_NONCE);
    memcpy(in.server_nonce, w1.nonce, AUTH_NONCE);
    uint8_t old_mac[AUTH_MAC];
    auth_mac(key, klen, AUTH_LINK_CLIENT, &in, old_mac);
    fd = raw_connect(port);
    wire_welcome w2;
    CHECK(fd >= 0 && raw_hello(fd, 220, nonce, &w2) == 0);
    CHECK(memcmp(w2.nonce, w1.nonce, AUTH_NONCE) != 0);
    CHECK(raw_confirm(fd, old_mac, &ack) != 0);
    close(fd);

    /* A raw data connection guessing nothing but ids and no proof: refused. */
    fd = raw_connect(port);
    wire_hello dh = { .version = WIRE_VERSION, .kind = CONN_DATA, .client_id = 221, .server_id = 220,
                      .session = w2.session };
    uint8_t b[HELLO_SIZE];
    wire_put_hello(b, &dh);
    wire_welcome dw;
    CHECK(raw_send(fd, b, sizeof b) == 0 && raw_recv(fd, b, WELCOME_SIZE) == 0 && wire_get_welcome(b, &dw) == 0 &&
          dw.status != PDRT_SUCCESS);
    close(fd);
    uint32_t n = 0, total = 0;
    pdrt_link_info li[4];
    CHECK_RC(pdrt_list_links(p, li, 4, &n, &total), PDRT_SUCCESS);
    CHECK(total == 0);

    /* The same raw client with the secret links: the refusals above were about the proofs. */
    fd = raw_connect(port);
    wire_welcome w3;
    CHECK(fd >= 0 && raw_hello(fd, 220, nonce, &w3) == 0);
    memcpy(in.server_nonce, w3.nonce, AUTH_NONCE);
    in.session = w3.session;
    CHECK(auth_verify(key, klen, AUTH_LINK_SERVER, &in, w3.mac));
    uint8_t mac[AUTH_MAC];
    auth_mac(key, klen, AUTH_LINK_CLIENT, &in, mac);
    CHECK(raw_confirm(fd, mac, &ack) == 0 && ack.status == PDRT_SUCCESS);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LINKED, 221, NULL));
    uint8_t link_key[AUTH_MAC];
    auth_mac(key, klen, AUTH_LINK_KEY, &in, link_key);

    /* On that link, a data connection with a proof under the wrong key is refused; with the link
     * key it is served. */
    for (int good = 0; good <= 1; good++) {
        int dfd = raw_connect(port);
        wire_hello h = { .version = WIRE_VERSION, .kind = CONN_DATA, .client_id = 221, .server_id = 220,
                         .session = w3.session, .flags = HELLO_AUTH };
        memset(h.nonce, good ? 0x11 : 0x22, AUTH_NONCE);
        auth_input din;
        auth_data_input(&din, h.nonce, 221, 220, w3.session, CONN_DATA);
        auth_mac(good ? link_key : key, AUTH_MAC, AUTH_DATA_HELLO, &din, h.mac);
        wire_put_hello(b, &h);
        CHECK(raw_send(dfd, b, sizeof b) == 0 && raw_recv(dfd, b, WELCOME_SIZE) == 0 &&
              wire_get_welcome(b, &dw) == 0);
        CHECK((dw.status == PDRT_SUCCESS) == good);
        if (good) CHECK(auth_verify(link_key, AUTH_MAC, AUTH_DATA_WELCOME, &din, dw.mac));
        close(dfd);
    }
    close(fd);
    CHECK(wait_event(p, PDRT_EVENT_PEER_LOST, 221, NULL));
    for (uint32_t i = 0; i < NBLOCKS; i++) CHECK(block_matches(p, 1, i, 1, i));
    pdrt_destroy(p);
}

void test_auth(void) {
    test_hmac_vectors();
    test_config_checks();
    test_good_secret(0);
    test_good_secret(1);
    rogue_refused("wrong secret", SECRET, OTHER);
    rogue_refused("no secret against a secret", SECRET, NULL);
    rogue_refused("a secret against none", NULL, SECRET);
    test_replay_and_reflection();
}
