# Augmenting declarations for translate.py (bench/compiled.py --variant typed only).
cimport cython


@cython.final
cdef class _Window:
    cdef public dict counts
    cdef public list items
    cdef public Py_ssize_t limit
    cpdef add(self, x)


@cython.final
cdef class _Translator:
    cdef public object source
    cdef public bint sub
    cdef public str stem
    cdef public dict st
    cdef public dict streams
    cdef public _Window recent
    cdef public dict seen
    cpdef line(self, dict v, list out)
    cpdef _chain_key(self, dict v, typ)
    cpdef _session(self, key, t)
    cpdef _prep(self, key, dict ss, t, list out, ran=*)
    cpdef _context(self, key, dict ss, t, list out)
    cpdef _instructions(self, key, dict ss, att, t, list out)
    cpdef _mode_line(self, dict v)
    cpdef _close(self, key, dict ss, list out)
    cpdef _Window _seen(self, key, dict ss)
    cpdef _assistant(self, key, dict ss, dict v, list out)
    cpdef _absorb(self, dict g, dict msg, dict v)
    cpdef _abort(self, key, dict ss, t, list out)
    cpdef _command(self, key, dict ss, text, t, list out)
    cpdef _system(self, key, dict ss, dict v, list out)
    cpdef _results(self, key, dict ss, dict v, list results, t, list out)
