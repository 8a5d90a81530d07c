/*
 * A TOML 1.0 document read for editing (toml_parse.c; used by toml_edit.c only): every table, key
 * and value with where it is defined in the text, checked by TOML's rules for defining tables
 * (as python3's tomllib checks them), so that an edit can add a key where TOML lets it go.
 */
#ifndef GS_ENGINE_TOML_DOC_H
#define GS_ENGINE_TOML_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include <gpuslice/gpuslice.h>

enum gs_tkind { GS_TK_TABLE, GS_TK_AOT, GS_TK_VALUE };

/* How a table came to be; it decides where a new key of it may be written. */
enum gs_thow {
        GS_TH_ROOT,     /* the document */
        GS_TH_IMPLICIT, /* only as a part of a [header]'s name ([a.b] makes a): [a] may still come */
        GS_TH_HEADER,   /* [name] (or an element of [[name]]): keys go in its section */
        GS_TH_DOTTED,   /* made or extended by dotted keys (a.b.c = 1) of one section: more only there */
        GS_TH_INLINE,   /* { ... } or a table inside one: closed, more only inside its braces */
};

struct gs_tnode {
        char *name;               /* the key, decoded (NULL: an array's element, a [[name]] element) */
        enum gs_tkind kind;
        enum gs_thow how;         /* tables */
        bool is_explicit;         /* no [header] may define it (any more) */
        bool pending;             /* explicit from the next header on (made by a dotted key) */
        bool frozen;              /* an inline table or array, or in one */
        bool inline_value;        /* this node is a { } value itself */
        bool is_array;            /* a [ ] value */
        char *str;                /* a string value, decoded (else NULL) */
        size_t section;           /* HEADER: its own section; DOTTED: the section whose keys make it */
        size_t at;                /* where it is defined: its key, or its header */
        size_t vstart, vend;      /* a value's text ({ } and [ ] included) */
        size_t last_end;          /* an inline table or array: the end of its last entry (0: empty) */
        struct gs_tnode *parent;
        struct gs_tnode **kids;
        size_t nkids, cap;
};

/* A header and the lines up to the next one (section 0: the lines before the first header). */
struct gs_tsection {
        struct gs_tnode *table;   /* the table its keys go in */
        size_t hdr;               /* its header's line (0 for section 0) */
        size_t body;              /* the line after the header */
        size_t first_kv;          /* its first key/value line (when has_kv) */
        size_t last_kv_end;       /* just past the line that ends its last key/value */
        bool has_kv;
};

struct gs_tdoc {
        const char *text;
        size_t len;
        struct gs_tnode *root;
        struct gs_tsection *sections;
        size_t nsections, cap;
};

/* Parse `text`. Errors (GS_EFORMAT): "line N: what", N the line where the problem is. */
int gs_tdoc_parse(struct gs_tdoc *d, const char *text, struct gs_error *err);
void gs_tdoc_free(struct gs_tdoc *d);
/* The line number (1-based) of offset `off`. */
unsigned gs_tdoc_line(const struct gs_tdoc *d, size_t off);
/* The named child of a table (NULL: none). */
struct gs_tnode *gs_tnode_child(const struct gs_tnode *t, const char *name);
/* A [[name]]: its last element. */
struct gs_tnode *gs_tnode_last(const struct gs_tnode *aot);
bool gs_toml_bare(const char *s);

#endif
