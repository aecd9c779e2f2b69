/* The fast path of legalir.trec's readers at C speed: plain TREC runs and qrels.
 *
 * groups(data, start, end, qrels) reads the lines of data[start:end] (whole lines)
 * and returns ([(qid, {docid: value}), ...], tag of the last line, qid of the last
 * line): one item per run of consecutive lines of one topic. It returns None, and
 * legalir.trec reads the piece in Python (with its notes and located errors), for
 * anything but a plain piece:
 *   - a byte outside ASCII, a NUL, or one of \x1c-\x1f (str.split() splits on those,
 *     C's isspace does not);
 *   - a line whose first field starts with '#', or with a field count other than
 *     6 (run: qid Q0 docid rank score tag) or 4 (qrels: qid iter docid rel);
 *   - a run score that Python's float() would not read whole, or NaN;
 *   - a qrels grade that is not [+-]digits or lies outside [lo, hi];
 *   - the same document twice in one run of lines of a topic.
 * Blank lines are skipped, as the Python readers skip them. Values are exactly
 * Python's float(field) (PyOS_string_to_double: the same correctly rounded
 * conversion) and int(field).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define MAX_FIELDS 6

static int is_c_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static PyObject* read_score(const char* s, Py_ssize_t n) {
    char buf[64];
    char* end = NULL;
    double v;
    if (n >= (Py_ssize_t) sizeof(buf)) return NULL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    v = PyOS_string_to_double(buf, &end, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (end != buf + n || isnan(v)) return NULL;
    return PyFloat_FromDouble(v);
}

static PyObject* read_grade(const char* s, Py_ssize_t n, long long lo, long long hi) {
    Py_ssize_t i = 0;
    int neg = 0;
    long long v = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n || n - i > 18) return NULL;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return NULL;
        v = v * 10 + (s[i] - '0');
    }
    if (neg) v = -v;
    if (v < lo || v > hi) return NULL;
    return PyLong_FromLongLong(v);
}

static PyObject* plain_groups(PyObject* self, PyObject* args) {
    Py_buffer view;
    Py_ssize_t start, end;
    int qrels;
    long long lo, hi;
    if (!PyArg_ParseTuple(args, "y*nnpLL", &view, &start, &end, &qrels, &lo, &hi)) return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "bad range");
        return NULL;
    }
    const char* data = (const char*) view.buf;
    const int ncols = qrels ? 4 : 6;
    const int value_col = qrels ? 3 : 4;
    PyObject* groups = PyList_New(0);
    PyObject* docs = NULL;       /* the current group's dict */
    PyObject* qid_obj = NULL;    /* the current group's qid (borrowed from its tuple) */
    const char* cur_qid = NULL;  /* the current group's qid bytes */
    Py_ssize_t cur_qid_len = 0;
    const char* tag = NULL;
    Py_ssize_t tag_len = 0;
    int ok = groups != NULL;
    Py_ssize_t pos = start;

    while (ok && pos < end) {
        const char* f[MAX_FIELDS];
        Py_ssize_t fl[MAX_FIELDS];
        int nf = 0;
        /* one line: fields separated by C's whitespace, up to the newline */
        for (;;) {
            while (pos < end && data[pos] != '\n' && is_c_space((unsigned char) data[pos])) pos++;
            if (pos >= end || data[pos] == '\n') break;
            Py_ssize_t b = pos;
            while (pos < end && !is_c_space((unsigned char) data[pos])) {
                unsigned char c = (unsigned char) data[pos];
                if (c >= 0x80 || c == 0 || (c >= 0x1c && c <= 0x1f)) {
                    ok = 0;
                    break;
                }
                pos++;
            }
            if (!ok) break;
            if (nf == ncols) {
                ok = 0;
                break;
            }
            f[nf] = data + b;
            fl[nf] = pos - b;
            nf++;
        }
        if (!ok) break;
        pos++; /* past the newline */
        if (nf == 0) continue; /* blank line */
        if (nf != ncols || f[0][0] == '#') {
            ok = 0;
            break;
        }
        PyObject* value = qrels ? read_grade(f[value_col], fl[value_col], lo, hi)
                                : read_score(f[value_col], fl[value_col]);
        if (value == NULL) {
            ok = 0;
            break;
        }
        if (cur_qid == NULL || fl[0] != cur_qid_len || memcmp(f[0], cur_qid, fl[0]) != 0) {
            qid_obj = PyUnicode_DecodeASCII(f[0], fl[0], NULL);
            docs = PyDict_New();
            PyObject* item = (qid_obj && docs) ? PyTuple_Pack(2, qid_obj, docs) : NULL;
            Py_XDECREF(qid_obj);
            Py_XDECREF(docs);
            if (item == NULL || PyList_Append(groups, item) < 0) {
                Py_XDECREF(item);
                Py_DECREF(value);
                ok = 0;
                break;
            }
            Py_DECREF(item); /* the list holds the tuple, the tuple holds qid_obj and docs */
            cur_qid = f[0];
            cur_qid_len = fl[0];
        }
        PyObject* docid = PyUnicode_DecodeASCII(f[2], fl[2], NULL);
        Py_ssize_t before = PyDict_GET_SIZE(docs);
        if (docid == NULL || PyDict_SetItem(docs, docid, value) < 0 || PyDict_GET_SIZE(docs) == before) {
            Py_XDECREF(docid);
            Py_DECREF(value);
            ok = 0; /* a duplicate document (or out of memory): the Python reader says which */
            break;
        }
        Py_DECREF(docid);
        Py_DECREF(value);
        if (!qrels) {
            tag = f[5];
            tag_len = fl[5];
        }
    }
    PyBuffer_Release(&view);
    if (!ok || groups == NULL || cur_qid == NULL) {
        Py_XDECREF(groups);
        if (PyErr_Occurred()) PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject* tag_obj = tag ? PyUnicode_DecodeASCII(tag, tag_len, NULL) : PyUnicode_FromString("");
    PyObject* result = tag_obj ? Py_BuildValue("(NNO)", groups, tag_obj, qid_obj) : NULL;
    if (result == NULL) Py_DECREF(groups);
    return result;
}

/* ------------------------------------------------------------------ snippets (legalir.serve.display)
 *
 * hit_words(raw, prefixes, forms) reads raw, the bytes of an ASCII text (a character outside ASCII is one
 * byte of another value), as words: maximal runs of ASCII letters and digits. It returns (count, starts, at):
 * the number of words, and, in order, the byte offset and the word position of each word that starts with
 * one of prefixes (bytes, lower case) and whose lower case is in forms (a set of str). What
 * legalir.serve.display._hit_starts and the counting that follows it find, in one pass.
 *
 * ascii_words(text) is whether no character of text outside ASCII is a letter or digit (str.isalnum, what
 * the regular expression [^\W_] matches outside ASCII): a text that legalir.serve.display reads as bytes.
 */
static int is_word_byte(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static unsigned char lower_byte(unsigned char c) { return (c >= 'A' && c <= 'Z') ? (unsigned char) (c + 32) : c; }

static PyObject* plain_hit_words(PyObject* self, PyObject* args) {
    Py_buffer view;
    PyObject *prefixes, *forms;
    if (!PyArg_ParseTuple(args, "y*O!O", &view, &PyTuple_Type, &prefixes, &forms)) return NULL;
    if (!PyAnySet_Check(forms)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "forms must be a set or frozenset");
        return NULL;
    }
    Py_ssize_t np = PyTuple_GET_SIZE(prefixes);
    for (Py_ssize_t j = 0; j < np; j++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(prefixes, j))) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "prefixes must be bytes");
            return NULL;
        }
    }
    const unsigned char* d = (const unsigned char*) view.buf;
    const Py_ssize_t n = view.len;
    unsigned char opens[256] = {0}; /* the first bytes of the prefixes: the words worth comparing */
    for (Py_ssize_t j = 0; j < np; j++) {
        PyObject* p = PyTuple_GET_ITEM(prefixes, j);
        if (PyBytes_GET_SIZE(p) == 0) memset(opens, 1, sizeof(opens));
        else opens[(unsigned char) PyBytes_AS_STRING(p)[0]] = 1;
    }
    PyObject* starts = PyList_New(0);
    PyObject* at = PyList_New(0);
    Py_ssize_t count = 0, pos = 0;
    int ok = starts != NULL && at != NULL;
    while (ok && pos < n) {
        while (pos < n && !is_word_byte(d[pos])) pos++;
        if (pos >= n) break;
        const Py_ssize_t s = pos;
        while (pos < n && is_word_byte(d[pos])) pos++;
        const Py_ssize_t len = pos - s;
        int candidate = 0;
        for (Py_ssize_t j = opens[lower_byte(d[s])] ? 0 : np; j < np && !candidate; j++) {
            PyObject* p = PyTuple_GET_ITEM(prefixes, j);
            const Py_ssize_t plen = PyBytes_GET_SIZE(p);
            const unsigned char* pb = (const unsigned char*) PyBytes_AS_STRING(p);
            if (plen > len) continue;
            Py_ssize_t i = 0;
            while (i < plen && lower_byte(d[s + i]) == pb[i]) i++;
            candidate = i == plen;
        }
        if (candidate) {
            PyObject* word = PyUnicode_New(len, 127);
            if (word == NULL) {
                ok = 0;
                break;
            }
            Py_UCS1* w = PyUnicode_1BYTE_DATA(word);
            for (Py_ssize_t i = 0; i < len; i++) w[i] = lower_byte(d[s + i]);
            int found = PySet_Contains(forms, word);
            Py_DECREF(word);
            if (found < 0) {
                ok = 0;
                break;
            }
            if (found) {
                PyObject* a = PyLong_FromSsize_t(s);
                PyObject* b = PyLong_FromSsize_t(count);
                ok = a != NULL && b != NULL && PyList_Append(starts, a) == 0 && PyList_Append(at, b) == 0;
                Py_XDECREF(a);
                Py_XDECREF(b);
            }
        }
        count++;
    }
    PyBuffer_Release(&view);
    if (!ok) {
        Py_XDECREF(starts);
        Py_XDECREF(at);
        return NULL;
    }
    return Py_BuildValue("(nNN)", count, starts, at);
}

static PyObject* plain_ascii_words(PyObject* self, PyObject* text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "ascii_words takes a str");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return NULL; /* always ready from 3.12 on */
#endif
    const int kind = PyUnicode_KIND(text);
    const void* data = PyUnicode_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_IS_ASCII(text)) Py_RETURN_TRUE;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > 127 && Py_UNICODE_ISALNUM(c)) Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* word_span(raw, start, first, last) -> (offset where word first starts, offset where word last ends), the words
 * read from byte start on (the first may begin inside a word, as a regular expression's search from start finds
 * it) and counted from 0; -1 for a word that raw does not have. */
static PyObject* plain_word_span(PyObject* self, PyObject* args) {
    Py_buffer view;
    Py_ssize_t pos, first, last;
    if (!PyArg_ParseTuple(args, "y*nnn", &view, &pos, &first, &last)) return NULL;
    const unsigned char* d = (const unsigned char*) view.buf;
    const Py_ssize_t n = view.len;
    Py_ssize_t word = 0, first_at = -1, last_end = -1;
    if (pos < 0) pos = 0;
    while (pos < n && word <= last) {
        while (pos < n && !is_word_byte(d[pos])) pos++;
        if (pos >= n) break;
        if (word == first) first_at = pos;
        while (pos < n && is_word_byte(d[pos])) pos++;
        if (word == last) last_end = pos;
        word++;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(nn)", first_at, last_end);
}

static PyMethodDef methods[] = {
    {"word_span", plain_word_span, METH_VARARGS,
     "word_span(raw, start, first, last) -> (start of word first, end of word last) from byte start; -1: none"},
    {"hit_words", plain_hit_words, METH_VARARGS,
     "hit_words(raw, prefixes, forms) -> (words, [byte offset of each hit word], [its word position])"},
    {"ascii_words", plain_ascii_words, METH_O,
     "ascii_words(text) -> whether no character of text outside ASCII is a letter or digit"},
    {"groups", plain_groups, METH_VARARGS,
     "groups(data, start, end, qrels, lo, hi) -> ([(qid, {docid: value})], tag, last qid) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "legalir._plain",
                                    "The plain-file fast path of legalir.trec's readers, and legalir.serve.display's word counting, in C.", -1, methods};

PyMODINIT_FUNC PyInit__plain(void) { return PyModule_Create(&module); }
