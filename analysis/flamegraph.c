/* Folded stacks and SVG flame graphs.
 *
 * Both outputs see the same stacks: a stack of weight 0 is left out; a stack without frames counts
 * as the one frame "[no stack]", and a NULL or empty frame name as "[unknown]".
 *
 * The flame graph merges the stacks into a prefix tree, outermost frame first, under a root "all"
 * that holds the total weight. Children are drawn in order of name, so that the picture does not
 * depend on the order of the input. Layout as in Brendan Gregg's flamegraph.pl: 1200 px wide with
 * 10 px margins, 16 px per level, the root at the bottom; x by cumulative weight, width proportional
 * to weight; frames narrower than 0.1 px (and so their children) are not drawn. Colours come from a
 * hash of the frame name, in the warm ("hot") palette. Names are truncated with ".." to fit their
 * rectangle and drawn only when three characters fit; each frame's <title> holds its full name,
 * weight and share for hover, and a small inline script copies it into the details line. The file is
 * self-contained (no external references) and well-formed XML: names are escaped, characters not
 * allowed in XML and invalid UTF-8 bytes become '?'.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/flamegraph.h"
#include "xml_escape.h"

#define NO_STACK "[no stack]"
#define UNKNOWN_FRAME "[unknown]"

#define IMAGE_WIDTH 1200
#define XPAD 10
#define FRAME_HEIGHT 16
#define FONT_SIZE 12
#define FONT_WIDTH 0.59 /* average character width, in units of the font size */
#define MIN_WIDTH 0.1   /* px */
#define TOP_PAD (FONT_SIZE * 3)
#define BOTTOM_PAD (FONT_SIZE * 2 + 10)

static const char *frame_name(const mt_folded_t *st, uint32_t i)
{
    if (st->nframes == 0)
        return NO_STACK;
    const char *n = st->frames ? st->frames[i] : NULL;
    return n && *n ? n : UNKNOWN_FRAME;
}

static uint32_t frame_count(const mt_folded_t *st)
{
    return st->nframes ? st->nframes : 1;
}

/* ---- folded ------------------------------------------------------------------------------------ */

static void put_folded_name(FILE *f, const char *s)
{
    for (; *s; s++) {
        char c = *s;
        if (c == ';')
            c = ':';
        else if (c == '\n' || c == '\r')
            c = ' '; /* one stack, one line */
        putc(c, f);
    }
}

int mt_folded_write(FILE *f, const mt_folded_t *stacks, size_t n)
{
    if (!f || (n && !stacks))
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        const mt_folded_t *st = &stacks[i];
        if (st->weight == 0)
            continue;
        for (uint32_t k = 0; k < frame_count(st); k++) {
            if (k)
                putc(';', f);
            put_folded_name(f, frame_name(st, k));
        }
        fprintf(f, " %llu\n", (unsigned long long)st->weight);
    }
    return ferror(f) ? -EIO : 0;
}

/* ---- prefix tree ------------------------------------------------------------------------------- */

typedef struct node {
    const char *name; /* the caller's string */
    uint64_t weight;  /* of every stack through this node */
    uint32_t parent;
    uint32_t depth;                  /* root 0 */
    uint32_t first_child, nchildren; /* into the tree's child list, after sorting */
    double x;                        /* left edge, px */
} node_t;

typedef struct tree {
    node_t *nodes;
    size_t n, cap;
    uint32_t *slots; /* hash of (parent, name) -> 1 + node index; 0 empty */
    size_t capslots;
    uint32_t *children; /* child indices, grouped by parent, each group sorted by name */
} tree_t;

static uint64_t hash_key(uint32_t parent, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ull);
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static int tree_rehash(tree_t *t, size_t cap)
{
    uint32_t *s = calloc(cap, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t i = 1; i < t->n; i++) { /* the root is not in the table */
        size_t j = hash_key(t->nodes[i].parent, t->nodes[i].name) & (cap - 1);
        while (s[j])
            j = (j + 1) & (cap - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = s;
    t->capslots = cap;
    return 0;
}

/* The child `name` of `parent`, made when missing: its index, or -1 when out of memory. */
static long tree_child(tree_t *t, uint32_t parent, const char *name)
{
    if ((t->n + 1) * 2 > t->capslots && tree_rehash(t, t->capslots ? t->capslots * 2 : 1024) < 0)
        return -1;
    size_t j = hash_key(parent, name) & (t->capslots - 1);
    for (; t->slots[j]; j = (j + 1) & (t->capslots - 1)) {
        const node_t *c = &t->nodes[t->slots[j] - 1];
        if (c->parent == parent && !strcmp(c->name, name))
            return (long)t->slots[j] - 1;
    }
    if (t->n == t->cap) {
        const size_t cap = t->cap ? t->cap * 2 : 256;
        node_t *v = realloc(t->nodes, cap * sizeof *v);
        if (!v)
            return -1;
        t->nodes = v;
        t->cap = cap;
    }
    const uint32_t i = (uint32_t)t->n++;
    t->nodes[i] = (node_t){ name, 0, parent, t->nodes[parent].depth + 1, 0, 0, 0 };
    t->slots[j] = i + 1;
    return i;
}

static int cmp_child(const void *a, const void *b, void *arg)
{
    const node_t *nodes = arg;
    return strcmp(nodes[*(const uint32_t *)a].name, nodes[*(const uint32_t *)b].name);
}

static int tree_build(tree_t *t, const mt_folded_t *stacks, size_t n)
{
    memset(t, 0, sizeof *t);
    t->cap = 256;
    t->nodes = malloc(t->cap * sizeof *t->nodes);
    if (!t->nodes)
        return -ENOMEM;
    t->nodes[0] = (node_t){ "all", 0, 0, 0, 0, 0, 0 };
    t->n = 1;
    for (size_t i = 0; i < n; i++) {
        const mt_folded_t *st = &stacks[i];
        if (st->weight == 0)
            continue;
        uint32_t at = 0;
        t->nodes[0].weight += st->weight;
        for (uint32_t k = 0; k < frame_count(st); k++) {
            const long c = tree_child(t, at, frame_name(st, k));
            if (c < 0)
                return -ENOMEM;
            at = (uint32_t)c;
            t->nodes[at].weight += st->weight;
        }
    }
    /* children grouped by parent (counting sort), then each group by name */
    t->children = malloc((t->n ? t->n : 1) * sizeof *t->children);
    if (!t->children)
        return -ENOMEM;
    for (size_t i = 1; i < t->n; i++)
        t->nodes[t->nodes[i].parent].nchildren++;
    uint32_t pos = 0;
    for (size_t i = 0; i < t->n; i++) {
        t->nodes[i].first_child = pos;
        pos += t->nodes[i].nchildren;
        t->nodes[i].nchildren = 0;
    }
    for (size_t i = 1; i < t->n; i++) {
        node_t *p = &t->nodes[t->nodes[i].parent];
        t->children[p->first_child + p->nchildren++] = (uint32_t)i;
    }
    for (size_t i = 0; i < t->n; i++)
        if (t->nodes[i].nchildren > 1)
            qsort_r(t->children + t->nodes[i].first_child, t->nodes[i].nchildren, sizeof *t->children, cmp_child,
                    t->nodes);
    return 0;
}

static void tree_free(tree_t *t)
{
    free(t->nodes);
    free(t->slots);
    free(t->children);
}

/* ---- SVG --------------------------------------------------------------------------------------- */

/* Warm palette (flamegraph.pl's "hot"): red 205-255, green 0-230, blue 0-55, from a hash of the name. */
static void frame_colour(const char *name, unsigned *r, unsigned *g, unsigned *b)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    const double v1 = (double)(h & 0xffff) / 65535.0, v2 = (double)((h >> 16) & 0xffff) / 65535.0,
                 v3 = (double)((h >> 32) & 0xffff) / 65535.0;
    *r = 205 + (unsigned)(50 * v3);
    *g = (unsigned)(230 * v1);
    *b = (unsigned)(55 * v2);
}

static const char script[] = "<script type=\"text/ecmascript\"><![CDATA[\n"
                             "var details;\n"
                             "function init(evt) { details = document.getElementById(\"details\").firstChild; }\n"
                             "function frame(e) {\n"
                             "  while (e && e.tagName != \"g\") e = e.parentNode;\n"
                             "  return e && e.getAttribute(\"class\") == \"frame\" ? e : null;\n"
                             "}\n"
                             "function over(evt) {\n"
                             "  var g = frame(evt.target);\n"
                             "  if (g) details.nodeValue = g.getElementsByTagName(\"title\")[0].textContent;\n"
                             "}\n"
                             "function out(evt) { if (frame(evt.target)) details.nodeValue = \" \"; }\n"
                             "]]></script>\n";

int mt_flamegraph_svg(FILE *f, const char *title, const char *unit, const mt_folded_t *stacks, size_t n)
{
    if (!f || (n && !stacks))
        return -EINVAL;
    if (!title)
        title = "Flame Graph";
    if (!unit)
        unit = "samples";
    tree_t t;
    if (tree_build(&t, stacks, n) < 0) {
        tree_free(&t);
        return -ENOMEM;
    }
    assert(t.n >= 1); /* tree_build: the root, "all", is always there */
    const uint64_t total = t.nodes[0].weight;
    const double usable = IMAGE_WIDTH - 2 * XPAD;
    const double scale = total ? usable / (double)total : 0;

    /* Visible frames in pre-order (children by name), with their x positions and the deepest
     * visible level. A frame narrower than MIN_WIDTH hides its children: they are narrower still. */
    uint32_t *order = malloc(t.n * sizeof *order), *stk = malloc(t.n * sizeof *stk);
    if (!order || !stk) {
        free(order);
        free(stk);
        tree_free(&t);
        return -ENOMEM;
    }
    size_t norder = 0, sp = 0;
    uint32_t maxdepth = 0;
    t.nodes[0].x = XPAD;
    stk[sp++] = 0;
    while (total && sp) {
        const node_t *p = &t.nodes[stk[--sp]];
        if ((double)p->weight * scale < MIN_WIDTH)
            continue;
        order[norder++] = (uint32_t)(p - t.nodes);
        if (p->depth > maxdepth)
            maxdepth = p->depth;
        double x = p->x;
        for (uint32_t k = 0; k < p->nchildren; k++) {
            node_t *c = &t.nodes[t.children[p->first_child + k]];
            c->x = x;
            x += (double)c->weight * scale;
        }
        for (uint32_t k = p->nchildren; k-- > 0;)
            stk[sp++] = t.children[p->first_child + k];
    }
    free(stk);
    const int height = (int)(maxdepth + 1) * FRAME_HEIGHT + TOP_PAD + BOTTOM_PAD;

    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
            "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" onload=\"init(evt)\">\n",
            IMAGE_WIDTH, height, IMAGE_WIDTH, height);
    fputs("<style type=\"text/css\">\n"
          "text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
          "#title { text-anchor: middle; font-size: 17px; }\n"
          "g.frame:hover rect { stroke: black; stroke-width: 0.5; }\n"
          "</style>\n",
          f);
    fputs(script, f);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,240)\"/>\n", IMAGE_WIDTH, height);
    fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\">", IMAGE_WIDTH / 2);
    mt_xml_escape(f, title, MT_XML_ALL);
    fputs("</text>\n", f);
    fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, height - 17);
    if (total == 0) {
        fprintf(f, "<text x=\"%d\" y=\"%d\">no data</text>\n", IMAGE_WIDTH / 2 - 24, TOP_PAD + 12);
    }
    fputs("<g id=\"frames\" onmouseover=\"over(evt)\" onmouseout=\"out(evt)\">\n", f);
    for (size_t i = 0; i < norder; i++) {
        const node_t *p = &t.nodes[order[i]];
        const double w = (double)p->weight * scale;
        const double y = (double)(height - BOTTOM_PAD) - (double)(p->depth + 1) * FRAME_HEIGHT;
        unsigned r, g, b;
        frame_colour(p->name, &r, &g, &b);
        fputs("<g class=\"frame\"><title>", f);
        mt_xml_escape(f, p->name, MT_XML_ALL);
        fprintf(f, " (%llu ", (unsigned long long)p->weight);
        mt_xml_escape(f, unit, MT_XML_ALL);
        fprintf(f, ", %.2f%%)</title>", 100.0 * (double)p->weight / (double)total);
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/>",
                p->x, y, w, FRAME_HEIGHT - 1, r, g, b);
        const double room = (w - 6) / (FONT_SIZE * FONT_WIDTH); /* characters that fit */
        const size_t fit = room > 0 ? (size_t)room : 0;
        if (fit >= 3) {
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", p->x + 3, y + 10.5);
            if (mt_xml_chars(p->name) <= fit) {
                mt_xml_escape(f, p->name, MT_XML_ALL);
            } else {
                mt_xml_escape(f, p->name, fit - 2);
                fputs("..", f);
            }
            fputs("</text>", f);
        }
        fputs("</g>\n", f);
    }
    fputs("</g>\n</svg>\n", f);
    free(order);
    tree_free(&t);
    return ferror(f) ? -EIO : 0;
}
