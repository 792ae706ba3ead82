/* JSON reader (include/mtrace/json_reader.h): recursive descent over the whole document in memory.
 * Result files are small; nesting is bounded so that a hostile file cannot exhaust the stack. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/json_reader.h"
#include "mtrace/file_io.h"

#define MAX_DEPTH 64

typedef struct parser {
    const char *s, *p, *end;
    const char *path;
    mt_error_t *err;
} parser_t;

static int perr(parser_t *ps, const char *what)
{
    snprintf(ps->err->msg, sizeof ps->err->msg, "%s: offset %zu: expected %s", ps->path, (size_t)(ps->p - ps->s), what);
    return -EINVAL;
}

static void ws(parser_t *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int parse_value(parser_t *ps, mt_jval_t *v, int depth);

static int parse_string(parser_t *ps, char **out)
{
    if (ps->p >= ps->end || *ps->p != '"')
        return perr(ps, "a string");
    ps->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (!s)
        return -ENOMEM;
    while (ps->p < ps->end && *ps->p != '"') {
        char c = *ps->p++;
        if (c == '\\') {
            if (ps->p >= ps->end)
                break;
            c = *ps->p++;
            switch (c) {
            case 'n':
                c = '\n';
                break;
            case 't':
                c = '\t';
                break;
            case 'r':
                c = '\r';
                break;
            case 'b':
                c = '\b';
                break;
            case 'f':
                c = '\f';
                break;
            case 'u': {
                unsigned cp = 0;
                for (int k = 0; k < 4; k++) {
                    if (ps->p >= ps->end) {
                        free(s);
                        return perr(ps, "4 hex digits");
                    }
                    const char h = *ps->p++;
                    cp = cp * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                }
                c = cp < 0x80 ? (char)cp : '?'; /* our files escape only control characters */
                break;
            }
            default:
                break; /* \" \\ \/ */
            }
        }
        if (n + 2 > cap) {
            cap *= 2;
            char *g = realloc(s, cap);
            if (!g) {
                free(s);
                return -ENOMEM;
            }
            s = g;
        }
        s[n++] = c;
    }
    if (ps->p >= ps->end) {
        free(s);
        return perr(ps, "the end of a string");
    }
    ps->p++;
    s[n] = 0;
    *out = s;
    return 0;
}

static int parse_container(parser_t *ps, mt_jval_t *v, int depth, int object)
{
    const char close = object ? '}' : ']';
    ps->p++;
    size_t cap = 0;
    ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? cap * 2 : 8;
            mt_jval_t *items = realloc(v->items, cap * sizeof *items);
            if (!items)
                return -ENOMEM;
            v->items = items;
            if (object) {
                char **keys = realloc(v->keys, cap * sizeof *keys);
                if (!keys)
                    return -ENOMEM;
                v->keys = keys;
            }
        }
        ws(ps);
        if (object) {
            int rc = parse_string(ps, &v->keys[v->n]);
            if (rc < 0)
                return rc;
            ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(v->keys[v->n]);
                return perr(ps, "':'");
            }
            ps->p++;
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        const int rc = parse_value(ps, &v->items[v->n], depth + 1);
        v->n++;
        if (rc < 0)
            return rc;
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        return perr(ps, object ? "',' or '}'" : "',' or ']'");
    }
}

/* true, false or null at ps->p, read into v: 1; or 0 when none of them is there. */
static int parse_literal(parser_t *ps, mt_jval_t *v)
{
    static const struct {
        const char *word;
        mt_jtype_t type;
        double num;
    } words[] = {
        { "true", MT_JBOOL, 1 },
        { "false", MT_JBOOL, 0 },
        { "null", MT_JNULL, 0 },
    };
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        const size_t len = strlen(words[k].word);
        if ((size_t)(ps->end - ps->p) >= len && !memcmp(ps->p, words[k].word, len)) {
            v->type = words[k].type;
            v->num = words[k].num;
            ps->p += len;
            return 1;
        }
    }
    return 0;
}

/* A number: the run of characters from "+-0123456789.eE" at ps->p (63 at the most; never a NUL,
 * which strchr would find as its set's terminator), which strtod must take whole. */
static int parse_number(parser_t *ps, mt_jval_t *v)
{
    char buf[64];
    size_t n = 0;
    while (ps->p + n < ps->end && n + 1 < sizeof buf && ps->p[n] && strchr("+-0123456789.eE", ps->p[n]))
        buf[n] = ps->p[n], n++;
    buf[n] = 0;
    char *endp;
    v->num = strtod(buf, &endp);
    if (!n || *endp)
        return perr(ps, "a value");
    v->type = MT_JNUM;
    ps->p += n;
    return 0;
}

/* Any value, by its first character; `depth` containers hold it. */
static int parse_value(parser_t *ps, mt_jval_t *v, int depth)
{
    if (depth > MAX_DEPTH)
        return perr(ps, "less nesting");
    ws(ps);
    if (ps->p >= ps->end)
        return perr(ps, "a value");
    const char c = *ps->p;
    if (c == '{') {
        v->type = MT_JOBJ;
        return parse_container(ps, v, depth, 1);
    }
    if (c == '[') {
        v->type = MT_JARR;
        return parse_container(ps, v, depth, 0);
    }
    if (c == '"') {
        v->type = MT_JSTR;
        return parse_string(ps, &v->str);
    }
    if (parse_literal(ps, v))
        return 0;
    return parse_number(ps, v);
}

static void free_inner(mt_jval_t *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free_inner(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
}

void mt_json_free(mt_jval_t *v)
{
    if (!v)
        return;
    free_inner(v);
    free(v);
}

int mt_json_load(const char *path, mt_jval_t **out, mt_error_t *err)
{
    *out = NULL;
    struct stat st;
    const int fd = mt_open_input(path, &st, err);
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        const int e = errno;
        close(fd);
        snprintf(err->msg, sizeof err->msg, "%s: offset 0: cannot open: %s", path, strerror(e));
        return -e;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        const size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        if (cap >= (64u << 20)) { /* result files are small; do not read a huge file whole */
            free(buf);
            fclose(f);
            snprintf(err->msg, sizeof err->msg, "%s: offset %zu: expected a JSON document under 64 MiB", path, n);
            return -EFBIG;
        }
        cap *= 2;
        char *g = realloc(buf, cap);
        if (!g) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = g;
    }
    fclose(f);
    if (!buf) {
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
        return -ENOMEM;
    }
    parser_t ps = { buf, buf, buf + n, path, err };
    mt_jval_t *v = calloc(1, sizeof *v);
    int rc = v ? parse_value(&ps, v, 0) : -ENOMEM;
    if (rc == 0) {
        ws(&ps);
        if (ps.p != ps.end)
            rc = perr(&ps, "the end of the document");
    }
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
    free(buf);
    if (rc < 0) {
        mt_json_free(v);
        return rc;
    }
    *out = v;
    return 0;
}

const mt_jval_t *mt_json_get(const mt_jval_t *obj, const char *key)
{
    if (!obj || obj->type != MT_JOBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key))
            return &obj->items[i];
    return NULL;
}

double mt_json_num(const mt_jval_t *obj, const char *key, double dflt)
{
    const mt_jval_t *v = mt_json_get(obj, key);
    return v && (v->type == MT_JNUM || v->type == MT_JBOOL) ? v->num : dflt;
}

const char *mt_json_str_at(const mt_jval_t *obj, const char *key, const char *dflt)
{
    const mt_jval_t *v = mt_json_get(obj, key);
    return v && v->type == MT_JSTR ? v->str : dflt;
}
