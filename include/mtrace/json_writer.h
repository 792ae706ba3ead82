/* A small streaming JSON writer shared by every mtrace tool: commas, nesting and string escaping
 * handled in one place, so every --json output is valid JSON. */
#ifndef MTRACE_JSON_WRITER_H
#define MTRACE_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MT_JSON_MAX_DEPTH 32

typedef struct mt_json {
    FILE *f;
    int depth;
    int first[MT_JSON_MAX_DEPTH]; /* no element written yet at this depth */
    int after_key;
} mt_json_t;

void mt_json_init(mt_json_t *j, FILE *f);
void mt_json_begin_object(mt_json_t *j);
void mt_json_end_object(mt_json_t *j);
void mt_json_begin_array(mt_json_t *j);
void mt_json_end_array(mt_json_t *j);
void mt_json_key(mt_json_t *j, const char *key);
void mt_json_str(mt_json_t *j, const char *s, size_t len);
void mt_json_u64(mt_json_t *j, uint64_t v);
void mt_json_i64(mt_json_t *j, int64_t v);
void mt_json_double(mt_json_t *j, double v);
void mt_json_bool(mt_json_t *j, int v);
void mt_json_null(mt_json_t *j);
void mt_json_kv_str(mt_json_t *j, const char *key, const char *s, size_t len);
void mt_json_kv_cstr(mt_json_t *j, const char *key, const char *s);
void mt_json_kv_u64(mt_json_t *j, const char *key, uint64_t v);
void mt_json_kv_i64(mt_json_t *j, const char *key, int64_t v);
void mt_json_kv_double(mt_json_t *j, const char *key, double v);
void mt_json_kv_bool(mt_json_t *j, const char *key, int v);
/* Ends the document with a newline. */
void mt_json_finish(mt_json_t *j);

#ifdef __cplusplus
}
#endif
#endif
