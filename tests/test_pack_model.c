/* The modeled chunk coding of packed traces (format/pack_model.c, doc/trace-format.md "Modeled
 * frames") on its own: record bytes in, payload out, the same bytes back; records it cannot model
 * refused; and any damage to a payload refused cleanly, never a crash or a read out of bounds
 * (run it under ASan). The trace-level tests (frames in files, the reader's messages) are in
 * test_format.c. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "mtrace/trace_format.h"
#include "pack_model.h"
#include "test_util.h"

#define RECORDS_MAX (MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE)

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static uint64_t below(uint64_t n)
{
    return rnd() % n;
}

/* A chunk of records the way a program makes them: blocks allocated and freed in a heap whose
 * allocator hands out the latest free block of a size first, so that the model's references are
 * taken; with every call op, NULL results, flags, stack ids and every event kind mixed in. Stops
 * when `limit` bytes are used. Pointer fields in the syntax of trace format `version`. */
static size_t heap_chunk(uint8_t *buf, size_t limit, uint64_t seed, unsigned version)
{
    rng_state = seed | 1;
    mt_enc_t e = { 0, 0 };
    uint64_t live[512], live_usable[512], freed[64], freed_usable[64], top = 0x555555560000ull, t = 1000;
    size_t nlive = 0, nfreed = 0;
    uint8_t *p = buf;
    while ((size_t)(p - buf) + MT_MAX_CALL_RECORD + 300 < limit) {
        t += below(16) ? below(300) : (uint64_t) - (int64_t)below(100);
        const unsigned kind = (unsigned)below(100);
        const uint8_t ext = below(8) ? 0 : (uint8_t)below(4);
        const uint32_t stack = (uint32_t)(1 + below(50));
        if (kind < 40 && nlive < 512) { /* an allocation */
            static const unsigned ops[] = { MT_OP_MALLOC,         MT_OP_MALLOC,        MT_OP_CALLOC, MT_OP_MEMALIGN,
                                            MT_OP_POSIX_MEMALIGN, MT_OP_ALIGNED_ALLOC, MT_OP_VALLOC, MT_OP_PVALLOC };
            const unsigned op = ops[below(8)];
            const uint64_t size = below(4) ? 16 * (1 + below(8)) : below(100000);
            const uint64_t count = op == MT_OP_CALLOC ? 1 + below(4) : 0;
            const uint64_t requested = op == MT_OP_CALLOC ? count * size : size;
            const uint64_t usable = requested < 24 ? 24 : ((requested + 8 + 15) & ~15ull) - 8;
            if (below(50) == 0) { /* out of memory */
                p = mt_enc_call(&e, p, version, op | MT_RF_NULL, ext, t, 0, op == MT_OP_CALLOC ? count : 64, size,
                                op == MT_OP_POSIX_MEMALIGN ? ENOMEM : 0, 0, stack);
                continue;
            }
            uint64_t r = 0;
            for (size_t i = nfreed; i-- > 0;) /* the latest free of this size, if any */
                if (freed_usable[i] == usable) {
                    r = freed[i];
                    memmove(&freed[i], &freed[i + 1], (nfreed - i - 1) * sizeof *freed);
                    memmove(&freed_usable[i], &freed_usable[i + 1], (nfreed - i - 1) * sizeof *freed);
                    nfreed--;
                    break;
                }
            if (!r) {
                r = top;
                top += usable + 8;
            }
            const unsigned b0 = op | (below(30) ? 0 : MT_RF_MMAPPED);
            const uint64_t n1 = op == MT_OP_CALLOC ? count
                                : (op == MT_OP_MEMALIGN || op == MT_OP_POSIX_MEMALIGN || op == MT_OP_ALIGNED_ALLOC)
                                    ? 64
                                    : size;
            p = mt_enc_call(&e, p, version, b0, ext, t, 0, n1, size, r, (int64_t)(usable - requested), stack);
            live[nlive] = r;
            live_usable[nlive++] = usable;
        } else if (kind < 75 && nlive) { /* a free, of a young block mostly */
            const size_t i = below(2) ? nlive - 1 - below(nlive < 4 ? nlive : 4) : below(nlive);
            p = mt_enc_call(&e, p, version, MT_OP_FREE, ext & MT_XF_STACK, t, live[i], 0, 0, 0, 0, stack);
            if (nfreed == 64) {
                memmove(freed, freed + 1, 63 * sizeof *freed);
                memmove(freed_usable, freed_usable + 1, 63 * sizeof *freed);
                nfreed--;
            }
            freed[nfreed] = live[i];
            freed_usable[nfreed++] = live_usable[i];
            live[i] = live[--nlive];
            live_usable[i] = live_usable[nlive];
        } else if (kind < 85 && nlive) { /* realloc or reallocarray: in place, moved, or to NULL */
            const size_t i = below(nlive);
            const unsigned op = below(4) ? MT_OP_REALLOC : MT_OP_REALLOCARRAY;
            const uint64_t size = below(5000), count = op == MT_OP_REALLOCARRAY ? 1 + below(3) : 0;
            const uint64_t requested = count ? count * size : size;
            if (below(20) == 0) {
                p = mt_enc_call(&e, p, version, op | MT_RF_NULL, ext, t, live[i], count ? count : size, size, 0, 0,
                                stack);
                continue;
            }
            uint64_t r = live[i];
            if (below(2)) {
                r = top;
                top += requested + 64;
            }
            p = mt_enc_call(&e, p, version, op, ext, t, live[i], count ? count : size, size, r, 40, stack);
            live[i] = r;
        } else if (kind < 88) {
            p = mt_enc_call(&e, p, version, MT_OP_FREE, 0, t, 0, 0, 0, 0, 0, 0); /* free(NULL) */
        } else if (kind < 90) {
            p = mt_enc_call(&e, p, version, MT_OP_REALLOC, 0, t, 0, 100, 100, top, 8, 0); /* realloc(NULL, n) */
            top += 128;
        } else if (kind < 92) {
            p = mt_enc_call(&e, p, version, MT_OP_USABLE_SIZE, ext & MT_XF_STACK, t, nlive ? live[0] : rnd(),
                            below(1000), 0, 0, 0, stack);
        } else if (kind < 93) {
            p = mt_enc_call(&e, p, version, MT_OP_MALLOPT, 0, t, 0, (uint64_t)-2, (uint64_t)(int64_t)-5, 1, 0, 0);
        } else if (kind < 95) {
            p = mt_enc_call(&e, p, version, MT_OP_FREE, 0, t, rnd(), 0, 0, 0, 0, 0); /* a block of an earlier chunk */
        } else { /* an event of any kind, payload of varints or bytes */
            uint8_t payload[256];
            const size_t len = below(4) ? below(12) : below(256);
            for (size_t i = 0; i < len; i++)
                payload[i] = (uint8_t)rnd();
            p = mt_enc_event(&e, p, MT_FIRST_EVENT + (unsigned)below(MT_EV_LOST - MT_FIRST_EVENT + 1), t, payload, len);
        }
    }
    return (size_t)(p - buf);
}

static uint8_t *payload_buf(void)
{
    uint8_t *b = malloc(ZSTD_compressBound(MT_CHUNK_SIZE));
    ck_assert_ptr_nonnull(b);
    return b;
}

static long encode_ok(mt_pack_model_t *m, const uint8_t *rec, size_t n, int level, uint8_t *out)
{
    const long z = mt_pack_model_encode(m, rec, n, level, out, ZSTD_compressBound(MT_CHUNK_SIZE));
    ck_assert_msg(z > 0, "encode of %zu record bytes: %ld", n, z);
    return z;
}

static void decode_equal(mt_pack_model_t *m, const uint8_t *payload, size_t len, const uint8_t *rec, size_t n)
{
    uint8_t *out = malloc(RECORDS_MAX);
    size_t got = 0, at = 0;
    const char *why = "";
    const int rc = mt_pack_model_decode(m, payload, len, out, RECORDS_MAX, &got, &at, &why);
    ck_assert_msg(rc == 0, "decode: %d at %zu: %s", rc, at, why);
    ck_assert_uint_eq(got, n);
    ck_assert_mem_eq(out, rec, n);
    free(out);
}

/* In both versions' syntax: a version 1 trace is packed as it is. */
START_TEST(round_trip_heap_chunks)
{
    const unsigned version = (unsigned)_i;
    mt_pack_model_t *enc = mt_pack_model_new(version), *dec = mt_pack_model_new(version);
    uint8_t *rec = malloc(RECORDS_MAX), *payload = payload_buf(), *payload2 = payload_buf();
    for (uint64_t seed = 1; seed <= 20; seed++) {
        const size_t n = heap_chunk(rec, seed == 1 ? 200 : RECORDS_MAX, seed, version);
        const long z = encode_ok(enc, rec, n, seed % 2 ? 3 : 19, payload);
        decode_equal(dec, payload, (size_t)z, rec, n);
        if (seed > 2) { /* smaller than plain zstd of the same bytes: the references are taken */
            const size_t plain = ZSTD_compress(payload2, ZSTD_compressBound(MT_CHUNK_SIZE), rec, n, seed % 2 ? 3 : 19);
            ck_assert_msg(!ZSTD_isError(plain) && (size_t)z < plain, "modeled %ld, plain %zu", z, plain);
        }
    }
    /* no records: a payload of empty streams */
    const long z = encode_ok(enc, rec, 0, 3, payload);
    ck_assert_int_eq(z, MT_PACK_MODEL_STREAMS);
    decode_equal(dec, payload, (size_t)z, rec, 0);
    free(rec);
    free(payload);
    free(payload2);
    mt_pack_model_free(enc);
    mt_pack_model_free(dec);
}
END_TEST

/* Bytes a reader accepts but the model does not write back the same: a chunk of them is refused,
 * and the packer writes it as a plain zstd frame. */
START_TEST(refuses_what_it_cannot_model)
{
    mt_pack_model_t *m = mt_pack_model_new(MT_TRACE_VERSION);
    uint8_t *payload = payload_buf();
    static const uint8_t long_varint[] = { MT_OP_MALLOC, 0x81, 0x00, 0x10, 0x02, 0x00 }; /* time 1 in 2 bytes */
    static const uint8_t zero_op[] = { MT_OP_FREE, 0x01, 0x02, 0x00, 0x01, 0x02 };
    static const uint8_t undefined_op[] = { 13, 0x01, 0x02 };
    static const uint8_t cut[] = { MT_OP_MALLOC, 0x01, 0x10 };
    static const uint8_t cut_event[] = { MT_EV_MARK, 0x01, 0x05, 'a', 'b' };
    const struct {
        const uint8_t *p;
        size_t n;
    } cases[] = {
        { long_varint, sizeof long_varint },   { zero_op, sizeof zero_op },
        { undefined_op, sizeof undefined_op }, { cut, sizeof cut },
        { cut_event, sizeof cut_event },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_int_eq(mt_pack_model_encode(m, cases[i].p, cases[i].n, 3, payload, ZSTD_compressBound(MT_CHUNK_SIZE)),
                         0);
    /* a payload that would not fit in the room given */
    uint8_t rec[4096];
    const size_t n = heap_chunk(rec, sizeof rec, 7, MT_TRACE_VERSION);
    ck_assert_int_eq(mt_pack_model_encode(m, rec, n, 3, payload, 20), 0);
    free(payload);
    mt_pack_model_free(m);
}
END_TEST

static int decode_any(mt_pack_model_t *m, const uint8_t *payload, size_t len, const char **why, size_t *at)
{
    uint8_t *out = malloc(RECORDS_MAX);
    size_t got = 0;
    *why = NULL;
    const int rc = mt_pack_model_decode(m, payload, len, out, RECORDS_MAX, &got, at, why);
    if (rc < 0) {
        ck_assert_int_eq(rc, -EINVAL);
        ck_assert_ptr_nonnull(*why);
        ck_assert_uint_le(*at, len);
    } else {
        ck_assert_uint_le(got, RECORDS_MAX);
    }
    free(out);
    return rc;
}

/* Every prefix of a payload is refused; any byte changed is refused or decodes to some records;
 * nothing crashes or reads past the payload (the copy is exactly as long). */
START_TEST(damaged_payloads)
{
    mt_pack_model_t *enc = mt_pack_model_new(MT_TRACE_VERSION), *dec = mt_pack_model_new(MT_TRACE_VERSION);
    uint8_t rec[3000], *payload = payload_buf();
    const size_t n = heap_chunk(rec, sizeof rec, 99, MT_TRACE_VERSION);
    for (int level = -1; level <= 3; level += 4) { /* a fast level stores more streams raw */
        const size_t z = (size_t)encode_ok(enc, rec, n, level, payload);
        const char *why;
        size_t at;
        for (size_t len = 0; len < z; len++) {
            uint8_t *copy = malloc(len ? len : 1);
            memcpy(copy, payload, len);
            ck_assert_int_eq(decode_any(dec, copy, len, &why, &at), -EINVAL);
            free(copy);
        }
        uint8_t *copy = malloc(z);
        for (size_t i = 0; i < z; i++) {
            for (unsigned flip = 0; flip < 3; flip++) {
                memcpy(copy, payload, z);
                copy[i] ^= flip == 0 ? 0xff : flip == 1 ? 0x01 : 0x80;
                decode_any(dec, copy, z, &why, &at);
            }
        }
        free(copy);
        /* one byte more at the end */
        payload[z] = 0;
        ck_assert_int_eq(decode_any(dec, payload, z + 1, &why, &at), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "follow"));
        ck_assert_uint_eq(at, z);
    }
    free(payload);
    mt_pack_model_free(enc);
    mt_pack_model_free(dec);
}
END_TEST

/* Hand-made payloads: each rule of the spec that a decoder checks. Streams stored raw. */
static int decode_streams(const uint8_t *const *streams, const size_t *lens, const char **why)
{
    uint8_t buf[1024];
    size_t n = 0;
    for (unsigned i = 0; i < MT_PACK_MODEL_STREAMS; i++) {
        n = (size_t)(mt_put_uvarint(buf + n, lens[i]) - buf);
        if (lens[i]) {
            n = (size_t)(mt_put_uvarint(buf + n, (uint64_t)lens[i] << 1) - buf);
            memcpy(buf + n, streams[i], lens[i]);
            n += lens[i];
        }
    }
    mt_pack_model_t *m = mt_pack_model_new(MT_TRACE_VERSION);
    size_t at;
    const int rc = decode_any(m, buf, n, why, &at);
    static char msg[256]; /* *why may lie in the model */
    snprintf(msg, sizeof msg, "%s", *why ? *why : "");
    *why = msg;
    mt_pack_model_free(m);
    return rc;
}

enum { OPS, EXT, TIME, SIZE, MISC, SLACK, PCODE, RCODE, PLIT, RLIT, STACK, PAYLOAD, SIZE_HI };

START_TEST(hand_made_payloads)
{
    const uint8_t *s[MT_PACK_MODEL_STREAMS] = { 0 };
    size_t l[MT_PACK_MODEL_STREAMS] = { 0 };
    const char *why;
    /* malloc(16) = literal 0x1000, then free of allocation 1 back: fine */
    static const uint8_t ops[] = { MT_OP_MALLOC, MT_OP_FREE }, times[] = { 1, 1 }, size[] = { 16 }, slack[] = { 16 },
                         rcode[] = { 0 }, rlit[] = { 0x80, 0x40 }, pcode_ok[] = { 2 };
    s[OPS] = ops, l[OPS] = 2;
    s[TIME] = times, l[TIME] = 2;
    s[SIZE] = size, l[SIZE] = 1;
    s[SLACK] = slack, l[SLACK] = 1;
    s[RCODE] = rcode, l[RCODE] = 1;
    s[RLIT] = rlit, l[RLIT] = 2;
    s[PCODE] = pcode_ok, l[PCODE] = 1;
    ck_assert_int_eq(decode_streams(s, l, &why), 0);
    /* a free naming the allocation before the first */
    static const uint8_t pcode_far[] = { 3 };
    s[PCODE] = pcode_far;
    ck_assert_int_eq(decode_streams(s, l, &why), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "allocation"));
    s[PCODE] = pcode_ok;
    /* a result naming a free the chunk does not have, by position and by size */
    static const uint8_t rcode_free[] = { 3 }, rcode_class[] = { 2 }, rcode_arg[] = { 1 };
    s[RCODE] = rcode_free;
    ck_assert_int_eq(decode_streams(s, l, &why), -EINVAL);
    s[RCODE] = rcode_class;
    ck_assert_int_eq(decode_streams(s, l, &why), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "size"));
    /* "the argument" for malloc, which has none */
    s[RCODE] = rcode_arg;
    ck_assert_int_eq(decode_streams(s, l, &why), -EINVAL);
    s[RCODE] = rcode;
    /* a stream with bytes left over, and one that ends early */
    l[TIME] = 1;
    ck_assert_int_eq(decode_streams(s, l, &why), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "time"));
    l[TIME] = 2;
    l[RLIT] = 1; /* and a varint cut */
    ck_assert_int_eq(decode_streams(s, l, &why), -EINVAL);
    l[RLIT] = 2;
    /* an event whose payload length runs past the payload stream */
    static const uint8_t ev_ops[] = { MT_EV_MARK }, ev_len[] = { 5 };
    const uint8_t *e[MT_PACK_MODEL_STREAMS] = { 0 };
    size_t el[MT_PACK_MODEL_STREAMS] = { 0 };
    e[OPS] = ev_ops, el[OPS] = 1;
    e[TIME] = times, el[TIME] = 1;
    e[MISC] = ev_len, el[MISC] = 1;
    e[PAYLOAD] = (const uint8_t *)"abcd", el[PAYLOAD] = 4;
    ck_assert_int_eq(decode_streams(e, el, &why), -EINVAL);
    el[PAYLOAD] = 5, e[PAYLOAD] = (const uint8_t *)"abcde";
    ck_assert_int_eq(decode_streams(e, el, &why), 0);
    /* undefined opcodes, an event with flag bits, the end marker */
    static const uint8_t bad_ops[][1] = { { 0 }, { 13 }, { 31 }, { MT_EV_MARK | 0x20 } };
    for (size_t i = 0; i < 4; i++) {
        e[OPS] = bad_ops[i];
        ck_assert_int_eq(decode_streams(e, el, &why), -EINVAL);
    }
    /* a stream longer than the limit, and stored lengths that disagree */
    uint8_t big[32], *q = big;
    q = mt_put_uvarint(q, MT_PACK_MODEL_STREAM_MAX + 1);
    q = mt_put_uvarint(q, 2);
    mt_pack_model_t *m = mt_pack_model_new(MT_TRACE_VERSION);
    size_t at;
    ck_assert_int_eq(decode_any(m, big, (size_t)(q - big), &why, &at), -EINVAL);
    q = mt_put_uvarint(big, 4);
    q = mt_put_uvarint(q, 3 << 1); /* stored raw: 3 bytes for 4 */
    memset(q, 0, 4);
    ck_assert_int_eq(decode_any(m, big, (size_t)(q - big) + 4, &why, &at), -EINVAL);
    q = mt_put_uvarint(big, 4);
    q = mt_put_uvarint(q, (4 << 1) | 1); /* "zstd", not a zstd frame */
    memset(q, 0, 4);
    ck_assert_int_eq(decode_any(m, big, (size_t)(q - big) + 4, &why, &at), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "zstd"));
    mt_pack_model_free(m);
}
END_TEST

/* More records than a chunk holds: refused when the output would pass its end. */
START_TEST(output_bounded)
{
    static uint8_t ops[MT_PACK_MODEL_STREAM_MAX], times[MT_PACK_MODEL_STREAM_MAX], pcodes[MT_PACK_MODEL_STREAM_MAX];
    memset(ops, MT_OP_FREE, sizeof ops);
    memset(times, 0x7f, sizeof times);
    memset(pcodes, 1, sizeof pcodes); /* free(NULL) */
    uint8_t *buf = malloc(4 * MT_PACK_MODEL_STREAM_MAX);
    size_t n = 0;
    for (unsigned i = 0; i < MT_PACK_MODEL_STREAMS; i++) {
        const uint8_t *src = i == OPS ? ops : i == TIME ? times : i == PCODE ? pcodes : NULL;
        const size_t len = src ? MT_PACK_MODEL_STREAM_MAX : 0;
        n = (size_t)(mt_put_uvarint(buf + n, len) - buf);
        if (len) {
            n = (size_t)(mt_put_uvarint(buf + n, (uint64_t)len << 1) - buf);
            memcpy(buf + n, src, len);
            n += len;
        }
    }
    mt_pack_model_t *m = mt_pack_model_new(MT_TRACE_VERSION);
    const char *why;
    size_t at;
    ck_assert_int_eq(decode_any(m, buf, n, &why, &at), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "exceed"));
    mt_pack_model_free(m);
    free(buf);
}
END_TEST

static Suite *pack_model_suite(void)
{
    Suite *s = suite_create("pack_model");
    TCase *tc = tcase_create("pack_model");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, round_trip_heap_chunks, 1, MT_TRACE_VERSION + 1);
    tcase_add_test(tc, refuses_what_it_cannot_model);
    tcase_add_test(tc, damaged_payloads);
    tcase_add_test(tc, hand_made_payloads);
    tcase_add_test(tc, output_bounded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(pack_model_suite());
}
