# Augmenting declarations for synth.py (bench/compiled.py --variant typed only).
cimport cython


@cython.final
cdef class Synthesizer:
    cdef public object _held_skills
    cdef public object _place_of
    cdef public object _prev_raw
    cdef public object _redact
    cdef public object _redact_input
    cdef public object _room
    cdef public object _visible_of
    cdef public object buffer
    cdef public object calls
    cdef public object counts
    cdef public object deliverable
    cdef public object first_model
    cdef public object flags
    cdef public object harness
    cdef public object held
    cdef public object held_due
    cdef public object held_kept
    cdef public object input_at
    cdef public object last_aborted
    cdef public object last_model
    cdef public object live
    cdef public object loaded
    cdef public object mode
    cdef public object prev_tokens
    cdef public object run_open
    cdef public object run_turns
    cdef public object seq
    cdef public object session
    cdef public object started
    cdef public object t
    cdef public object turn
    cdef public object visible
    cpdef state(self, held_out=*)
    cpdef _state_held_out(self)
    cpdef _saved(self, buffer, flags, held=*, held_skills=*)
    cpdef restore_held(self, tail)
    cpdef _record(self, at)
    cpdef _check_restored(self)
    cpdef _emit(self, record)
    cpdef _push(self, d)
    cpdef _flush(self, out)
    cpdef _flush_held(self, out)
    cpdef _settle(self, out)
    cpdef _start(self)
    cpdef feed(self, rec)
    cpdef _session(self, rec, out)
    cpdef digest_call(self, call)
    cpdef offer(self, entries)
    cpdef take_call(self, call_id, digested)
    cpdef _blocked(self, rec)
    cpdef finish(self, files_changed=*)
    cpdef _tool_result(self, rec)
    cpdef _assistant(self, rec)
    cpdef _close_turn(self)
    cpdef _turn_end(self, model, usage, stop_reason, text)
    cpdef _user(self, rec, out)
    cpdef _end_run(self)
    cpdef clean_text(self, text, limit)
    cpdef _clean(self, text, limit)
    cpdef prev_tokens_set(self)
    cpdef _skill(self, name)
    cpdef _loaded(self, rec)
