/* The column path of the lm-eval importer, in C (optional; see _lmeval_strict.py).
 *
 * convert_chunk(chunk, filter, primary_metric, metrics, take_first, grader) reads a chunk
 * of samples lines (joined by newlines, valid UTF-8: the caller checks) and returns their
 * records packed as _lmeval_strict.Packed, byte for byte what the Python column path
 * returns for the same chunk:
 *
 *   (prompt lines, rollout lines, judgement lines, problem ids joined by newlines,
 *    content hashes joined by newlines, verdicts as bytes, first doc_id, last doc_id,
 *    repeats left out, most repeats)
 *
 * or None when any line is not of the common shape or is not valid JSON: then the Python
 * line paths read the chunk, and report what is wrong with it. A line is taken only when
 * it is valid JSON (every value checked, skipped ones included) with exactly the keys of
 * the first line, each once and of the one type the column path handles.
 * JSON strings are escaped as msgspec escapes them; SHA-256 follows FIPS 180-4.
 * tests/test_strict_c.py compares all of it with the Python code and hashlib.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifdef ROLLEVAL_OPENSSL
/* libcrypto's SHA-256 (SHA extensions of the CPU where it has them); the low-level
 * functions are deprecated in OpenSSL 3 but kept, and faster per call than EVP's. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#endif

/* ------------------------------------------------------------------ growable buffer */

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->n + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1 << 14;
    while (cap < b->n + extra) cap *= 2;
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_add(Buf *b, const char *s, Py_ssize_t n) {
    if (buf_reserve(b, n)) return -1;
    memcpy(b->p + b->n, s, (size_t)n);
    b->n += n;
    return 0;
}

#define ADD_LIT(b, s) buf_add((b), (s), (Py_ssize_t)(sizeof(s) - 1))

static const char HEX[] = "0123456789abcdef";

/* s (UTF-8) as a JSON string: '"' and '\\' escaped, control characters as \b \t \n \f \r
 * or \u00XX (lower-case hex), everything else as it is: msgspec's (and orjson's) output. */
static int buf_add_json_str(Buf *b, const char *s, Py_ssize_t n) {
    if (buf_reserve(b, 6 * n + 2)) return -1;
    char *o = b->p + b->n;
    *o++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '\b': *o++ = 'b'; break;
            case '\t': *o++ = 't'; break;
            case '\n': *o++ = 'n'; break;
            case '\f': *o++ = 'f'; break;
            case '\r': *o++ = 'r'; break;
            default:
                *o++ = 'u';
                *o++ = '0';
                *o++ = '0';
                *o++ = HEX[c >> 4];
                *o++ = HEX[c & 15];
        }
    }
    *o++ = '"';
    b->n = o - b->p;
    return 0;
}

/* ------------------------------------------------------------------ SHA-256 (FIPS 180-4) */

#ifndef ROLLEVAL_OPENSSL
static const uint32_t K256[64] = {0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u};
static const uint32_t H256[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au, 0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
#endif

#ifdef ROLLEVAL_OPENSSL
typedef SHA256_CTX Sha;
static void sha_init(Sha *s) { SHA256_Init(s); }
static void sha_update(Sha *s, const void *data, size_t n) { SHA256_Update(s, data, n); }
static void sha_hex(Sha *s, char out[64]) {
    unsigned char d[32];
    SHA256_Final(d, s);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = HEX[d[i] >> 4];
        out[2 * i + 1] = HEX[d[i] & 15];
    }
}
#else
typedef struct {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t nbuf;
} Sha;

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(Sha *s, const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = ((uint32_t)p[4 * i] << 24) | ((uint32_t)p[4 * i + 1] << 16) |
               ((uint32_t)p[4 * i + 2] << 8) | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
    uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = h + S1 + ch + K256[i] + w[i];
        uint32_t S0 = ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
    s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static void sha_init(Sha *s) {
    memcpy(s->h, H256, sizeof(H256));
    s->len = 0;
    s->nbuf = 0;
}

static void sha_update(Sha *s, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    s->len += n;
    if (s->nbuf) {
        size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take;
        p += take;
        n -= take;
        if (s->nbuf < 64) return;
        sha_block(s, s->buf);
        s->nbuf = 0;
    }
    while (n >= 64) {
        sha_block(s, p);
        p += 64;
        n -= 64;
    }
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

static void sha_hex(Sha *s, char out[64]) {
    uint64_t bits = s->len * 8;
    unsigned char pad = 0x80;
    sha_update(s, &pad, 1);
    unsigned char zero = 0;
    while (s->nbuf != 56) sha_update(s, &zero, 1);
    unsigned char be[8];
    for (int i = 0; i < 8; i++) be[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_update(s, be, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) {
            unsigned char byte = (unsigned char)(s->h[i] >> (24 - 8 * j));
            out[8 * i + 2 * j] = HEX[byte >> 4];
            out[8 * i + 2 * j + 1] = HEX[byte & 15];
        }
}

#endif

static PyObject *sha256_hex(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    Sha s;
    sha_init(&s);
    sha_update(&s, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    char out[64];
    sha_hex(&s, out);
    return PyUnicode_FromStringAndSize(out, 64);
}

static PyObject *json_str(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(arg, &n);
    if (s == NULL) return NULL;
    Buf b = {0};
    if (buf_add_json_str(&b, s, n)) return NULL;
    PyObject *r = PyBytes_FromStringAndSize(b.p, b.n);
    PyMem_Free(b.p);
    return r;
}

/* ------------------------------------------------------------------ JSON, strictly */

/* Every function below returns 0 on success and -1 when the input is not what the column
 * path takes (invalid JSON included): the chunk then goes to the Python line paths, which
 * read it or report the error. Nothing here raises but MemoryError. */

typedef struct {
    const char *p, *end;
} Cur;

static inline void ws(Cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static inline int lit(Cur *c, const char *s, Py_ssize_t n) {
    if (c->end - c->p < n || memcmp(c->p, s, (size_t)n)) return -1;
    c->p += n;
    return 0;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static int put_utf8(Buf *out, unsigned cp) {
    char b[4];
    Py_ssize_t n;
    if (cp < 0x80) { b[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { b[0] = (char)(0xC0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    return buf_add(out, b, n);
}

/* The first '"', '\\' or control character at or after p (or end), eight bytes at a time
 * (a byte is flagged exactly when it is one of those; see "haszero" bit tricks). */
static inline const char *scan_plain(const char *p, const char *end) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t v, q, b;
        memcpy(&v, p, 8);
        q = v ^ (ones * '"');
        b = v ^ (ones * '\\');
        uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((v - ones * 0x20) & ~v);
        if (hit & highs) break;
        p += 8;
    }
    while (p < end) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\' || ch < 0x20) break;
        p++;
    }
    return p;
}

/* A string at c->p ('"'); its unescaped UTF-8 appended to out unless out is NULL. The input
 * is valid UTF-8 (checked by the caller); control characters, bad escapes and lone
 * surrogates are refused. */
static int json_string(Cur *c, Buf *out) {
    if (c->p >= c->end || *c->p != '"') return -1;
    c->p++;
    for (;;) {
        const char *s = c->p;
        c->p = scan_plain(c->p, c->end);
        if (out != NULL && c->p > s && buf_add(out, s, c->p - s)) return -2;
        if (c->p >= c->end) return -1;
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"') {
            c->p++;
            return 0;
        }
        if (ch < 0x20) return -1;
        /* an escape */
        if (c->end - c->p < 2) return -1;
        char e = c->p[1];
        c->p += 2;
        char plain;
        switch (e) {
            case '"': plain = '"'; break;
            case '\\': plain = '\\'; break;
            case '/': plain = '/'; break;
            case 'b': plain = '\b'; break;
            case 'f': plain = '\f'; break;
            case 'n': plain = '\n'; break;
            case 'r': plain = '\r'; break;
            case 't': plain = '\t'; break;
            case 'u': {
                unsigned cp;
                if (c->end - c->p < 4 || hex4(c->p, &cp)) return -1;
                c->p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' ||
                        hex4(c->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return -1; /* a lone surrogate */
                    c->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return -1;
                }
                if (out != NULL && put_utf8(out, cp)) return -2;
                continue;
            }
            default: return -1;
        }
        if (out != NULL && buf_add(out, &plain, 1)) return -2;
    }
}

/* A number (RFC 8259 grammar); *is_int: no fraction and no exponent. */
static int json_number(Cur *c, int *is_int) {
    const char *p = c->p;
    if (p < c->end && *p == '-') p++;
    if (p >= c->end) return -1;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (p < c->end && *p >= '0' && *p <= '9') p++;
    else return -1;
    *is_int = 1;
    if (p < c->end && *p == '.') {
        p++;
        if (p >= c->end || *p < '0' || *p > '9') return -1;
        while (p < c->end && *p >= '0' && *p <= '9') p++;
        *is_int = 0;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < c->end && (*p == '+' || *p == '-')) p++;
        if (p >= c->end || *p < '0' || *p > '9') return -1;
        while (p < c->end && *p >= '0' && *p <= '9') p++;
        *is_int = 0;
    }
    c->p = p;
    return 0;
}

/* Any value, validated and skipped (nesting up to 64 levels; deeper: not taken). */
static int json_skip(Cur *c, int depth) {
    if (depth > 64) return -1;
    ws(c);
    if (c->p >= c->end) return -1;
    int r, is_int;
    switch (*c->p) {
        case '{':
            c->p++;
            ws(c);
            if (c->p < c->end && *c->p == '}') { c->p++; return 0; }
            for (;;) {
                ws(c);
                if ((r = json_string(c, NULL))) return r;
                ws(c);
                if (c->p >= c->end || *c->p != ':') return -1;
                c->p++;
                if ((r = json_skip(c, depth + 1))) return r;
                ws(c);
                if (c->p >= c->end) return -1;
                if (*c->p == ',') { c->p++; continue; }
                if (*c->p == '}') { c->p++; return 0; }
                return -1;
            }
        case '[':
            c->p++;
            ws(c);
            if (c->p < c->end && *c->p == ']') { c->p++; return 0; }
            for (;;) {
                if ((r = json_skip(c, depth + 1))) return r;
                ws(c);
                if (c->p >= c->end) return -1;
                if (*c->p == ',') { c->p++; continue; }
                if (*c->p == ']') { c->p++; return 0; }
                return -1;
            }
        case '"': return json_string(c, NULL);
        case 't': return lit(c, "true", 4);
        case 'f': return lit(c, "false", 5);
        case 'n': return lit(c, "null", 4);
        default: return json_number(c, &is_int);
    }
}

/* The raw bytes of the next value (msgspec.Raw: the value's own bytes, no whitespace). */
static int json_raw(Cur *c, const char **start, Py_ssize_t *n) {
    ws(c);
    *start = c->p;
    int r = json_skip(c, 0);
    *n = c->p - *start;
    return r;
}

/* An array of exactly one string, unescaped into out. */
static int one_string_array(Cur *c, Buf *out) {
    ws(c);
    if (c->p >= c->end || *c->p != '[') return -1;
    c->p++;
    ws(c);
    int r = json_string(c, out);
    if (r) return r;
    ws(c);
    if (c->p >= c->end || *c->p != ']') return -1;
    c->p++;
    return 0;
}

/* ------------------------------------------------------------------ one samples line */

typedef struct {
    const char *filter;
    Py_ssize_t n_filter;
    const char *primary;
    Py_ssize_t n_primary;
    PyObject *metrics; /* list of bytes: the metric names, in order (UTF-8) */
    int take_first;
    const char *grader;
    Py_ssize_t n_grader;
} Spec;

typedef struct {
    Buf target, a0, role, content, text, fr, tmp, scratch;
    long long did;
    double value;
    Py_ssize_t repeats;
    const char *raw[4]; /* doc_hash, prompt_hash, target_hash, doc */
    Py_ssize_t n_raw[4];
} Line;

enum {
    K_DOC_ID = 1 << 0, K_DOC = 1 << 1, K_TARGET = 1 << 2, K_ARGUMENTS = 1 << 3,
    K_RESPS = 1 << 4, K_FILTERED = 1 << 5, K_FILTER = 1 << 6, K_METRICS = 1 << 7,
    K_DOC_HASH = 1 << 8, K_PROMPT_HASH = 1 << 9, K_TARGET_HASH = 1 << 10, K_PRIMARY = 1 << 11,
    K_ALL = (1 << 12) - 1,
};

#define KEY_IS(s) (klen == (Py_ssize_t)(sizeof(s) - 1) && !memcmp(key, s, sizeof(s) - 1))

/* After a member's value: 1 if another member follows (the comma is read), 0 at the end of
 * the object (the brace is read), -1 otherwise. */
static int next_member(Cur *c) {
    ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == ',') {
        c->p++;
        return 1;
    }
    if (*c->p == '}') {
        c->p++;
        return 0;
    }
    return -1;
}

/* An object member's key (unescaped keys only: an escaped one is left to the decoders) and
 * the colon after it; the cursor is then at the value. */
static int member_key(Cur *c, const char **key, Py_ssize_t *klen) {
    ws(c);
    if (c->p >= c->end || *c->p != '"') return -1;
    *key = ++c->p;
    while (c->p < c->end && *c->p != '"' && *c->p != '\\' && (unsigned char)*c->p >= 0x20) c->p++;
    if (c->p >= c->end || *c->p != '"') return -1;
    *klen = c->p - *key;
    c->p++;
    ws(c);
    if (c->p >= c->end || *c->p != ':') return -1;
    c->p++;
    ws(c);
    return 0;
}

static int parse_arguments(Cur *c, Line *L) {
    /* {"gen_args_0": {"arg_0": [str], ...other keys...}}: no other key at the top */
    int r, seen_g0 = 0;
    ws(c);
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    for (;;) {
        ws(c);
        if (lit(c, "\"gen_args_0\"", 12) || seen_g0) return -1;
        seen_g0 = 1;
        ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        ws(c);
        if (c->p >= c->end || *c->p != '{') return -1;
        c->p++;
        int seen_a0 = 0;
        ws(c);
        if (c->p < c->end && *c->p == '}') return -1; /* no arg_0 */
        for (;;) {
            const char *key;
            Py_ssize_t klen;
            if (member_key(c, &key, &klen)) return -1;
            if (KEY_IS("arg_0")) {
                if (seen_a0) return -1;
                seen_a0 = 1;
                if ((r = one_string_array(c, &L->a0))) return r;
            } else if ((r = json_skip(c, 1))) {
                return r;
            }
            if ((r = next_member(c)) <= 0) {
                if (r < 0) return -1;
                break;
            }
        }
        if (!seen_a0) return -1;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') return -1; /* a second request */
        if (*c->p == '}') { c->p++; return 0; }
        return -1;
    }
}

static int parse_resps(Cur *c, Line *L, int take_first) {
    /* [[str, str, ...]]: one request, one or more repeats */
    int r;
    ws(c);
    if (c->p >= c->end || *c->p != '[') return -1;
    c->p++;
    ws(c);
    if (c->p >= c->end || *c->p != '[') return -1;
    c->p++;
    L->repeats = 0;
    for (;;) {
        ws(c);
        if ((r = json_string(c, L->repeats == 0 ? &L->text : NULL))) return r;
        L->repeats++;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; continue; }
        if (*c->p == ']') { c->p++; break; }
        return -1;
    }
    if (L->repeats > 1 && !take_first) return -1;
    ws(c);
    if (c->p >= c->end || *c->p != ']') return -1;
    c->p++;
    return 0;
}

static int parse_metrics(Cur *c, Line *L, const Spec *S) {
    /* exactly the first line's metric names, in order */
    Py_ssize_t m = PyList_GET_SIZE(S->metrics), i = 0;
    int r;
    ws(c);
    if (c->p >= c->end || *c->p != '[') return -1;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == ']') return -1;
    for (;;) {
        if (i >= m) return -1;
        L->tmp.n = 0;
        ws(c);
        if ((r = json_string(c, &L->tmp))) return r;
        PyObject *want = PyList_GET_ITEM(S->metrics, i);
        if (L->tmp.n != PyBytes_GET_SIZE(want) ||
            memcmp(L->tmp.p ? L->tmp.p : "", PyBytes_AS_STRING(want), (size_t)L->tmp.n))
            return -1;
        i++;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; continue; }
        if (*c->p == ']') { c->p++; break; }
        return -1;
    }
    return i == m ? 0 : -1;
}

static int is_other_metric(const char *key, Py_ssize_t klen, const Spec *S) {
    Py_ssize_t m = PyList_GET_SIZE(S->metrics);
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *name = PyList_GET_ITEM(S->metrics, i);
        if (PyBytes_GET_SIZE(name) == klen && !memcmp(PyBytes_AS_STRING(name), key, (size_t)klen))
            return 1;
    }
    return 0;
}

/* One line (no newline) into L; 0, -1 (not taken) or -2 (MemoryError set). */
static int parse_line(const char *p, const char *end, Line *L, const Spec *S) {
    Cur cur = {p, end}, *c = &cur;
    int r, seen = 0;
    L->target.n = L->a0.n = L->text.n = L->fr.n = 0;
    ws(c);
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    for (;;) {
        const char *key;
        Py_ssize_t klen;
        if (member_key(c, &key, &klen)) return -1;
        int bit;
        if (KEY_IS("doc_id")) {
            bit = K_DOC_ID;
            const char *s = c->p;
            int is_int;
            if ((r = json_number(c, &is_int)) || !is_int) return -1;
            Py_ssize_t nd = c->p - s - (*s == '-');
            if (nd > 18) return -1;
            L->did = strtoll(s, NULL, 10);
        } else if (KEY_IS("doc")) {
            bit = K_DOC;
            if ((r = json_raw(c, &L->raw[3], &L->n_raw[3]))) return r;
        } else if (KEY_IS("target")) {
            bit = K_TARGET;
            if ((r = json_string(c, &L->target))) return r;
        } else if (KEY_IS("arguments")) {
            bit = K_ARGUMENTS;
            if ((r = parse_arguments(c, L))) return r;
        } else if (KEY_IS("resps")) {
            bit = K_RESPS;
            if ((r = parse_resps(c, L, S->take_first))) return r;
        } else if (KEY_IS("filtered_resps")) {
            bit = K_FILTERED;
            if ((r = one_string_array(c, &L->fr))) return r;
        } else if (KEY_IS("filter")) {
            bit = K_FILTER;
            L->tmp.n = 0;
            if ((r = json_string(c, &L->tmp))) return r;
            if (L->tmp.n != S->n_filter || memcmp(L->tmp.p ? L->tmp.p : "", S->filter, (size_t)S->n_filter))
                return -1;
        } else if (KEY_IS("metrics")) {
            bit = K_METRICS;
            if ((r = parse_metrics(c, L, S))) return r;
        } else if (KEY_IS("doc_hash")) {
            bit = K_DOC_HASH;
            if ((r = json_raw(c, &L->raw[0], &L->n_raw[0]))) return r;
        } else if (KEY_IS("prompt_hash")) {
            bit = K_PROMPT_HASH;
            if ((r = json_raw(c, &L->raw[1], &L->n_raw[1]))) return r;
        } else if (KEY_IS("target_hash")) {
            bit = K_TARGET_HASH;
            if ((r = json_raw(c, &L->raw[2], &L->n_raw[2]))) return r;
        } else if (klen == S->n_primary && !memcmp(key, S->primary, (size_t)klen)) {
            bit = K_PRIMARY;
            const char *s = c->p;
            int is_int;
            if ((r = json_number(c, &is_int))) return -1;
            Py_ssize_t nn = c->p - s;
            if ((nn == 3 && !memcmp(s, "1.0", 3)) || (nn == 1 && *s == '1')) {
                L->value = 1.0; /* the usual scores, without a conversion */
            } else if ((nn == 3 && !memcmp(s, "0.0", 3)) || (nn == 1 && *s == '0')) {
                L->value = 0.0;
            } else {
                char num[64];
                if (nn >= (Py_ssize_t)sizeof(num)) return -1;
                memcpy(num, s, (size_t)nn);
                num[nn] = 0;
                L->value = PyOS_string_to_double(num, NULL, NULL);
                if (L->value == -1.0 && PyErr_Occurred()) {
                    PyErr_Clear();
                    return -1;
                }
                if (Py_IS_INFINITY(L->value)) return -1; /* out of range: the decoders refuse */
            }
        } else if (is_other_metric(key, klen, S)) {
            bit = 0; /* kept by neither path: validated, skipped (a repeat is not caught) */
            if ((r = json_skip(c, 0))) return r;
        } else {
            return -1; /* a key the first line did not have */
        }
        if (seen & bit) return -1; /* a repeated key: the decoders' rule */
        seen |= bit;
        if ((r = next_member(c)) <= 0) {
            if (r < 0) return -1;
            break;
        }
    }
    ws(c);
    if (c->p != c->end || seen != K_ALL) return -1;
    return 0;
}

/* {role, content} of the one chat message logged in arg_0 (a JSON array, as text). */
static int parse_prompt(Line *L) {
    if (L->a0.n < 1 || L->a0.p[0] != '[') return -1;
    Cur cur = {L->a0.p, L->a0.p + L->a0.n}, *c = &cur;
    int r, got = 0;
    L->role.n = L->content.n = 0;
    c->p++;
    ws(c);
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == '}') return -1;
    for (;;) {
        const char *key;
        Py_ssize_t klen;
        if (member_key(c, &key, &klen)) return -1;
        if (KEY_IS("role")) {
            if (got & 1) return -1;
            got |= 1;
            if ((r = json_string(c, &L->role))) return r;
        } else if (KEY_IS("content")) {
            if (got & 2) return -1;
            got |= 2;
            if ((r = json_string(c, &L->content))) return r;
        } else if ((r = json_skip(c, 1))) {
            return r;
        }
        if ((r = next_member(c)) <= 0) {
            if (r < 0) return -1;
            break;
        }
    }
    if (got != 3) return -1;
    ws(c);
    if (c->p >= c->end || *c->p != ']') return -1; /* exactly one message */
    c->p++;
    ws(c);
    return c->p == c->end ? 0 : -1;
}

static inline int py_space(unsigned char ch) { /* str.isspace() of an ASCII character */
    return ch == ' ' || (ch >= 0x09 && ch <= 0x0D) || (ch >= 0x1C && ch <= 0x1F);
}

typedef struct {
    Buf P, R, J, ids, hashes, ok;
} Out;

/* The decimal digits of v (what str(int) gives), into out; their count. */
static int format_id(char *out, long long v) {
    char tmp[24];
    int n = 0, neg = v < 0;
    unsigned long long u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int k = 0;
    if (neg) out[k++] = '-';
    while (n) out[k++] = tmp[--n];
    return k;
}

/* Append one parsed line's records; 0, -1 (not taken), -2 (MemoryError). */
static int emit(Out *o, Line *L, const Spec *S, int first) {
    if (L->value > 0.0 && L->value < 1.0) return -1; /* a partial score */
    int correct = L->value >= 1.0;
    /* the extracted answer: str.strip(); a non-ASCII end may be Unicode whitespace */
    const char *x = L->fr.p ? L->fr.p : "";
    Py_ssize_t nx = L->fr.n;
    while (nx && py_space((unsigned char)x[0])) { x++; nx--; }
    while (nx && py_space((unsigned char)x[nx - 1])) nx--;
    if (!nx || (unsigned char)x[0] >= 0x80 || (unsigned char)x[nx - 1] >= 0x80) return -1;

    Buf *T = &L->scratch;
    T->n = 0;
    if (buf_add_json_str(T, L->content.p ? L->content.p : "", L->content.n)) return -2;
    Py_ssize_t c_end = T->n;
    if (buf_add_json_str(T, L->role.p ? L->role.p : "", L->role.n)) return -2;
    Py_ssize_t r_end = T->n;
    if (buf_add_json_str(T, L->target.p ? L->target.p : "", L->target.n)) return -2;
    const char *e_content = T->p, *e_role = T->p + c_end, *e_ref = T->p + r_end;
    Py_ssize_t ne_content = c_end, ne_role = r_end - c_end, ne_ref = T->n - r_end;

    Sha sha;
    sha_init(&sha);
    static const char h0[] = "{\"prompt\":[{\"content\":", h1[] = ",\"role\":",
                      h2[] = "}],\"reference\":", h3[] = "}";
    sha_update(&sha, h0, sizeof(h0) - 1);
    sha_update(&sha, e_content, (size_t)ne_content);
    sha_update(&sha, h1, sizeof(h1) - 1);
    sha_update(&sha, e_role, (size_t)ne_role);
    sha_update(&sha, h2, sizeof(h2) - 1);
    sha_update(&sha, e_ref, (size_t)ne_ref);
    sha_update(&sha, h3, sizeof(h3) - 1);
    char hex[64];
    sha_hex(&sha, hex);

    char id[32];
    int n_id = format_id(id, L->did);
    Buf *P = &o->P, *R = &o->R, *J = &o->J;
    if (ADD_LIT(P, "{\"problem_id\":\"") || buf_add(P, id, n_id) ||
        ADD_LIT(P, "\",\"prompt\":[{\"role\":") || buf_add(P, e_role, ne_role) ||
        ADD_LIT(P, ",\"content\":") || buf_add(P, e_content, ne_content) ||
        ADD_LIT(P, "}],\"reference\":") || buf_add(P, e_ref, ne_ref) ||
        ADD_LIT(P, ",\"reference_kind\":\"answer\",\"extras\":{\"doc_hash\":") ||
        buf_add(P, L->raw[0], L->n_raw[0]) || ADD_LIT(P, ",\"prompt_hash\":") ||
        buf_add(P, L->raw[1], L->n_raw[1]) || ADD_LIT(P, ",\"target_hash\":") ||
        buf_add(P, L->raw[2], L->n_raw[2]) || ADD_LIT(P, ",\"doc\":") ||
        buf_add(P, L->raw[3], L->n_raw[3]) || ADD_LIT(P, "},\"content_hash\":\"") ||
        buf_add(P, hex, 64) || ADD_LIT(P, "\"}\n"))
        return -2;
    if (ADD_LIT(R, "{\"problem_id\":\"") || buf_add(R, id, n_id) ||
        ADD_LIT(R, "\",\"index\":0,\"status\":\"ok\",\"text\":") ||
        buf_add_json_str(R, L->text.p ? L->text.p : "", L->text.n) ||
        ADD_LIT(R, ",\"attempt\":1,\"retries\":0}\n"))
        return -2;
    if (ADD_LIT(J, "{\"problem_id\":\"") || buf_add(J, id, n_id) ||
        ADD_LIT(J, "\",\"index\":0,\"status\":\"ok\",\"extracted\":") ||
        buf_add_json_str(J, x, nx) || ADD_LIT(J, ",\"correct\":") ||
        (correct ? ADD_LIT(J, "true") : ADD_LIT(J, "false")) ||
        ADD_LIT(J, ",\"cluster\":0,\"grader\":") || buf_add(J, S->grader, S->n_grader) ||
        ADD_LIT(J, "}\n"))
        return -2;
    if ((!first && ADD_LIT(&o->ids, "\n")) || buf_add(&o->ids, id, n_id) ||
        (!first && ADD_LIT(&o->hashes, "\n")) || buf_add(&o->hashes, hex, 64))
        return -2;
    char ok = (char)correct;
    if (buf_add(&o->ok, &ok, 1)) return -2;
    return 0;
}

static PyObject *convert_chunk(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer chunk;
    Spec S;
    if (!PyArg_ParseTuple(args, "y*y#y#O!py#", &chunk, &S.filter, &S.n_filter, &S.primary,
                          &S.n_primary, &PyList_Type, &S.metrics, &S.take_first, &S.grader,
                          &S.n_grader))
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(S.metrics); i++)
        if (!PyBytes_CheckExact(PyList_GET_ITEM(S.metrics, i))) {
            PyBuffer_Release(&chunk);
            PyErr_SetString(PyExc_TypeError, "metric names must be bytes");
            return NULL;
        }
    const char *p = chunk.buf, *end = p + chunk.len;
    /* the buffers stay allocated from call to call (no page faults on fresh memory) */
    static Line L;
    static Out o;
    o.P.n = o.R.n = o.J.n = o.ids.n = o.hashes.n = o.ok.n = 0;
    long long first_id = 0, last_id = 0;
    Py_ssize_t left_out = 0, most = 0, n = 0;
    int r = 0;
    PyObject *result = NULL;
    while (p <= end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        if ((r = parse_line(p, line_end, &L, &S)) || (r = parse_prompt(&L))) break;
        if (n > 0 && L.did <= last_id) { r = -1; break; } /* the line path checks the ids */
        if ((r = emit(&o, &L, &S, n == 0))) break;
        if (n == 0) first_id = L.did;
        last_id = L.did;
        left_out += L.repeats - 1;
        if (L.repeats > most) most = L.repeats;
        n++;
        if (!nl) break;
        p = nl + 1;
    }
    if (r == 0 && n > 0) {
        result = Py_BuildValue("(y#y#y#s#s#y#LLnn)", o.P.p, o.P.n, o.R.p, o.R.n, o.J.p, o.J.n,
                               o.ids.p, o.ids.n, o.hashes.p, o.hashes.n, o.ok.p, o.ok.n,
                               first_id, last_id, left_out, most);
    } else if (r == -2 || PyErr_Occurred()) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
    } else {
        result = Py_None;
        Py_INCREF(result);
    }
    PyBuffer_Release(&chunk);
    return result;
}

/* The members of a JSON object of string keys and values (None values left out), in the
 * given order, as orjson's OPT_INDENT_2 writes an object nested one level deep:
 * "{\n    \"k\": \"v\",\n ...\n  }", or "{}" when empty. */
static PyObject *indented_map(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *keys, *values, *order;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &keys, &PyList_Type, &values,
                          &PyList_Type, &order))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(order);
    /* pass 1: check, and the exact size (a member: 4 + 1 + key + 2 + value, escaped) */
    Py_ssize_t size = 2, written = 0;
    Buf scratch = {0};
    for (int pass = 0; pass < 2; pass++) {
        PyObject *out = NULL;
        char *o = NULL;
        if (pass == 1) {
            size = written ? size + 3 : 2; /* "\n  }" closes a non-empty object */
            out = PyBytes_FromStringAndSize(NULL, size);
            if (out == NULL) goto err;
            o = PyBytes_AS_STRING(out);
            *o++ = '{';
        }
        Py_ssize_t k_written = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t k = PyLong_AsSsize_t(PyList_GET_ITEM(order, i));
            if (k == -1 && PyErr_Occurred()) goto err_out;
            if (k < 0 || k >= PyList_GET_SIZE(keys) || k >= PyList_GET_SIZE(values)) {
                PyErr_SetString(PyExc_IndexError, "order holds a position outside the columns");
                goto err_out;
            }
            PyObject *v = PyList_GET_ITEM(values, k);
            if (v == Py_None) continue;
            Py_ssize_t nk, nv;
            const char *ks = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(keys, k), &nk);
            if (ks == NULL) goto err_out;
            const char *vs = PyUnicode_AsUTF8AndSize(v, &nv);
            if (vs == NULL) goto err_out;
            scratch.n = 0;
            if ((k_written && ADD_LIT(&scratch, ",")) || ADD_LIT(&scratch, "\n    ") ||
                buf_add_json_str(&scratch, ks, nk) || ADD_LIT(&scratch, ": ") ||
                buf_add_json_str(&scratch, vs, nv))
                goto err_out;
            k_written++;
            if (pass == 0) {
                size += scratch.n;
            } else {
                memcpy(o, scratch.p, (size_t)scratch.n);
                o += scratch.n;
            }
        }
        if (pass == 0) {
            written = k_written;
            continue;
        }
        if (written) {
            memcpy(o, "\n  }", 4);
        } else {
            *o = '}';
        }
        PyMem_Free(scratch.p);
        return out;
    err_out:
        Py_XDECREF(out);
        goto err;
    }
err:
    PyMem_Free(scratch.p);
    return NULL;
}

static PyMethodDef methods[] = {
    {"indented_map", indented_map, METH_VARARGS,
     "indented_map(keys, values, order) -> an object's JSON, as orjson indents it one level deep"},
    {"convert_chunk", convert_chunk, METH_VARARGS,
     "convert_chunk(chunk, filter, primary_metric, metrics, take_first, grader) -> packed "
     "records of every line, or None"},
    {"sha256_hex", sha256_hex, METH_O, "SHA-256 of a bytes-like object, as 64 hex digits."},
    {"json_str", json_str, METH_O, "A str as a JSON string (bytes), escaped as msgspec does."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_strict_c", "The lm-eval importer's column path in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__strict_c(void) { return PyModule_Create(&module); }
