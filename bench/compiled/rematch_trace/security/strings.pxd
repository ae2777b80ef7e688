# Augmenting declarations for strings.py (bench/compiled.py --variant typed only).
cimport cython


@cython.final
cdef class InputStrings:
    cdef public object _joined
    cdef public object limit
    cdef public object others
    cdef public object parts
    cdef public object taken
    cpdef joined(self)
    cpdef trigger_text(self)
    cpdef text(self)
