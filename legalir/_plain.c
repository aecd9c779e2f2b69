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

static PyMethodDef methods[] = {
    {"groups", plain_groups, METH_VARARGS,
     "groups(data, start, end, qrels, lo, hi) -> ([(qid, {docid: value})], tag, last qid) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "legalir._plain",
                                    "The plain-file fast path of legalir.trec's readers, in C.", -1, methods};

PyMODINIT_FUNC PyInit__plain(void) { return PyModule_Create(&module); }
