/* Little-endian encoding of the wire messages (layout in wire.h). */
#include "wire.h"

void wire_put_hello(uint8_t *b, const wire_hello *m) {
    memset(b, 0, HELLO_SIZE);
    put32(b, WIRE_MAGIC);
    put32(b + 4, m->version);
    put32(b + 8, m->kind);
    put32(b + 12, m->role);
    put64(b + 16, m->client_id);
    put64(b + 24, m->server_id);
    put64(b + 32, m->session);
    put32(b + 40, m->flags);
    put32(b + 44, m->pid);
    put32(b + 48, m->probe_fd);
    put64(b + 52, m->probe_token);
    memcpy(b + 60, m->boot_id, 36); /* 36 characters of text, no NUL on the wire */
    memcpy(b + 96, m->nonce, WIRE_NONCE);
    memcpy(b + 128, m->mac, WIRE_MAC);
}

int wire_get_hello(const uint8_t *b, wire_hello *m) {
    if (get32(b) != WIRE_MAGIC) return -1;
    memset(m, 0, sizeof *m);
    m->version = get32(b + 4);
    m->kind = get32(b + 8);
    m->role = get32(b + 12);
    m->client_id = get64(b + 16);
    m->server_id = get64(b + 24);
    m->session = get64(b + 32);
    m->flags = get32(b + 40);
    m->pid = get32(b + 44);
    m->probe_fd = get32(b + 48);
    m->probe_token = get64(b + 52);
    memcpy(m->boot_id, b + 60, 36);
    m->boot_id[36] = '\0';
    memcpy(m->nonce, b + 96, WIRE_NONCE);
    memcpy(m->mac, b + 128, WIRE_MAC);
    return 0;
}

void wire_put_welcome(uint8_t *b, const wire_welcome *m) {
    memset(b, 0, WELCOME_SIZE);
    put32(b, WIRE_MAGIC);
    put32(b + 4, (uint32_t)m->status);
    put64(b + 8, m->server_id);
    put64(b + 16, m->session);
    put32(b + 24, m->flags);
    put32(b + 28, m->pid);
    put32(b + 32, m->probe_fd);
    memcpy(b + 40, m->nonce, WIRE_NONCE);
    memcpy(b + 72, m->mac, WIRE_MAC);
}

int wire_get_welcome(const uint8_t *b, wire_welcome *m) {
    if (get32(b) != WIRE_MAGIC) return -1;
    m->status = (int32_t)get32(b + 4);
    m->server_id = get64(b + 8);
    m->session = get64(b + 16);
    m->flags = get32(b + 24);
    m->pid = get32(b + 28);
    m->probe_fd = get32(b + 32);
    memcpy(m->nonce, b + 40, WIRE_NONCE);
    memcpy(m->mac, b + 72, WIRE_MAC);
    return 0;
}

void wire_put_confirm(uint8_t *b, const wire_confirm *m) {
    memset(b, 0, CONFIRM_SIZE);
    put32(b, WIRE_MAGIC);
    put32(b + 4, m->flags);
    put64(b + 8, m->token);
    memcpy(b + 16, m->mac, WIRE_MAC);
}

int wire_get_confirm(const uint8_t *b, wire_confirm *m) {
    if (get32(b) != WIRE_MAGIC) return -1;
    m->flags = get32(b + 4);
    m->token = get64(b + 8);
    memcpy(m->mac, b + 16, WIRE_MAC);
    return 0;
}

void wire_put_ack(uint8_t *b, const wire_ack *m) {
    memset(b, 0, ACK_SIZE);
    put32(b, WIRE_MAGIC);
    put32(b + 4, (uint32_t)m->status);
    put32(b + 8, m->same_host);
}

int wire_get_ack(const uint8_t *b, wire_ack *m) {
    if (get32(b) != WIRE_MAGIC) return -1;
    m->status = (int32_t)get32(b + 4);
    m->same_host = get32(b + 8);
    return 0;
}

void wire_put_ctl(uint8_t *b, const wire_ctl *m) {
    memset(b, 0, CTL_SIZE);
    put32(b, WIRE_MAGIC);
    put32(b + 4, m->type);
    put64(b + 8, m->arg);
}

int wire_get_ctl(const uint8_t *b, wire_ctl *m) {
    if (get32(b) != WIRE_MAGIC) return -1;
    m->type = get32(b + 4);
    m->arg = get64(b + 8);
    return 0;
}

void wire_put_req(uint8_t *b, const wire_req *m) {
    memset(b, 0, REQ_SIZE);
    put32(b, WIRE_MAGIC);
    put32(b + 4, m->op);
    put32(b + 8, m->n);
    put32(b + 12, m->block_bytes);
    put64(b + 16, m->cache_id);
    put32(b + 24, m->timeout_ms);
}

int wire_get_req(const uint8_t *b, wire_req *m) {
    if (get32(b) != WIRE_MAGIC) return -1;
    m->op = get32(b + 4);
    m->n = get32(b + 8);
    m->block_bytes = get32(b + 12);
    m->cache_id = get64(b + 16);
    m->timeout_ms = get32(b + 24);
    return 0;
}

void wire_put_resp(uint8_t *b, const wire_resp *m) {
    memset(b, 0, RESP_SIZE);
    put32(b, WIRE_MAGIC);
    put32(b + 4, (uint32_t)m->status);
    put32(b + 8, m->num_blocks);
    put32(b + 12, m->block_bytes);
    put32(b + 16, m->fd);
    put64(b + 24, m->gen);
}

int wire_get_resp(const uint8_t *b, wire_resp *m) {
    if (get32(b) != WIRE_MAGIC) return -1;
    m->status = (int32_t)get32(b + 4);
    m->num_blocks = get32(b + 8);
    m->block_bytes = get32(b + 12);
    m->fd = get32(b + 16);
    m->gen = get64(b + 24);
    return 0;
}
