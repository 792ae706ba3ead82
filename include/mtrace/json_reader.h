/* A small JSON reader for mtrace's own result files: parses a document into a tree of values that
 * can be looked up by key. Errors name the file and the byte offset. */
#ifndef MTRACE_JSON_READER_H
#define MTRACE_JSON_READER_H

#include <stddef.h>

#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MT_JNULL, MT_JBOOL, MT_JNUM, MT_JSTR, MT_JARR, MT_JOBJ } mt_jtype_t;

typedef struct mt_jval {
    mt_jtype_t type;
    double num;            /* MT_JNUM, MT_JBOOL (0 or 1) */
    char *str;             /* MT_JSTR, NUL-terminated */
    struct mt_jval *items; /* MT_JARR, MT_JOBJ: n values */
    char **keys;           /* MT_JOBJ: n keys */
    size_t n;
} mt_jval_t;

/* Reads and parses `path`; *out is freed with mt_json_free. */
int mt_json_load(const char *path, mt_jval_t **out, mt_error_t *err);
void mt_json_free(mt_jval_t *v);
/* The member `key` of an object, or NULL. */
const mt_jval_t *mt_json_get(const mt_jval_t *obj, const char *key);
/* The number at obj[key] (dflt if missing or not a number). */
double mt_json_num(const mt_jval_t *obj, const char *key, double dflt);
/* The string at obj[key] (dflt if missing or not a string). */
const char *mt_json_str_at(const mt_jval_t *obj, const char *key, const char *dflt);

#ifdef __cplusplus
}
#endif
#endif
