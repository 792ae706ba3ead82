/* Streaming JSON writer (include/mtrace/json_writer.h). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "mtrace/json_writer.h"

void mt_json_init(mt_json_t *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->first[0] = 1;
}

/* Writes the separator that precedes a value or a key at the current depth. */
static void sep(mt_json_t *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (!j->first[j->depth])
        fputc(',', j->f);
    j->first[j->depth] = 0;
}

static void open_(mt_json_t *j, char c)
{
    sep(j);
    fputc(c, j->f);
    if (j->depth + 1 < MT_JSON_MAX_DEPTH)
        j->depth++;
    j->first[j->depth] = 1;
}

static void close_(mt_json_t *j, char c)
{
    if (j->depth > 0)
        j->depth--;
    fputc(c, j->f);
}

void mt_json_begin_object(mt_json_t *j)
{
    open_(j, '{');
}
void mt_json_end_object(mt_json_t *j)
{
    close_(j, '}');
}
void mt_json_begin_array(mt_json_t *j)
{
    open_(j, '[');
}
void mt_json_end_array(mt_json_t *j)
{
    close_(j, ']');
}

static void put_string(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void mt_json_key(mt_json_t *j, const char *key)
{
    sep(j);
    put_string(j->f, key, strlen(key));
    fputc(':', j->f);
    j->after_key = 1;
}

void mt_json_str(mt_json_t *j, const char *s, size_t len)
{
    sep(j);
    put_string(j->f, s, len);
}

void mt_json_u64(mt_json_t *j, uint64_t v)
{
    sep(j);
    fprintf(j->f, "%" PRIu64, v);
}

void mt_json_i64(mt_json_t *j, int64_t v)
{
    sep(j);
    fprintf(j->f, "%" PRId64, v);
}

void mt_json_double(mt_json_t *j, double v)
{
    sep(j);
    if (isfinite(v))
        fprintf(j->f, "%.15g", v);
    else
        fputs("null", j->f); /* JSON has no NaN or infinity */
}

void mt_json_bool(mt_json_t *j, int v)
{
    sep(j);
    fputs(v ? "true" : "false", j->f);
}

void mt_json_null(mt_json_t *j)
{
    sep(j);
    fputs("null", j->f);
}

void mt_json_kv_str(mt_json_t *j, const char *key, const char *s, size_t len)
{
    mt_json_key(j, key);
    mt_json_str(j, s, len);
}

void mt_json_kv_cstr(mt_json_t *j, const char *key, const char *s)
{
    mt_json_kv_str(j, key, s, strlen(s));
}

void mt_json_kv_u64(mt_json_t *j, const char *key, uint64_t v)
{
    mt_json_key(j, key);
    mt_json_u64(j, v);
}

void mt_json_kv_i64(mt_json_t *j, const char *key, int64_t v)
{
    mt_json_key(j, key);
    mt_json_i64(j, v);
}

void mt_json_kv_double(mt_json_t *j, const char *key, double v)
{
    mt_json_key(j, key);
    mt_json_double(j, v);
}

void mt_json_kv_bool(mt_json_t *j, const char *key, int v)
{
    mt_json_key(j, key);
    mt_json_bool(j, v);
}

void mt_json_finish(mt_json_t *j)
{
    fputc('\n', j->f);
}
