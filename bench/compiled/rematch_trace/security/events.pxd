# Augmenting declarations for events.py (bench/compiled.py --variant typed only).
cimport cython


@cython.final
cdef class EventSink:
    cdef public object _fingerprint
    cdef public object _id_hash
    cdef public object _min_ms
    cdef public object _min_text
    cdef public object _t_ms
    cdef public object _t_text
    cdef public object _template
    cdef public object agent
    cdef public object agent_sub_id
    cdef public object calls
    cdef public object cwd
    cdef public object host
    cdef public object mode
    cdef public object n
    cdef public object redactor
    cdef public object repo_root
    cdef public object session
    cdef public object source
    cdef public object source_session_id
    cdef public object started
    cdef public object t
    cdef public object turn
    cpdef state(self)
    cpdef _event(self, kind, turn, call_id, tool, action, summary, features, redactions, cut, fingerprint, metadata)
    cpdef _set_time(self, t)
    cpdef _start(self, out)
    cpdef _redact(self, text)
    cpdef feed(self, rec)
    cpdef finish(self)
    cpdef _pre(self, call)
    cpdef digest_call(self, call)
    cpdef take_call(self, call_id, entry)
    cpdef forget_call(self, call_id)
    cpdef pre_event(self, call_id, entry)
    cpdef _post(self, rec)
