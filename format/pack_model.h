/* The modeled chunk coding of packed traces ("MTCM" frames, doc/trace-format.md "Modeled frames"):
 * a chunk's records split into streams by field kind, pointers coded by reference to the chunk's
 * earlier allocations and frees, each stream compressed with zstd on its own. Internal to the
 * format library (trace_pack.c writes these frames, trace_reader.c reads them). */
#ifndef MTRACE_PACK_MODEL_H
#define MTRACE_PACK_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "mtrace/trace_format.h" /* MT_PACK_MODEL_MAGIC */

#define MT_PACK_MODEL_STREAMS 13u       /* streams per frame, in a fixed order */
#define MT_PACK_MODEL_STREAM_MAX 65536u /* decoded bytes of one stream, at most */

/* Coding state and buffers for one encoder or decoder (about 2.5 MiB); not thread-safe. */
typedef struct mt_pack_model mt_pack_model_t;

/* A coder for the records of a trace of format `trace_version` (1 or 2: their pointer fields differ). */
mt_pack_model_t *mt_pack_model_new(unsigned trace_version);
void mt_pack_model_free(mt_pack_model_t *m);

/* Codes the n record bytes of one chunk (as an "MTCZ" frame would hold them) into out, the frame's
 * payload after its 40 header bytes, with zstd at `level`. Returns the payload's length; 0 when the
 * model cannot represent these bytes exactly or the payload would exceed cap (the caller writes an
 * "MTCZ" frame instead); -ENOMEM or -EIO (zstd failed). The result is checked by decoding it:
 * a payload this returns always decodes to exactly the bytes given. */
long mt_pack_model_encode(mt_pack_model_t *m, const uint8_t *rec, size_t n, int level, uint8_t *out, size_t cap);

/* Decodes the payload of an "MTCM" frame (len bytes) into dst (cap bytes). Returns 0 and the record
 * bytes in *n, or -EINVAL with what was wrong in *why and the payload offset where it was found in
 * *at, or -ENOMEM. Any input is safe: every length and index is checked. */
int mt_pack_model_decode(mt_pack_model_t *m, const uint8_t *src, size_t len, uint8_t *dst, size_t cap, size_t *n,
                         size_t *at, const char **why);

#endif
