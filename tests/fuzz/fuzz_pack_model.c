/* Fuzz target: the modeled chunk coding of packed traces (format/pack_model.c) on its own. The
 * input is tried two ways: as the payload of an "MTCM" frame, which must decode within a chunk or
 * be refused with a reason; and as a chunk's record bytes, which, when the model takes them, must
 * decode back byte for byte. Records a payload decodes to are coded again and must come back too.
 * Both in the syntax of trace format version 1 and of version 2. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fuzz.h"
#include "mtrace/trace_format.h"
#include "pack_model.h"

#define RECORDS_MAX (MT_CHUNK_SIZE - MT_CHUNK_HEADER_SIZE)

static uint8_t out[RECORDS_MAX], again[RECORDS_MAX];

/* Codes rec and checks that it decodes to the same bytes. */
static void round_trip(mt_pack_model_t *m, uint8_t *payload, size_t cap, const uint8_t *rec, size_t n)
{
    const long z = mt_pack_model_encode(m, rec, n, 1, payload, cap);
    if (z < 0)
        fz_fail("encoding %zu record bytes failed: %ld", n, z);
    if (z == 0)
        return; /* not the model's: a plain frame */
    size_t got, at;
    const char *why = "";
    if (mt_pack_model_decode(m, payload, (size_t)z, again, sizeof again, &got, &at, &why) < 0)
        fz_fail("a payload the encoder made does not decode: %s at %zu", why, at);
    if (got != n || memcmp(again, rec, n) != 0)
        fz_fail("a payload decodes to other bytes (%zu, coded from %zu)", got, n);
}

/* The input in the record syntax of one trace format version. */
static void one_version(mt_pack_model_t *m, uint8_t *payload, size_t cap, const uint8_t *data, size_t size)
{
    size_t n = 0, at = 0;
    const char *why = NULL;
    const int rc = mt_pack_model_decode(m, data, size, out, sizeof out, &n, &at, &why);
    if (rc < 0 && (!why || at > size))
        fz_fail("a refused payload without a reason or with an offset past its end");
    if (rc == 0) {
        if (n > sizeof out)
            fz_fail("decoded %zu bytes into %zu", n, sizeof out);
        round_trip(m, payload, cap, out, n);
    }
    if (size <= RECORDS_MAX)
        round_trip(m, payload, cap, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mt_pack_model_t *m[MT_TRACE_VERSION];
    static uint8_t *payload;
    const size_t cap = ZSTD_compressBound(MT_CHUNK_SIZE);
    if (!payload && !(payload = malloc(cap)))
        fz_fail("out of memory");
    for (unsigned v = 1; v <= MT_TRACE_VERSION; v++) {
        if (!m[v - 1] && !(m[v - 1] = mt_pack_model_new(v)))
            fz_fail("out of memory");
        one_version(m[v - 1], payload, cap, data, size);
    }
    return 0;
}
